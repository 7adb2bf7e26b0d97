// Math kernels through Rill (a one-op program run by the executor, kernel in the math
// plugin) against their peers in the same run:
//   elementwise_add, 16M fp32: raw Eigen (the same expression on the same buffers) and
//     memcpy (bandwidth limit; bytes = read + write);
//   mul 1024x1024x1024 fp32: oneDNN's dnnl_sgemm called directly on the same buffers;
//   conv2d 3x3, 64 -> 64 channels, 56x56, batch 8, padding 1, fp32 NCHW: oneDNN's
//     convolution primitive called directly, made once for images in nChw16c and the
//     filter in the layout it picks: with the operands reordered from NCHW / OIHW and
//     back each run (as any caller holding NCHW tensors must, and as Rill's kernel does),
//     and on operands already in its layouts (no reorders: the bare kernel, the limit).
//   pool2d max 2x2 stride 2 on [64, 20, 24, 24] (the book conv net's first pooling) and
//   batch_norm in training on [32, 16, 32, 32] (the residual net's), fp32 NCHW: oneDNN's
//     pooling and batch normalization primitives called directly on the same layout, the
//     measure of whether Rill's own kernels should give way to them; likewise layer_norm
//     in training on [256, 768] (a transformer layer's rows).
// Threads: OMP_NUM_THREADS for both sides (Rill's intra-op budget defaults to it).
// Report bytes/s (elementwise) and FLOP/s (GEMM, convolution); compare the ratios in
// PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

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

void BM_DnnlSgemm(benchmark::State& state) {
  Tensor x, y, z;
  for (Tensor* t : {&x, &y, &z}) t->Allocate(RILL_FP32, {kN, kN});
  std::fill(x.data_as<float>(), x.data_as<float>() + kN * kN, 1.0f);
  std::fill(y.data_as<float>(), y.data_as<float>() + kN * kN, 2.0f);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', kN, kN, kN, 1.0f, x.data_as<float>(), kN, y.data_as<float>(), kN, 0.0f, z.data_as<float>(),
               kN);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DnnlSgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

// The convolution: x [8, 64, 56, 56], w [64, 64, 3, 3], padding 1 -> y [8, 64, 56, 56].
constexpr int64_t kConvN = 8, kConvC = 64, kConvHw = 56;
constexpr double kConvFlops = 2.0 * kConvN * kConvC * kConvC * 9 * kConvHw * kConvHw;

void BM_RillConv2d(benchmark::State& state) {
  ProgramBuilder pb;
  pb.block(0)
      .Op("conv2d")
      .Input("Input", "x")
      .Input("Filter", "w")
      .Output("Output", "y")
      .Attr("paddings", std::vector<int64_t>{1, 1});
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  ValidateProgramOrThrow(*program, LoadedRegistry());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  FillTensor(*scope, "x", {kConvN, kConvC, kConvHw, kConvHw}, 1.0f);
  FillTensor(*scope, "w", {kConvC, kConvC, 3, 3}, 0.5f);
  exec.Run(0, scope);
  for (auto _ : state) exec.Run(0, scope);
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RillConv2d)->Unit(benchmark::kMillisecond)->UseRealTime();

// oneDNN's own convolution; `reorders`: operands in NCHW / OIHW, reordered to and from
// the primitive's layouts each run; otherwise already in them.
void DnnlConv2d(benchmark::State& state, bool reorders) {
  using dnnl::memory;
  using Tag = memory::format_tag;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::dims xd{kConvN, kConvC, kConvHw, kConvHw}, wd{kConvC, kConvC, 3, 3};
  const memory::desc x_user(xd, memory::data_type::f32, Tag::nchw), w_user(wd, memory::data_type::f32, Tag::oihw);
  const memory::desc y_user(xd, memory::data_type::f32, Tag::nchw);
  const memory::desc blocked(xd, memory::data_type::f32, Tag::nChw16c), w_any(wd, memory::data_type::f32, Tag::any);
  const dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, blocked,
                                      w_any, blocked, {1, 1}, {0, 0}, {1, 1}, {1, 1}),
      engine);
  const dnnl::convolution_forward conv(pd);
  memory x(x_user, engine), w(w_user, engine), y(y_user, engine);
  memory xb(pd.src_desc(), engine), wb(pd.weights_desc(), engine), yb(pd.dst_desc(), engine);
  std::fill_n(static_cast<float*>(x.get_data_handle()), kConvN * kConvC * kConvHw * kConvHw, 1.0f);
  std::fill_n(static_cast<float*>(w.get_data_handle()), kConvC * kConvC * 9, 0.5f);
  dnnl::reorder(x, xb).execute(stream, x, xb);
  dnnl::reorder(w, wb).execute(stream, w, wb);
  const dnnl::reorder x_in(x, xb), w_in(w, wb), y_out(yb, y);
  const auto run = [&] {
    if (reorders) {
      x_in.execute(stream, x, xb);
      w_in.execute(stream, w, wb);
    }
    conv.execute(stream, {{DNNL_ARG_SRC, xb}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DST, yb}});
    if (reorders) y_out.execute(stream, yb, y);
    stream.wait();
  };
  run();
  for (auto _ : state) run();
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_DnnlConv2dFromNchw(benchmark::State& state) { DnnlConv2d(state, true); }
void BM_DnnlConv2dBlocked(benchmark::State& state) { DnnlConv2d(state, false); }
BENCHMARK(BM_DnnlConv2dFromNchw)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DnnlConv2dBlocked)->Unit(benchmark::kMillisecond)->UseRealTime();

const std::vector<int64_t> kPoolIn{64, 20, 24, 24}, kNormIn{32, 16, 32, 32};

