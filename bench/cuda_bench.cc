// GPU figures for the math plugin's CUDA kernels, each beside its limit in the same run:
//   mul 1024x1024x1024 fp32 through Rill (executor on CUDA:0)  vs  cublasSgemm called directly;
//   conv2d 3x3 64->64 56x56 batch 8, fp32 and fp16, through Rill  vs  cuDNN called directly;
//   pool2d max 2x2 and batch_norm in training on [32, 64, 56, 56] fp32 through Rill (its own
//     kernels, pool.cu and batch_norm.cu)                       vs  cuDNN's pooling and
//     batch normalization called directly;
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

#include <algorithm>
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

// A one-op program on CUDA:0 with its inputs (each filled with ones, of `dtype`) moved to
// the device by a first run. The op reads X and Y and writes Out, or has the slots and
// attributes `configure` gives it.
struct CudaOneOp {
  using Inputs = std::vector<std::pair<std::string, std::vector<int64_t>>>;
  CudaOneOp(const std::string& type, const Inputs& inputs, const std::function<void(OpBuilder&)>& configure = nullptr,
            int32_t dtype = RILL_FP32) {
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
    for (const auto& [name, dims] : inputs) {
      Tensor* t = scope->Var(name)->GetMutableTensor();
      t->Allocate(dtype, dims);
      if (dtype == RILL_FP16) {
        std::fill_n(t->data_as<uint16_t>(), t->numel(), uint16_t{0x3C00});  // 1.0 in fp16
      } else {
        std::fill_n(t->data_as<float>(), t->numel(), 1.0f);
      }
    }
    exec->Run(0, scope);
    cudaDeviceSynchronize();
  }
  // Runs the op as each benchmark iteration, to the end of its work on the device.
  void Measure(benchmark::State& state) {
    for (auto _ : state) {
      exec->Run(0, scope);
      cudaDeviceSynchronize();
    }
  }
  std::shared_ptr<Scope> scope = Scope::NewRoot();
  std::unique_ptr<Executor> exec;
};

void BM_RillMulCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp("mul", {{"x", {kN, kN}}, {"y", {kN, kN}}}).Measure(state);
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
// Device memory for a benchmark's operands (contents left as they are), freed with it.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { cudaMalloc(&p_, std::max<size_t>(bytes, 1)); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

// A cuDNN handle and the tensor descriptors a benchmark makes, destroyed with it.
class CudnnSession {
 public:
  CudnnSession() { cudnnCreate(&h_); }
  ~CudnnSession() {
    for (cudnnTensorDescriptor_t d : tensors_) cudnnDestroyTensorDescriptor(d);
    cudnnDestroy(h_);
  }
  CudnnSession(const CudnnSession&) = delete;
  CudnnSession& operator=(const CudnnSession&) = delete;
  cudnnHandle_t handle() const { return h_; }
  // A packed NCHW tensor of `type`.
  cudnnTensorDescriptor_t Nchw(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w) {
    cudnnTensorDescriptor_t d;
    cudnnCreateTensorDescriptor(&d);
    cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, type, static_cast<int>(n), static_cast<int>(c),
                               static_cast<int>(h), static_cast<int>(w));
    tensors_.push_back(d);
    return d;
  }

 private:
  cudnnHandle_t h_ = nullptr;
  std::vector<cudnnTensorDescriptor_t> tensors_;
};

// conv2d 3x3, 64 -> 64 channels, 56x56, batch 8, padding 1: through Rill and through cuDNN
// called the way Rill calls it (fp32: FMA math; fp16: tensor cores, summing in fp32; the
// algorithm cuDNN's heuristics rank first).
constexpr int64_t kConvN = 8, kConvC = 64, kConvHW = 56;
constexpr double kConvFlops = 2.0 * kConvN * kConvC * kConvHW * kConvHW * kConvC * 9;

void RillConv2dCuda(benchmark::State& state, int32_t dtype) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp(
      "conv2d", {{"x", {kConvN, kConvC, kConvHW, kConvHW}}, {"w", {kConvC, kConvC, 3, 3}}},
      [](OpBuilder& b) {
        b.Input("Input", "x").Input("Filter", "w").Output("Output", "z").Attr("paddings", std::vector<int64_t>{1, 1});
      },
      dtype)
      .Measure(state);
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_RillConv2dCuda(benchmark::State& state) { RillConv2dCuda(state, RILL_FP32); }
void BM_RillConv2dHalfCuda(benchmark::State& state) { RillConv2dCuda(state, RILL_FP16); }
BENCHMARK(BM_RillConv2dCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RillConv2dHalfCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void CudnnConvForward(benchmark::State& state, cudnnDataType_t type) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  const bool half = type == CUDNN_DATA_HALF;
  const size_t element = half ? 2 : 4;
  CudnnSession cudnn;
  cudnnTensorDescriptor_t x = cudnn.Nchw(type, kConvN, kConvC, kConvHW, kConvHW);
  cudnnTensorDescriptor_t y = cudnn.Nchw(type, kConvN, kConvC, kConvHW, kConvHW);
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnCreateFilterDescriptor(&w);
  cudnnCreateConvolutionDescriptor(&conv);
  cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, kConvC, kConvC, 3, 3);
  cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  cudnnSetConvolutionMathType(conv, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int returned = 0;
  cudnnGetConvolutionForwardAlgorithm_v7(cudnn.handle(), x, w, conv, y, 16, &returned, perf);
  size_t bytes = 0;
  cudnnGetConvolutionForwardWorkspaceSize(cudnn.handle(), x, w, conv, y, perf[0].algo, &bytes);
  DeviceBuffer px(element * kConvN * kConvC * kConvHW * kConvHW), py(element * kConvN * kConvC * kConvHW * kConvHW);
  DeviceBuffer pw(element * kConvC * kConvC * 9), workspace(bytes);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cudnnConvolutionForward(cudnn.handle(), &one, x, px.get(), w, pw.get(), conv, perf[0].algo, workspace.get(), bytes,
                            &zero, y, py.get());
    cudaDeviceSynchronize();
  }
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(w);
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_CudnnConvForward(benchmark::State& state) { CudnnConvForward(state, CUDNN_DATA_FLOAT); }
void BM_CudnnConvForwardHalf(benchmark::State& state) { CudnnConvForward(state, CUDNN_DATA_HALF); }
BENCHMARK(BM_CudnnConvForward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CudnnConvForwardHalf)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Activations of a residual net's first stage at batch 32. Pooling and batch norm are bound
// by memory: the counter is the bytes of X read and of the output written once.
constexpr int64_t kActN = 32, kActC = 64, kActHW = 56, kActElems = kActN * kActC * kActHW * kActHW;

