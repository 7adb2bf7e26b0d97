// Executor dispatch cost: a block of N `increment` ops on one scalar, run by the executor,
// against the same N increments done by direct (non-inlined) calls on the tensor's memory.
// items/s counts ops; the difference in ns/op is the executor's overhead (kernel lookup,
// crossing the C ABI into the plugin and back). N = 10,000 does not fit in cache, so
// N = 100 is also run to show the dispatch cost with a cache-resident block.
// Each runs with math's `increment` and with a third party's counter of the same contract
// (bench/third_party_counter_plugin.cc), loaded from its own file: a plugin's own small op
// must run as fast as the shipped one.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "core/loader/plugin_loader.h"
#include "core/program/builder.h"
#include "core/program/validate.h"
#include "core/runtime/executor.h"

namespace rill::core {
namespace {

// The shipped plugins and the third party's counter.
Registry& LoadedRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    LoadPlugins(*r, LoadOptions{{RILL_PLUGIN_DIR}, {RILL_THIRD_PARTY_PLUGIN}, {}});
    return r;
  }();
  return *registry;
}

constexpr char kMath[] = "increment";
constexpr char kThirdParty[] = "third_party_counter";

template <const char* kCounter> void BM_ExecutorIncrement(benchmark::State& state) {
  const int64_t kOps = state.range(0);
  ProgramBuilder pb;
  for (int i = 0; i < kOps; ++i) pb.block(0).Op(kCounter).Input("X", "x").Output("Out", "x");
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  ValidateProgramOrThrow(*program, LoadedRegistry());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  scope->Var("x")->GetMutableTensor()->Allocate(RILL_FP32, {1});
  *scope->FindVar("x")->GetMutableTensor()->data_as<float>() = 0;
  exec.Run(0, scope);  // prepare and choose kernels outside the timed loop
  for (auto _ : state) exec.Run(0, scope);
  benchmark::DoNotOptimize(*scope->FindVar("x")->GetTensor()->data_as<float>());
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_ExecutorIncrement<kMath>)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExecutorIncrement<kThirdParty>)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

// Block 0 of `pb` as `i = 0; <zeroed> = 0; while i < n { i = counter(i); c = i < n }`, the
// loop Fluid writes for `for i in range(n)`; returns the loop's body, for more ops.
BlockBuilder& CountedLoop(ProgramBuilder& pb, int64_t steps, const char* counter,
                          std::initializer_list<const char*> zeroed = {}) {
  auto& main = pb.block(0);
  auto& body = pb.NewBlock(0);
  std::vector<std::pair<const char*, float>> fills{{"i", 0.0f}, {"n", static_cast<float>(steps)}};
  for (const char* name : zeroed) fills.emplace_back(name, 0.0f);
  for (const auto& [name, value] : fills) {
    main.Op("fill_constant")
        .Output("Out", name)
        .Attr("shape", std::vector<int64_t>{1})
        .Attr("dtype", int64_t{RILL_INT64})
        .Attr("value", value);
  }
  main.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  main.Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Op(counter).Input("X", "i").Output("Out", "i");
  body.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  return body;
}

// Runs `pb`'s block 0 (a loop of `steps` steps) once to prepare it, then timed; items/s
// counts steps.
void RunLoopProgram(benchmark::State& state, const ProgramBuilder& pb, int64_t steps) {
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  ValidateProgramOrThrow(*program, LoadedRegistry());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  for (auto _ : state) exec.Run(0, scope);
  state.SetItemsProcessed(state.iterations() * steps);
}

// A counted loop: ns/step is what a loop costs around its body (the `while` step, the run
// of its block, the counter's increment and compare).
template <const char* kCounter> void BM_ExecutorCountedLoop(benchmark::State& state) {
  ProgramBuilder pb;
  CountedLoop(pb, state.range(0), kCounter);
  RunLoopProgram(state, pb, state.range(0));
}
BENCHMARK(BM_ExecutorCountedLoop<kMath>)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExecutorCountedLoop<kThirdParty>)->Arg(10000)->Unit(benchmark::kMicrosecond);

// The counted loop with a branch in its body, as Fluid writes `if i < n: j += 1` inside
// `for i in range(n)`: a conditional_block whose sub-block runs on the step's variables
// every step (what a sub-block run costs: Executor::RunSubBlock).
void BM_ExecutorLoopWithBranch(benchmark::State& state) {
  ProgramBuilder pb;
  BlockBuilder& body = CountedLoop(pb, state.range(0), kMath, {"j"});
  BlockBuilder& then = pb.NewBlock(body.idx());
  body.Op("conditional_block").Input("Cond", "c").Attr("is_scalar_condition", true).BlockAttr("sub_block", then.idx());
  then.Op("increment").Input("X", "j").Output("Out", "j");
  RunLoopProgram(state, pb, state.range(0));
}
BENCHMARK(BM_ExecutorLoopWithBranch)->Arg(10000)->Unit(benchmark::kMicrosecond);

__attribute__((noinline)) void IncrementDirect(Tensor& x, float step) {
  *x.data_as<float>() += step;
  benchmark::ClobberMemory();
}

void BM_DirectIncrement(benchmark::State& state) {
  const int64_t kOps = state.range(0);
  Tensor x;
  x.Allocate(RILL_FP32, {1});
  *x.data_as<float>() = 0;
  for (auto _ : state) {
    for (int i = 0; i < kOps; ++i) IncrementDirect(x, 1.0f);
  }
  benchmark::DoNotOptimize(*x.data_as<float>());
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(BM_DirectIncrement)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill::core

BENCHMARK_MAIN();
