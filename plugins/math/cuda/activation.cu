// CUDA relu, sigmoid, tanh, square and scale, and their gradients, fp32/fp64.
#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

// Eval: forward. Grad(v, g): X@GRAD from v (Out, or X for square) and Out@GRAD g.
struct Relu {
  template <class T> __device__ static T Eval(T x) { return x > T(0) ? x : T(0); }
  template <class T> __device__ static T Grad(T out, T g) { return out > T(0) ? g : T(0); }
  static constexpr const char* kGradInput = "Out";
};
struct Sigmoid {
  template <class T> __device__ static T Eval(T x) { return T(1) / (T(1) + exp(-x)); }
  template <class T> __device__ static T Grad(T out, T g) { return g * out * (T(1) - out); }
  static constexpr const char* kGradInput = "Out";
};
struct Tanh {
  template <class T> __device__ static T Eval(T x) { return tanh(x); }
  template <class T> __device__ static T Grad(T out, T g) { return g * (T(1) - out * out); }
  static constexpr const char* kGradInput = "Out";
};
struct Square {
  template <class T> __device__ static T Eval(T x) { return x * x; }
  template <class T> __device__ static T Grad(T x, T g) { return T(2) * x * g; }
  static constexpr const char* kGradInput = "X";
};

template <class Op, class T> __global__ void Map(const T* x, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = Op::Eval(x[i]);
  }
}

template <class Op, class T> __global__ void MapGrad(const T* v, const T* g, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    dx[i] = Op::Grad(v[i], g[i]);
  }
}

template <class T> __global__ void Affine(const T* x, T* out, int64_t n, T scale, T bias, bool bias_after) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = bias_after ? x[i] * scale + bias : (x[i] + bias) * scale;
  }
}

template <class Op, class T> void Unary(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, x.dims());
  Map<Op, T><<<Blocks(x.numel()), kThreads>>>(x.data<T>(), po, x.numel());
  CheckLaunch("activation kernel");
}

template <class Op, class T> void UnaryGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor v = ctx.Input(Op::kGradInput);
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, v.dims());
  MapGrad<Op, T><<<Blocks(v.numel()), kThreads>>>(v.data<T>(), g.data<T>(), pd, v.numel());
  CheckLaunch("activation gradient kernel");
}

template <class T> void Scale(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, x.dims());
  Affine<T><<<Blocks(x.numel()), kThreads>>>(x.data<T>(), po, x.numel(), T(ctx.Attr<float>("scale")),
                                             T(ctx.Attr<float>("bias")), ctx.Attr<bool>("bias_after_scale"));
  CheckLaunch("scale kernel");
}

template <class T> void ScaleGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, g.dims());
  Affine<T><<<Blocks(g.numel()), kThreads>>>(g.data<T>(), pd, g.numel(), T(ctx.Attr<float>("scale")), T(0), true);
  CheckLaunch("scale gradient kernel");
}

template <class Op> void RegisterOne(Registrar& r, const std::string& type) {
  RegisterCudaFloat(r, type.c_str(), [](auto t) { return &Unary<Op, decltype(t)>; });
  RegisterCudaFloat(r, (type + "_grad").c_str(), [](auto t) { return &UnaryGrad<Op, decltype(t)>; });
}

}  // namespace

void RegisterActivation(Registrar& r) {
  RegisterOne<Relu>(r, "relu");
  RegisterOne<Sigmoid>(r, "sigmoid");
  RegisterOne<Tanh>(r, "tanh");
  RegisterOne<Square>(r, "square");
  RegisterCudaFloat(r, "scale", [](auto t) { return &Scale<decltype(t)>; });
  RegisterCudaFloat(r, "scale_grad", [](auto t) { return &ScaleGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