void BM_RillPool2dCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp("pool2d", {{"x", {kActN, kActC, kActHW, kActHW}}}, [](OpBuilder& b) {
    b.Input("X", "x")
        .Output("Out", "z")
        .Attr("ksize", std::vector<int64_t>{2, 2})
        .Attr("strides", std::vector<int64_t>{2, 2});
  }).Measure(state);
  state.SetBytesProcessed(state.iterations() * kActElems * 5 / 4 * sizeof(float));
}
BENCHMARK(BM_RillPool2dCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CudnnPoolingForward(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudnnSession cudnn;
  cudnnTensorDescriptor_t x = cudnn.Nchw(CUDNN_DATA_FLOAT, kActN, kActC, kActHW, kActHW);
  cudnnTensorDescriptor_t y = cudnn.Nchw(CUDNN_DATA_FLOAT, kActN, kActC, kActHW / 2, kActHW / 2);
  cudnnPoolingDescriptor_t pool;
  cudnnCreatePoolingDescriptor(&pool);
  cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2);
  DeviceBuffer px(sizeof(float) * kActElems), py(sizeof(float) * kActElems / 4);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cudnnPoolingForward(cudnn.handle(), pool, &one, x, px.get(), &zero, y, py.get());
    cudaDeviceSynchronize();
  }
  cudnnDestroyPoolingDescriptor(pool);
  state.SetBytesProcessed(state.iterations() * kActElems * 5 / 4 * sizeof(float));
}
BENCHMARK(BM_CudnnPoolingForward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RillBatchNormCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp("batch_norm",
            {{"x", {kActN, kActC, kActHW, kActHW}},
             {"scale", {kActC}},
             {"bias", {kActC}},
             {"mean", {kActC}},
             {"var", {kActC}}},
            [](OpBuilder& b) {
              b.Input("X", "x")
                  .Input("Scale", "scale")
                  .Input("Bias", "bias")
                  .Input("Mean", "mean")
                  .Input("Variance", "var")
                  .Output("Y", "z")
                  .Output("MeanOut", "mean")
                  .Output("VarianceOut", "var")
                  .Output("SavedMean", "saved_mean")
                  .Output("SavedVariance", "saved_var");
            })
      .Measure(state);
  state.SetBytesProcessed(state.iterations() * kActElems * 2 * sizeof(float));
}
BENCHMARK(BM_RillBatchNormCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CudnnBatchNormTraining(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudnnSession cudnn;
  cudnnTensorDescriptor_t x = cudnn.Nchw(CUDNN_DATA_FLOAT, kActN, kActC, kActHW, kActHW);
  cudnnTensorDescriptor_t channels = cudnn.Nchw(CUDNN_DATA_FLOAT, 1, kActC, 1, 1);
  DeviceBuffer px(sizeof(float) * kActElems), py(sizeof(float) * kActElems);
  DeviceBuffer scale(sizeof(float) * kActC), bias(sizeof(float) * kActC), mean(sizeof(float) * kActC),
      var(sizeof(float) * kActC), saved_mean(sizeof(float) * kActC), saved_inv_std(sizeof(float) * kActC);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cudnnBatchNormalizationForwardTraining(cudnn.handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x, px.get(), x,
                                           py.get(), channels, scale.get(), bias.get(), 0.1, mean.get(), var.get(),
                                           1e-5, saved_mean.get(), saved_inv_std.get());
    cudaDeviceSynchronize();
  }
  state.SetBytesProcessed(state.iterations() * kActElems * 2 * sizeof(float));
}
BENCHMARK(BM_CudnnBatchNormTraining)->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif  // RILL_WITH_CUDNN

void BM_RillElementwiseAddCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp("elementwise_add", {{"x", {kElems}}, {"y", {kElems}}}).Measure(state);
  state.SetBytesProcessed(state.iterations() * kElems * 3 * sizeof(float));
}
BENCHMARK(BM_RillElementwiseAddCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

// mean of 16M fp32: a reduction reads its input once, so its limit is the read half of
// the memcpy's traffic.
void BM_RillMeanCuda(benchmark::State& state) {
  if (const std::string why = Unavailable(); !why.empty()) return state.SkipWithError(why.c_str());
  CudaOneOp("mean", {{"x", {kElems}}}, [](OpBuilder& b) { b.Input("X", "x").Output("Out", "m"); }).Measure(state);
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
