// Math kernels through Rill (a one-op program run by the executor, kernel in the math
// plugin) against their peers in the same run:
//   elementwise_add, 16M fp32: raw Eigen (the same expression on the same buffers) and
//     memcpy (bandwidth limit; bytes = read + write);
//   mul 1024x1024x1024 fp32: raw Eigen GEMM on the same row-major maps.
// Report bytes/s (elementwise) and FLOP/s (GEMM); compare the ratios in PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstring>

#include "bench/bench_util.h"
#include "core/program/builder.h"
#include "core/program/validate.h"
#include "core/runtime/executor.h"

namespace rill::core {
namespace {

constexpr int64_t kElems = 16 << 20;
constexpr int64_t kN = 1024;

using bench::LoadedRegistry;

void FillTensor(Scope& scope, const std::string& name, std::vector<int64_t> dims, float v) {
  Tensor* t = scope.Var(name)->GetMutableTensor();
  t->Allocate(RILL_FP32, dims);
  std::fill(t->data_as<float>(), t->data_as<float>() + t->numel(), v);
}

// A one-op program `type(X=x, Y=y) -> Out=z`, prepared and run once before timing.
struct OneOp {
  OneOp(const std::string& type, std::vector<int64_t> xd, std::vector<int64_t> yd) {
    ProgramBuilder pb;
    pb.block(0).Op(type).Input("X", "x").Input("Y", "y").Output("Out", "z");
    auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
    ValidateProgramOrThrow(*program, LoadedRegistry());
    exec = std::make_unique<Executor>(LoadedRegistry(), program);
    FillTensor(*scope, "x", xd, 1.0f);
    FillTensor(*scope, "y", yd, 2.0f);
    exec->Run(0, scope);
  }
  std::shared_ptr<Scope> scope = Scope::NewRoot();
  std::unique_ptr<Executor> exec;
};

void BM_RillElementwiseAdd(benchmark::State& state) {
  OneOp op("elementwise_add", {kElems}, {kElems});
  for (auto _ : state) op.exec->Run(0, op.scope);
  state.SetBytesProcessed(state.iterations() * kElems * 3 * sizeof(float));
}
BENCHMARK(BM_RillElementwiseAdd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EigenAdd(benchmark::State& state) {
  Tensor x, y, z;
  x.Allocate(RILL_FP32, {kElems});
  y.Allocate(RILL_FP32, {kElems});
  z.Allocate(RILL_FP32, {kElems});
  std::fill(x.data_as<float>(), x.data_as<float>() + kElems, 1.0f);
  std::fill(y.data_as<float>(), y.data_as<float>() + kElems, 2.0f);
  using Vec = Eigen::Array<float, Eigen::Dynamic, 1>;
  for (auto _ : state) {
    Eigen::Map<Vec>(z.data_as<float>(), kElems) =
        Eigen::Map<const Vec>(x.data_as<float>(), kElems) + Eigen::Map<const Vec>(y.data_as<float>(), kElems);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElems * 3 * sizeof(float));
}
BENCHMARK(BM_EigenAdd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  Tensor x, z;
  x.Allocate(RILL_FP32, {kElems});
  z.Allocate(RILL_FP32, {kElems});
  std::fill(x.data_as<float>(), x.data_as<float>() + kElems, 1.0f);
  std::fill(z.data_as<float>(), z.data_as<float>() + kElems, 0.0f);
  for (auto _ : state) {
    std::memcpy(z.data(), x.data(), kElems * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElems * 2 * sizeof(float));
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RillMul(benchmark::State& state) {
  OneOp op("mul", {kN, kN}, {kN, kN});
  for (auto _ : state) op.exec->Run(0, op.scope);
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RillMul)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EigenGemm(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Tensor x, y, z;
  for (Tensor* t : {&x, &y, &z}) t->Allocate(RILL_FP32, {kN, kN});
  std::fill(x.data_as<float>(), x.data_as<float>() + kN * kN, 1.0f);
  std::fill(y.data_as<float>(), y.data_as<float>() + kN * kN, 2.0f);
  for (auto _ : state) {
    Eigen::Map<Matrix>(z.data_as<float>(), kN, kN).noalias() =
        Eigen::Map<const Matrix>(x.data_as<float>(), kN, kN) * Eigen::Map<const Matrix>(y.data_as<float>(), kN, kN);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_EigenGemm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rill::core

BENCHMARK_MAIN();
