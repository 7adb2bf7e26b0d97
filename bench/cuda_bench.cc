// GPU figures for the math plugin's CUDA kernels, each beside its limit in the same run:
//   mul 1024x1024x1024 fp32 through Rill (executor on CUDA:0)  vs  cublasSgemm called directly;
//   conv2d 3x3 64->64 56x56 batch 8 fp32 through Rill            vs  cuDNN called directly;
//   elementwise_add 16M fp32 through Rill                      vs  device-to-device cudaMemcpy
//     (bytes read + written: the bandwidth limit); mean of 16M fp32 (bytes read) likewise,
//     and against CUB's device-wide sum of the same floats;
//   a 64 MiB tensor off the GPU for a CPU kernel (Tensor::CopyTo, staged in the CUDA
//     device's cached page-locked memory)                       vs  cudaMemcpy into
//     page-locked memory (the limit) and into ordinary memory (what staging saves).
// Without a CUDA device every benchmark reports "skipped: ..." and measures nothing.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#if RILL_WITH_CUDNN
#include <cudnn.h>
#endif

#include <cstdlib>
#include <cstring>
#include <functional>

#include "bench/bench_util.h"
#include "bench/cub_sum.h"
#include "core/program/builder.h"
#include "core/program/validate.h"
#include "core/runtime/device.h"
#include "core/runtime/executor.h"

namespace rill::core {
namespace {

using bench::LoadedRegistry;
constexpr int64_t kN = 1024;
constexpr int64_t kElems = 16 << 20;

// Why the GPU benchmarks cannot run here, or "".
std::string Unavailable() {
  LoadedRegistry();
  const Device* cuda = FindDevice(RILL_CUDA);
  if (cuda == nullptr) return "skipped: this build has no CUDA plugin";
  if (cuda->device_count() == 0) return "skipped: no CUDA device (0 devices reported)";
  return "";
}

// A one-op program on CUDA:0 with inputs moved to the device by a first run: inputs X and
// Y and output Out, or the slots and attributes `configure` gives it.
struct CudaOneOp {
  CudaOneOp(const std::string& type, std::vector<int64_t> xd, std::vector<int64_t> yd,
            const std::function<void(OpBuilder&)>& configure = nullptr) {
    ProgramBuilder pb;
    OpBuilder op = pb.block(0).Op(type);
    if (configure) {
      configure(op);
    } else {
      op.Input("X", "x").Input("Y", "y").Output("Out", "z");
    }
    auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
    ValidateProgramOrThrow(*program, LoadedRegistry());
    exec = std::make_unique<Executor>(LoadedRegistry(), program);
    exec->set_place(Place{RILL_CUDA, 0});
    for (const auto& [name, dims] : {std::pair{"x", xd}, std::pair{"y", yd}}) {
      Tensor* t = scope->Var(name)->GetMutableTensor();
      t->Allocate(RILL_FP32, dims);
      std::fill(t->data_as<float>(), t->data_as<float>() + t->numel(), 1.0f);
    }
    exec->Run(0, scope);
    cudaDeviceSynchronize();
  }
  std::shared_ptr<Scope> scope = Scope::NewRoot();
  std::unique_ptr<Executor> exec;
};

void BM_RillMulCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp op("mul", {kN, kN}, {kN, kN});
  for (auto _ : state) {
    op.exec->Run(0, op.scope);
    cudaDeviceSynchronize();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RillMulCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CublasSgemm(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  float *a, *b, *c;
  cudaMalloc(&a, sizeof(float) * kN * kN);
  cudaMalloc(&b, sizeof(float) * kN * kN);
  cudaMalloc(&c, sizeof(float) * kN * kN);
  cublasHandle_t h;
  cublasCreate(&h);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, b, kN, a, kN, &zero, c, kN);
    cudaDeviceSynchronize();
  }
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CublasSgemm)->Unit(benchmark::kMicrosecond)->UseRealTime();

#if RILL_WITH_CUDNN
// conv2d 3x3, 64 -> 64 channels, 56x56, batch 8, padding 1: through Rill (cuDNN with FMA
// math, the algorithm its heuristics rank first) and cuDNN called directly the same way.
constexpr int64_t kConvN = 8, kConvC = 64, kConvHW = 56;
constexpr double kConvFlops = 2.0 * kConvN * kConvC * kConvHW * kConvHW * kConvC * 9;

void BM_RillConv2dCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp op("conv2d", {kConvN, kConvC, kConvHW, kConvHW}, {kConvC, kConvC, 3, 3}, [](OpBuilder& b) {
    b.Input("Input", "x").Input("Filter", "y").Output("Output", "z").Attr("paddings", std::vector<int64_t>{1, 1});
  });
  for (auto _ : state) {
    op.exec->Run(0, op.scope);
    cudaDeviceSynchronize();
  }
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RillConv2dCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CudnnConvForward(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  cudnnHandle_t h;
  cudnnCreate(&h);
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnCreateTensorDescriptor(&x);
  cudnnCreateTensorDescriptor(&y);
  cudnnCreateFilterDescriptor(&w);
  cudnnCreateConvolutionDescriptor(&conv);
  cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kConvN, kConvC, kConvHW, kConvHW);
  cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kConvN, kConvC, kConvHW, kConvHW);
  cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, kConvC, kConvC, 3, 3);
  cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH);
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int returned = 0;
  cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y, 16, &returned, perf);
  size_t bytes = 0;
  cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, perf[0].algo, &bytes);
  float *px, *pw, *py;
  void* ws = nullptr;
  cudaMalloc(&px, sizeof(float) * kConvN * kConvC * kConvHW * kConvHW);
  cudaMalloc(&py, sizeof(float) * kConvN * kConvC * kConvHW * kConvHW);
  cudaMalloc(&pw, sizeof(float) * kConvC * kConvC * 9);
  if (bytes > 0) cudaMalloc(&ws, bytes);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cudnnConvolutionForward(h, &one, x, px, w, pw, conv, perf[0].algo, ws, bytes, &zero, y, py);
    cudaDeviceSynchronize();
  }
  cudaFree(px);
  cudaFree(py);
  cudaFree(pw);
  cudaFree(ws);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroy(h);
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudnnConvForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif  // RILL_WITH_CUDNN