void BM_RillPool2d(benchmark::State& state) {
  ProgramBuilder pb;
  pb.block(0)
      .Op("pool2d")
      .Input("X", "x")
      .Output("Out", "y")
      .Attr("ksize", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2});
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  FillTensor(*scope, "x", kPoolIn, 1.0f);
  exec.Run(0, scope);
  for (auto _ : state) exec.Run(0, scope);
}
BENCHMARK(BM_RillPool2d)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DnnlPool2d(benchmark::State& state) {
  using dnnl::memory;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc x(kPoolIn, memory::data_type::f32, memory::format_tag::nchw);
  const memory::desc y({64, 20, 12, 12}, memory::data_type::f32, memory::format_tag::nchw);
  const dnnl::pooling_forward::primitive_desc pd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, x, y, {2, 2},
                                  {2, 2}, {0, 0}, {0, 0}),
      engine);
  const dnnl::pooling_forward pool(pd);
  memory xm(x, engine), ym(y, engine);
  std::fill_n(static_cast<float*>(xm.get_data_handle()), 64 * 20 * 24 * 24, 1.0f);
  for (auto _ : state) {
    pool.execute(stream, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
    stream.wait();
  }
}
BENCHMARK(BM_DnnlPool2d)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RillBatchNorm(benchmark::State& state) {
  ProgramBuilder pb;
  pb.block(0)
      .Op("batch_norm")
      .Input("X", "x")
      .Input("Scale", "scale")
      .Input("Bias", "bias")
      .Input("Mean", "mean")
      .Input("Variance", "var")
      .Output("Y", "y")
      .Output("MeanOut", "mean")
      .Output("VarianceOut", "var")
      .Output("SavedMean", "saved_mean")
      .Output("SavedVariance", "saved_var");
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  FillTensor(*scope, "x", kNormIn, 1.0f);
  for (const char* v : {"scale", "var"}) FillTensor(*scope, v, {16}, 1.0f);
  for (const char* v : {"bias", "mean"}) FillTensor(*scope, v, {16}, 0.0f);
  exec.Run(0, scope);
  for (auto _ : state) exec.Run(0, scope);
}
BENCHMARK(BM_RillBatchNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DnnlBatchNorm(benchmark::State& state) {
  using dnnl::memory;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc x(kNormIn, memory::data_type::f32, memory::format_tag::nchw);
  const dnnl::batch_normalization_forward::primitive_desc pd(
      dnnl::batch_normalization_forward::desc(
          dnnl::prop_kind::forward_training, x, 1e-5f,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      engine);
  const dnnl::batch_normalization_forward bn(pd);
  memory xm(x, engine), ym(x, engine), mean(pd.mean_desc(), engine), var(pd.variance_desc(), engine);
  memory scale(pd.weights_desc(), engine), shift(pd.weights_desc(), engine);
  std::fill_n(static_cast<float*>(xm.get_data_handle()), 32 * 16 * 32 * 32, 1.0f);
  std::fill_n(static_cast<float*>(scale.get_data_handle()), 16, 1.0f);
  std::fill_n(static_cast<float*>(shift.get_data_handle()), 16, 0.0f);
  for (auto _ : state) {
    bn.execute(stream, {{DNNL_ARG_SRC, xm},
                        {DNNL_ARG_DST, ym},
                        {DNNL_ARG_MEAN, mean},
                        {DNNL_ARG_VARIANCE, var},
                        {DNNL_ARG_SCALE, scale},
                        {DNNL_ARG_SHIFT, shift}});
    stream.wait();
  }
}
BENCHMARK(BM_DnnlBatchNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

constexpr int64_t kRows = 256, kWidth = 768;

void BM_RillLayerNorm(benchmark::State& state) {
  ProgramBuilder pb;
  pb.block(0)
      .Op("layer_norm")
      .Input("X", "x")
      .Input("Scale", "scale")
      .Input("Bias", "bias")
      .Output("Y", "y")
      .Output("Mean", "mean")
      .Output("Variance", "var");
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  Executor exec(LoadedRegistry(), program);
  auto scope = Scope::NewRoot();
  FillTensor(*scope, "x", {kRows, kWidth}, 1.0f);
  FillTensor(*scope, "scale", {kWidth}, 1.0f);
  FillTensor(*scope, "bias", {kWidth}, 0.0f);
  exec.Run(0, scope);
  for (auto _ : state) exec.Run(0, scope);
}
BENCHMARK(BM_RillLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DnnlLayerNorm(benchmark::State& state) {
  using dnnl::memory;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc x({kRows, kWidth}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_training, x, 1e-5f,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      engine);
  const dnnl::layer_normalization_forward ln(pd);
  memory xm(x, engine), ym(x, engine), mean(pd.mean_desc(), engine), var(pd.variance_desc(), engine);
  memory scale(pd.weights_desc(), engine), shift(pd.weights_desc(), engine);
  std::fill_n(static_cast<float*>(xm.get_data_handle()), kRows * kWidth, 1.0f);
  std::fill_n(static_cast<float*>(scale.get_data_handle()), kWidth, 1.0f);
  std::fill_n(static_cast<float*>(shift.get_data_handle()), kWidth, 0.0f);
  for (auto _ : state) {
    ln.execute(stream, {{DNNL_ARG_SRC, xm},
                        {DNNL_ARG_DST, ym},
                        {DNNL_ARG_MEAN, mean},
                        {DNNL_ARG_VARIANCE, var},
                        {DNNL_ARG_SCALE, scale},
                        {DNNL_ARG_SHIFT, shift}});
    stream.wait();
  }
}
BENCHMARK(BM_DnnlLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace rill::core

BENCHMARK_MAIN();
