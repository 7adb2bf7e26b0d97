// CUDA elementwise_{add,sub,mul,div,max,min} and their gradients, fp32/fp64, with Fluid's
// broadcasting: X viewed as [pre, n, post] and Y as [n] (see ../broadcast.h).
#include "../broadcast.h"
#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

struct Add {
  template <class T> __device__ static T Apply(T a, T b) { return a + b; }
  template <class T> __device__ static T DX(T, T, T g) { return g; }
  template <class T> __device__ static T DY(T, T, T g) { return g; }
};
struct Sub {
  template <class T> __device__ static T Apply(T a, T b) { return a - b; }
  template <class T> __device__ static T DX(T, T, T g) { return g; }
  template <class T> __device__ static T DY(T, T, T g) { return -g; }
};
struct Mul {
  template <class T> __device__ static T Apply(T a, T b) { return a * b; }
  template <class T> __device__ static T DX(T, T y, T g) { return g * y; }
  template <class T> __device__ static T DY(T x, T, T g) { return g * x; }
};
struct Div {
  template <class T> __device__ static T Apply(T a, T b) { return a / b; }
  template <class T> __device__ static T DX(T, T y, T g) { return g / y; }
  template <class T> __device__ static T DY(T x, T y, T g) { return -g * x / (y * y); }
};
struct Max {
  template <class T> __device__ static T Apply(T a, T b) { return a > b ? a : b; }
  template <class T> __device__ static T DX(T x, T y, T g) { return x > y ? g : T(0); }
  template <class T> __device__ static T DY(T x, T y, T g) { return x > y ? T(0) : g; }
};
struct Min {
  template <class T> __device__ static T Apply(T a, T b) { return a < b ? a : b; }
  template <class T> __device__ static T DX(T x, T y, T g) { return x < y ? g : T(0); }
  template <class T> __device__ static T DY(T x, T y, T g) { return x < y ? T(0) : g; }
};

template <class Op, class T>
__global__ void Forward(const T* x, const T* y, T* out, int64_t total, int64_t n, int64_t post) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = Op::Apply(x[i], y[(i / post) % n]);
  }
}

template <class Op, class T>
__global__ void GradX(const T* x, const T* y, const T* g, T* dx, int64_t total, int64_t n, int64_t post) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(blockDim.x) * gridDim.x) {
    dx[i] = Op::DX(x[i], y[(i / post) % n], g[i]);
  }
}

// One thread per element of Y, summing over the pre and post positions it was broadcast to.
template <class Op, class T>
__global__ void GradY(const T* x, const T* y, const T* g, T* dy, int64_t pre, int64_t n, int64_t post) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(blockDim.x) * gridDim.x) {
    T sum = 0;
    for (int64_t i = 0; i < pre; ++i) {
      for (int64_t k = 0; k < post; ++k) {
        const int64_t idx = (i * n + j) * post + k;
        sum += Op::DY(x[idx], y[j], g[idx]);
      }
    }
    dy[j] = sum;
  }
}

template <class Op, class T>
void Elementwise(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, x.dims());
  const int64_t total = x.numel();
  Forward<Op, T><<<Blocks(total), kThreads>>>(px, py, po, total, b.n, b.post);
  CheckLaunch("elementwise kernel");
}

template <class Op, class T>
void ElementwiseGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const int64_t total = x.numel();
  if (ctx.HasOutput("X@GRAD")) {
    Tensor dx = ctx.Output("X@GRAD");
    GradX<Op, T><<<Blocks(total), kThreads>>>(x.data<T>(), y.data<T>(), g.data<T>(),
                                              AllocateOnDevice<T>(ctx, dx, x.dims()), total, b.n, b.post);
    CheckLaunch("elementwise X gradient kernel");
  }
  if (ctx.HasOutput("Y@GRAD")) {
    Tensor dy = ctx.Output("Y@GRAD");
    GradY<Op, T><<<Blocks(b.n), kThreads>>>(x.data<T>(), y.data<T>(), g.data<T>(),
                                            AllocateOnDevice<T>(ctx, dy, y.dims()), b.pre, b.n, b.post);
    CheckLaunch("elementwise Y gradient kernel");
  }
}

template <class Op>
void RegisterOne(Registrar& r, const std::string& type) {
  RegisterCudaFloat(r, type.c_str(), [](auto t) { return &Elementwise<Op, decltype(t)>; });
  RegisterCudaFloat(r, (type + "_grad").c_str(), [](auto t) { return &ElementwiseGrad<Op, decltype(t)>; });
}

}  // namespace

void RegisterElementwise(Registrar& r) {
  RegisterOne<Add>(r, "elementwise_add");
  RegisterOne<Sub>(r, "elementwise_sub");
  RegisterOne<Mul>(r, "elementwise_mul");
  RegisterOne<Div>(r, "elementwise_div");
  RegisterOne<Max>(r, "elementwise_max");
  RegisterOne<Min>(r, "elementwise_min");
}

}  // namespace rill::math::cuda
