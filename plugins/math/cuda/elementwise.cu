// CUDA elementwise_{add,sub,mul,div,max,min,pow} and their gradients, fp32/fp64, with
// Fluid's broadcasting: X viewed as [pre, n, post] and Y as [n] (see ../broadcast.h).
#include "broadcast.cuh"
#include "ops.h"
#include "sum_reduce.cuh"

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
struct Pow {
  template <class T> __device__ static T Apply(T a, T b) { return pow(a, b); }
  template <class T> __device__ static T DX(T x, T y, T g) { return g * y * pow(x, y - T(1)); }
  template <class T> __device__ static T DY(T x, T y, T g) { return g * pow(x, y) * log(x); }
};

template <class Op, class T> struct ForwardAt {
  const T *x, *y;
  __device__ T operator()(int64_t i, int64_t yi) const { return Op::Apply(x[i], y[yi]); }
};

template <class Op, class T> struct GradXAt {
  const T *x, *y, *g;
  __device__ T operator()(int64_t i, int64_t yi) const { return Op::DX(x[i], y[yi], g[i]); }
};

// Y's gradient at element idx of X, summed over the positions Y[j] was broadcast to.
template <class Op, class T> struct GradYTerm {
  const T *x, *y, *g;
  __device__ T operator()(int64_t idx, int64_t j) const { return Op::DY(x[idx], y[j], g[idx]); }
};

template <class Op, class T> void Elementwise(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, x.dims());
  LaunchBroadcast(po, x.numel(), b, ForwardAt<Op, T>{px, py});
  CheckLaunch("elementwise kernel");
}

template <class Op, class T> void ElementwiseGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const int64_t total = x.numel();
  if (ctx.HasOutput("X@GRAD")) {
    Tensor dx = ctx.Output("X@GRAD");
    LaunchBroadcast(AllocateOnDevice<T>(ctx, dx, x.dims()), total, b,
                    GradXAt<Op, T>{x.data<T>(), y.data<T>(), g.data<T>()});
    CheckLaunch("elementwise X gradient kernel");
  }
  if (ctx.HasOutput("Y@GRAD")) {
    Tensor dy = ctx.Output("Y@GRAD");
    SumOverPrePost(GradYTerm<Op, T>{x.data<T>(), y.data<T>(), g.data<T>()}, AllocateOnDevice<T>(ctx, dy, y.dims()),
                   b.pre, b.n, b.post, T(1));
  }
}

template <class Op> void RegisterOne(Registrar& r, const std::string& type) {
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
  RegisterOne<Pow>(r, "elementwise_pow");
}

}  // namespace rill::math::cuda