void BM_RillElementwiseAddCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp op("elementwise_add", {kElems}, {kElems});
  for (auto _ : state) {
    op.exec->Run(0, op.scope);
    cudaDeviceSynchronize();
  }
  state.SetBytesProcessed(state.iterations() * kElems * 3 * sizeof(float));
}
BENCHMARK(BM_RillElementwiseAddCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

// mean of 16M fp32: a reduction reads its input once, so its limit is the read half of
// the memcpy's traffic.
void BM_RillMeanCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  ProgramBuilder pb;
  pb.block(0).Op("mean").Input("X", "x").Output("Out", "m");
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  Executor exec(LoadedRegistry(), program);
  exec.set_place(Place{RILL_CUDA, 0});
  auto scope = Scope::NewRoot();
  Tensor* x = scope->Var("x")->GetMutableTensor();
  x->Allocate(RILL_FP32, {kElems});
  std::fill(x->data_as<float>(), x->data_as<float>() + kElems, 1.0f);
  exec.Run(0, scope);
  for (auto _ : state) {
    exec.Run(0, scope);
    cudaDeviceSynchronize();
  }
  state.SetBytesProcessed(state.iterations() * kElems * sizeof(float));
}
BENCHMARK(BM_RillMeanCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CubSum(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  float *x, *sum;
  cudaMalloc(&x, sizeof(float) * kElems);
  cudaMalloc(&sum, sizeof(float));
  cudaMemset(x, 0, sizeof(float) * kElems);
  {
    bench::CubSum cub(x, sum, kElems);
    for (auto _ : state) {
      cub.Run();
      cudaDeviceSynchronize();
    }
  }
  cudaFree(x);
  cudaFree(sum);
  state.SetBytesProcessed(state.iterations() * kElems * sizeof(float));
}
BENCHMARK(BM_CubSum)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DeviceMemcpy(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  float *src, *dst;
  cudaMalloc(&src, sizeof(float) * kElems);
  cudaMalloc(&dst, sizeof(float) * kElems);
  for (auto _ : state) {
    cudaMemcpy(dst, src, sizeof(float) * kElems, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
  }
  cudaFree(src);
  cudaFree(dst);
  state.SetBytesProcessed(state.iterations() * kElems * 2 * sizeof(float));
}
BENCHMARK(BM_DeviceMemcpy)->Unit(benchmark::kMicrosecond)->UseRealTime();

constexpr size_t kStagedBytes = size_t{64} << 20;

void BM_RillDeviceToHost(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  Tensor host;
  host.Allocate(RILL_FP32, {static_cast<int64_t>(kStagedBytes / 4)});
  const Tensor on_gpu = host.CopyTo(Place{RILL_CUDA, 0});
  Tensor back;
  for (auto _ : state) back = on_gpu.CopyTo(Place{});  // the last block goes back to the cache
  if (!back.page_locked()) state.SkipWithError("the copy was not staged in page-locked memory");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStagedBytes));
}
BENCHMARK(BM_RillDeviceToHost)->Unit(benchmark::kMicrosecond)->UseRealTime();

// cudaMemcpy from the device into `pinned` (cudaHostAlloc) or ordinary host memory.
void CudaDeviceToHost(benchmark::State& state, bool pinned) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  void *src = nullptr, *dst = nullptr;
  cudaMalloc(&src, kStagedBytes);
  if (pinned) {
    cudaHostAlloc(&dst, kStagedBytes, cudaHostAllocPortable);
  } else {
    dst = std::aligned_alloc(64, kStagedBytes);
    std::memset(dst, 0, kStagedBytes);
  }
  for (auto _ : state) cudaMemcpy(dst, src, kStagedBytes, cudaMemcpyDeviceToHost);
  cudaFree(src);
  if (pinned) cudaFreeHost(dst);
  else std::free(dst);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStagedBytes));
}
void BM_CudaMemcpyToPageLocked(benchmark::State& state) { CudaDeviceToHost(state, true); }
void BM_CudaMemcpyToPageable(benchmark::State& state) { CudaDeviceToHost(state, false); }
BENCHMARK(BM_CudaMemcpyToPageLocked)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CudaMemcpyToPageable)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace rill::core

BENCHMARK_MAIN();
