// Rill's channels and go blocks, timed in two ways that bench/peers/csp_test.go repeats
// in Go (bench/csp_compare.py runs both and prints the ratios):
//  - BM_Chan_*: the channel API called directly from tasks of the core scheduler;
//  - BM_Prog_*: the same scenario as a program (examples/csp/scenarios.h) run by the
//    executor, ops, while loops and all.
// Per-op figures: a round trip (ping-pong), a message (producer/consumer), a whole chain
// (daisy chain), a go block started and finished (spawn). Real time throughout: the work
// runs on the scheduler's worker threads.
#include <benchmark/benchmark.h>

#include <atomic>
#include <functional>
#include <memory>

#include "bench_util.h"
#include "channel.h"
#include "core/abi/host_api.h"
#include "core/runtime/executor.h"
#include "core/runtime/variable.h"
#include "core/tasks/scheduler.h"
#include "scenarios.h"
#include "select.h"

namespace rill::bench {
namespace {

using csp::Channel;
constexpr int32_t kLodTensor = 7;

// The daisy chains and the programs run once untimed before they are timed. Go's testing
// runs a benchmark with b.N = 1 first and reports a later, larger run, so Go's figures are
// of warm memory; Google Benchmark (1.7) reports its first run when that alone outlasts
// the minimum time, so a chain of 100,000 measured first in its process paid the first
// touches of 100,000 task stacks (~400 MB) on our side only (2.9x Go, against 1.0x warm).

RillVariable* H(core::Variable& v) { return reinterpret_cast<RillVariable*>(&v); }

void InTasks(const std::function<void()>& main) {
  ::rill::detail::HostSlot() = core::HostApiTable();
  core::RunTasks(core::SchedulerOptions{}, main);
}

// Moves the value, as channel_send does by default.
void Send(Channel& ch, core::Variable& v) { ch.Send(rill::Variable(H(v)), /*copy=*/false, nullptr, "bench send"); }
// Sends a copy: a producer that keeps its value (each message allocates a tensor).
void SendCopy(Channel& ch, core::Variable& v) { ch.Send(rill::Variable(H(v)), /*copy=*/true, nullptr, "bench send"); }
bool Recv(Channel& ch, core::Variable& v) { return ch.Recv(rill::Variable(H(v)), nullptr, "bench recv"); }

core::Variable One() {
  core::Variable v;
  *static_cast<int64_t*>(v.GetMutableTensor()->Allocate(RILL_INT64, {1})) = 1;
  return v;
}

// ---- the channel API, directly -----------------------------------------------------------

// The main task's side of a ping-pong: one timed round trip per iteration.
void TimeRoundTrips(benchmark::State& state, Channel& ping, Channel& pong) {
  core::Variable ball = One();
  for (auto _ : state) {
    Send(ping, ball);
    Recv(pong, ball);
  }
}

void BM_Chan_PingPong(benchmark::State& state) {
  InTasks([&] {
    auto ping = Channel::Make(kLodTensor, 0);
    auto pong = Channel::Make(kLodTensor, 0);
    core::SpawnTask(
        [ping, pong] {
          core::Variable v;
          while (Recv(*ping, v)) Send(*pong, v);
        },
        nullptr);
    TimeRoundTrips(state, *ping, *pong);
    ping->Close();
  });
}
BENCHMARK(BM_Chan_PingPong)->UseRealTime();

void BM_Chan_SelectPingPong(benchmark::State& state) {
  InTasks([&] {
    auto ping = Channel::Make(kLodTensor, 0);
    auto pong = Channel::Make(kLodTensor, 0);
    auto quit = Channel::Make(kLodTensor, 0);
    core::SpawnTask(
        [ping, pong, quit] {
          core::Variable v, stop;
          const std::vector<csp::SelectCase> cases = {{csp::SelectCase::kRecv, ping.get(), H(v)},
                                                      {csp::SelectCase::kRecv, quit.get(), H(stop)}};
          while (csp::RunSelect(cases, nullptr, "bench select") == 0) Send(*pong, v);
        },
        nullptr);
    TimeRoundTrips(state, *ping, *pong);
    quit->Close();
  });
}
BENCHMARK(BM_Chan_SelectPingPong)->UseRealTime();

void BM_Chan_ProdCons(benchmark::State& state) {
  InTasks([&] {
    auto ch = Channel::Make(kLodTensor, state.range(0));
    core::SpawnTask(
        [ch] {
          core::Variable v = One();
          // Until the main task ends: the send it waits in then fails as cancelled, with the
          // SDK's error (the channel is plugin code), which must not leave the task.
          try {
            for (;;) SendCopy(*ch, v);
          } catch (const rill::Error& e) {
            if (e.code() != RILL_CANCELLED) throw;
          }
        },
        nullptr);
    core::Variable got;
    for (auto _ : state) Recv(*ch, got);
  });
}
BENCHMARK(BM_Chan_ProdCons)->Arg(0)->Arg(1)->Arg(100)->UseRealTime();

void BM_Chan_DaisyChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto chain = [n] {
    auto leftmost = Channel::Make(kLodTensor, 0);
    auto left = leftmost;
    for (int64_t i = 0; i < n; ++i) {
      auto right = Channel::Make(kLodTensor, 0);
      core::SpawnTask(
          [left, right] {
            core::Variable v;
            Recv(*right, v);
            ++*v.GetMutableTensor()->data_as<int64_t>();
            Send(*left, v);
          },
          nullptr);
      left = right;
    }
    core::Variable start = One(), result;
    Send(*left, start);
    Recv(*leftmost, result);
    benchmark::DoNotOptimize(*result.GetTensor()->data_as<int64_t>());
  };
  InTasks([&] {
    chain();  // untimed: see the note at the top
    for (auto _ : state) chain();
  });
}
BENCHMARK(BM_Chan_DaisyChain)->Arg(10000)->Arg(100000)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Chan_Spawn(benchmark::State& state) {
  // Outlives the run, not just the main task: the last block may still be leaving Send
  // (unlocking the channel) when the main task has its value and returns.
  std::shared_ptr<Channel> done;
  InTasks([&] {
    done = Channel::Make(kLodTensor, 1);
    std::atomic<int64_t> left{0};
    // The blocks borrow `done` and `left`, as Go's closures do: shared_ptr copies would add
    // four atomic updates a block that Go's benchmark does not make. No block touches
    // `left` after the last decrement, which precedes the send the main task waits for.
    Channel* signal = done.get();
    std::atomic<int64_t>* count = &left;
    core::Variable token;
    for (auto _ : state) {
      // One go block per iteration; the last of each batch of 1000 signals `done`.
      left.store(1000);
      for (int i = 0; i < 1000; ++i) {
        core::SpawnTask(
            [signal, count] {
              if (count->fetch_sub(1) == 1) {
                core::Variable v = One();
                Send(*signal, v);
              }
            },
            nullptr);
      }
      Recv(*done, token);
    }
    state.SetItemsProcessed(state.iterations() * 1000);
  });
}
BENCHMARK(BM_Chan_Spawn)->UseRealTime();

// Go's BenchmarkSpawnSend, the peer of the program's spawn row (examples::SpawnMany):
// each block sends one value on a channel buffering the batch; the main task receives it.
void BM_Chan_SpawnSend(benchmark::State& state) {
  std::shared_ptr<Channel> done;  // outlives the run, as in BM_Chan_Spawn
  InTasks([&] {
    done = Channel::Make(kLodTensor, 1000);
    Channel* signal = done.get();
    core::Variable got;
    for (auto _ : state) {
      for (int i = 0; i < 1000; ++i) {
        core::SpawnTask(
            [signal] {
              core::Variable v = One();
              Send(*signal, v);
            },
            nullptr);
      }
      int64_t count = 0;
      for (int i = 0; i < 1000; ++i) {
        Recv(*done, got);
        count += *got.GetTensor()->data_as<int64_t>();
      }
      if (count != 1000) state.SkipWithError("a batch lost a value");
    }
    state.SetItemsProcessed(state.iterations() * 1000);
  });
}
BENCHMARK(BM_Chan_SpawnSend)->UseRealTime();

// ---- the same scenarios as programs run by the executor --------------------------------

// Runs `pb`'s block 0 once per iteration, in a fresh scope, as the main task; `per_run` ops
// (round trips, messages, go blocks) happen in each run.
void RunProgram(benchmark::State& state, const core::ProgramBuilder& pb, int64_t per_run) {
  auto program = std::make_shared<const proto::ProgramDesc>(pb.Build());
  core::Executor executor(LoadedRegistry(), program);
  const auto run = [&] {
    auto scope = core::Scope::NewRoot();
    core::RunTasks(core::SchedulerOptions{}, [&] { executor.Run(0, scope); });
  };
  run();  // untimed: see the note at the top
  for (auto _ : state) run();
  state.SetItemsProcessed(state.iterations() * per_run);
}

// Round trips, messages or go blocks per program run. Each run starts and stops a
// scheduler and its workers, as `rill run` does (BM_Prog_Start); at 200,000 that start is
// a couple of nanoseconds an op, as Go's runtime start is nothing per op in Go's figures.
constexpr int64_t kRounds = 200000;

// A run of a one-op program: what starting and stopping the scheduler costs a run.
void BM_Prog_Start(benchmark::State& state) {
  core::ProgramBuilder pb;
  pb.block(0)
      .Op("fill_constant")
      .Output("Out", "x")
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("dtype", int64_t{RILL_INT64})
      .Attr("value", 1.0f);
  RunProgram(state, pb, 1);
}
BENCHMARK(BM_Prog_Start)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Prog_PingPong(benchmark::State& state) { RunProgram(state, examples::PingPong(kRounds, false), kRounds); }
BENCHMARK(BM_Prog_PingPong)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Prog_SelectPingPong(benchmark::State& state) { RunProgram(state, examples::PingPong(kRounds, true), kRounds); }
BENCHMARK(BM_Prog_SelectPingPong)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Prog_ProdCons(benchmark::State& state) {
  RunProgram(state, examples::ProducerConsumer(kRounds, state.range(0)), kRounds);
}
BENCHMARK(BM_Prog_ProdCons)->Arg(0)->Arg(1)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Prog_DaisyChain(benchmark::State& state) { RunProgram(state, examples::DaisyChain(state.range(0)), 1); }
BENCHMARK(BM_Prog_DaisyChain)->Arg(10000)->Arg(100000)->UseRealTime()->Unit(benchmark::kMillisecond);

// Batches of 1000, as BM_Chan_Spawn and Go's BenchmarkSpawn: at most 1000 blocks alive.
void BM_Prog_Spawn(benchmark::State& state) { RunProgram(state, examples::SpawnMany(kRounds, 1000), kRounds); }
BENCHMARK(BM_Prog_Spawn)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rill::bench

BENCHMARK_MAIN();
