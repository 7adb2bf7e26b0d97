// CUDA fill_constant, fill_any_like, fill_zeros_like, sum, mean and mean_grad, fp32/fp64.
#include "../shape.h"
#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

template <class T>
__global__ void Fill(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = value;
  }
}

// out = (accumulate ? out : 0) + x
template <class T>
__global__ void Accumulate(const T* x, T* out, int64_t n, bool accumulate) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = accumulate ? out[i] + x[i] : x[i];
  }
}

// One block sums everything (deterministic, and enough for the [1]-shaped losses mean
// produces in training); threads stride, then a shared-memory tree.
template <class T>
__global__ void MeanOneBlock(const T* x, T* out, int64_t n) {
  __shared__ T partial[kThreads];
  T sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += x[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = partial[0] / T(n);
}

template <class T>
__global__ void MeanGradKernel(const T* g, T* dx, int64_t n) {
  const T v = g[0] / T(n);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    dx[i] = v;
  }
}

template <class T>
void FillConstant(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, ctx.Attr<std::vector<int64_t>>("shape"));
  Fill<T><<<Blocks(out.numel()), kThreads>>>(po, out.numel(), T(ctx.Attr<float>("value")));
  CheckLaunch("fill kernel");
}

// Out shaped like X (of dtype T), filled with `value` of Out's dtype: X's, or the `dtype`
// attribute when fill_any_like sets one.
template <class T, bool kZeros>
void FillLike(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const int64_t want = kZeros ? -1 : ctx.Attr<int64_t>("dtype");
  const double value = kZeros ? 0.0 : ctx.Attr<float>("value");
  Tensor out = ctx.Output("Out");
  VisitDataType<float, double>(want < 0 ? DataTypeOf<T>::value : static_cast<int32_t>(want), "CUDA fill_any_like",
                               [&](auto u) {
                                 using U = decltype(u);
                                 U* po = AllocateOnDevice<U>(ctx, out, x.dims());
                                 Fill<U><<<Blocks(x.numel()), kThreads>>>(po, x.numel(), U(value));
                               });
  CheckLaunch("fill kernel");
}

template <class T>
void Sum(KernelContext& ctx) {
  UseDevice(ctx);
  const size_t n = ctx.op().InputCount("X");
  Tensor first = ctx.Input("X", 0);
  const std::vector<int64_t> dims = first.dims();
  for (size_t i = 1; i < n; ++i) {
    if (ctx.Input("X", i).dims() != dims) {
      throw Error("X[" + std::to_string(i) + "] has shape " + DimsString(ctx.Input("X", i).dims()) + ", X[0] has " +
                  DimsString(dims));
    }
  }
  // Accumulate straight into Out, unless Out is one of the inputs: then aside, and copy.
  RillVariable* out_var = ctx.OutputVar("Out").handle();
  bool aliased = false;
  for (size_t i = 0; i < n; ++i) aliased = aliased || ctx.InputVar("X", i).handle() == out_var;
  Tensor out = ctx.Output("Out");
  T* acc = nullptr;
  if (aliased) {
    CudaCheck(cudaMalloc(&acc, sizeof(T) * std::max<int64_t>(first.numel(), 1)), "cudaMalloc");
  } else {
    acc = AllocateOnDevice<T>(ctx, out, dims);
  }
  for (size_t i = 0; i < n; ++i) {
    Tensor x = ctx.Input("X", i);
    Accumulate<T><<<Blocks(x.numel()), kThreads>>>(x.data<T>(), acc, x.numel(), i > 0);
  }
  cudaError_t e = cudaGetLastError();
  if (aliased) {
    if (e == cudaSuccess) {
      T* po = AllocateOnDevice<T>(ctx, out, dims);
      e = cudaMemcpy(po, acc, sizeof(T) * first.numel(), cudaMemcpyDeviceToDevice);
    }
    cudaFree(acc);
  }
  CudaCheck(e, "sum");
}

template <class T>
void Mean(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  if (x.numel() == 0) throw Error("mean of an empty tensor");
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, {1});
  MeanOneBlock<T><<<1, kThreads>>>(x.data<T>(), po, x.numel());
  CheckLaunch("mean kernel");
}

template <class T>
void MeanGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, x.dims());
  MeanGradKernel<T><<<Blocks(x.numel()), kThreads>>>(g.data<T>(), pd, x.numel());
  CheckLaunch("mean gradient kernel");
}

}  // namespace

void RegisterFillSumMean(Registrar& r) {
  RegisterCudaFloat(r, "fill_constant", [](auto t) { return &FillConstant<decltype(t)>; });
  RegisterCudaFloat(r, "fill_any_like", [](auto t) { return &FillLike<decltype(t), false>; });
  RegisterCudaFloat(r, "fill_zeros_like", [](auto t) { return &FillLike<decltype(t), true>; });
  RegisterCudaFloat(r, "sum", [](auto t) { return &Sum<decltype(t)>; });
  RegisterCudaFloat(r, "mean", [](auto t) { return &Mean<decltype(t)>; });
  RegisterCudaFloat(r, "mean_grad", [](auto t) { return &MeanGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
