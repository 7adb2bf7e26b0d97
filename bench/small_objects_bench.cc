// The small-object pages (core/runtime/small_objects.h) against their peer, glibc's malloc
// and free, in the patterns go blocks make: a thread churning one size (a loop step's
// value), a chain growing to N objects and unwinding (a daisy chain's scopes, variable
// entries, buffers and tasks), and objects made on one thread and freed on another (a
// spawned block's scope, freed by the worker that ran it). Both sides run in the same
// process, so `--benchmark_filter=Grow` gives their ratio on one machine state:
//   build/bin/rill_bench_small_objects --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <thread>
#include <vector>

#include "core/cli/malloc_tuning.h"
#include "core/runtime/small_objects.h"

namespace rill::bench {
namespace {

struct Small {
  static void* Allocate(size_t bytes) { return core::AllocateSmall(bytes); }
  static void Free(void* p, size_t bytes) { core::FreeSmall(p, bytes); }
};
struct Malloc {
  static void* Allocate(size_t bytes) { return std::malloc(bytes); }
  static void Free(void* p, size_t) { std::free(p); }
};

// A chain block's objects, by size (sizeof with its shared_ptr control block where it has
// one): two scopes (184), six variable entries (168), two scalars' buffers (176), a task (208).
constexpr size_t kBlockSizes[] = {184, 168, 168, 168, 184, 168, 168, 168, 176, 176, 208};

template <class A> void BM_Churn(benchmark::State& state) {
  for (auto _ : state) {
    void* p = A::Allocate(168);
    benchmark::DoNotOptimize(p);
    A::Free(p, 168);
  }
  state.SetItemsProcessed(state.iterations());
}

// Grows to range(0) blocks' objects, touching each as a constructor would, then frees them
// oldest first, as a chain's blocks end from its start.
template <class A> void BM_Grow(benchmark::State& state) {
  const auto blocks = static_cast<size_t>(state.range(0));
  std::vector<std::pair<void*, size_t>> live;
  live.reserve(blocks * std::size(kBlockSizes));
  for (auto _ : state) {
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t bytes : kBlockSizes) {
        auto* p = static_cast<char*>(A::Allocate(bytes));
        p[0] = 1;
        p[bytes - 1] = 1;
        live.emplace_back(p, bytes);
      }
    }
    for (auto [p, bytes] : live) A::Free(p, bytes);
    live.clear();
  }
  state.SetItemsProcessed(state.iterations() * blocks * std::size(kBlockSizes));
}

// This thread allocates batches of 1000 objects; another frees each batch as it arrives.
template <class A> void BM_CrossThread(benchmark::State& state) {
  constexpr size_t kBatch = 1000, kBytes = 184;
  std::atomic<std::vector<void*>*> handed{nullptr};
  std::atomic<bool> stop{false};
  std::thread freer([&] {
    while (!stop.load(std::memory_order_acquire)) {
      if (std::vector<void*>* batch = handed.load(std::memory_order_acquire)) {
        for (void* p : *batch) A::Free(p, kBytes);
        delete batch;
        handed.store(nullptr, std::memory_order_release);
      }
    }
  });
  for (auto _ : state) {
    auto* batch = new std::vector<void*>;
    batch->reserve(kBatch);
    for (size_t i = 0; i < kBatch; ++i) {
      auto* p = static_cast<char*>(A::Allocate(kBytes));
      p[0] = 1;
      batch->push_back(p);
    }
    while (handed.load(std::memory_order_acquire) != nullptr) {}
    handed.store(batch, std::memory_order_release);
  }
  while (handed.load(std::memory_order_acquire) != nullptr) {}
  stop.store(true, std::memory_order_release);
  freer.join();
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// glibc as `rill run` sets it (fast bins off), so both sides run as under a program.
const bool kTuned = [] {
  core::ApplyMallocTuning(core::MallocTuning::kTuned);
  return true;
}();

BENCHMARK(BM_Churn<Small>);
BENCHMARK(BM_Churn<Malloc>);
BENCHMARK(BM_Grow<Small>)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Grow<Malloc>)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CrossThread<Small>)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CrossThread<Malloc>)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill::bench

BENCHMARK_MAIN();
