// CUDA fill_constant, fill_any_like, fill_zeros_like, sum, mean and mean_grad, fp32/fp64.
#include "../shape.h"
#include "device_output.h"
#include "ops.h"
#include "sum_reduce.cuh"

namespace rill::math::cuda {
namespace {

template <class T> __global__ void Fill(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = value;
  }
}

// out = (accumulate ? out : 0) + x
template <class T> __global__ void Accumulate(const T* x, T* out, int64_t n, bool accumulate) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = accumulate ? out[i] + x[i] : x[i];
  }
}

template <class T> __global__ void MeanGradKernel(const T* g, T* dx, int64_t n) {
  const T v = g[0] / T(n);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    dx[i] = v;
  }
}

// With force_cpu, Out is made on the CPU (a loop counter or bound a CPU op reads).
template <class T> void FillConstant(KernelContext& ctx) {
  Tensor out = ctx.Output("Out");
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  if (ctx.Attr<bool>("force_cpu")) {
    T* p = out.Allocate<T>(shape);
    std::fill(p, p + out.numel(), T(ctx.Attr<float>("value")));
    return;
  }
  UseDevice(ctx);
  T* po = AllocateOnDevice<T>(ctx, out, shape);
  Fill<T><<<Blocks(out.numel()), kThreads>>>(po, out.numel(), T(ctx.Attr<float>("value")));
  CheckLaunch("fill kernel");
}

// Out shaped like X (of dtype T), filled with `value` of Out's dtype: X's, or the `dtype`
// attribute when fill_any_like sets one.
template <class T, bool kZeros> void FillLike(KernelContext& ctx) {
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

template <class T> void Sum(KernelContext& ctx) {
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
  DeviceOutput<T> out(ctx, "Out", 0, dims, InputVars(ctx, "X"));
  for (size_t i = 0; i < n; ++i) {
    Tensor x = ctx.Input("X", i);
    Accumulate<T><<<Blocks(x.numel()), kThreads>>>(x.data<T>(), out.get(), x.numel(), i > 0);
  }
  CheckLaunch("sum kernel");
  out.Finish();
}

template <class T> void Mean(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  if (x.numel() == 0) throw Error("mean of an empty tensor");
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, {1});
  SumOverPrePost(ElementOf<T>{x.data<T>()}, po, x.numel(), 1, 1, T(1) / T(x.numel()));
}

template <class T> void MeanGrad(KernelContext& ctx) {
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
