// elementwise_{add,sub,mul,div,max,min,pow}: Out = X op Y with Fluid's broadcasting (see
// broadcast.h), and their gradients. Same-shape operands of the vectorizable ops are one
// Eigen expression over the whole buffer; everything else walks Fluid's [pre, n, post] view.
#include <cmath>
#include <type_traits>

#include "broadcast.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Each op: Apply (forward), Eigen (vectorized forward, when kEigen), and the partial
// derivatives times the incoming gradient g: DX(x, y, g), DY(x, y, g).
struct Add {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a + b; }
  template <class T> static T DX(T, T, T g) { return g; }
  template <class T> static T DY(T, T, T g) { return g; }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a + b; }
};
struct Sub {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a - b; }
  template <class T> static T DX(T, T, T g) { return g; }
  template <class T> static T DY(T, T, T g) { return -g; }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a - b; }
};
struct Mul {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a * b; }
  template <class T> static T DX(T, T y, T g) { return g * y; }
  template <class T> static T DY(T x, T, T g) { return g * x; }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a * b; }
};
struct Div {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a / b; }
  template <class T> static T DX(T, T y, T g) { return g / y; }
  template <class T> static T DY(T x, T y, T g) { return -g * x / (y * y); }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a / b; }
};
struct Max {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a > b ? a : b; }
  template <class T> static T DX(T x, T y, T g) { return x > y ? g : T(0); }
  template <class T> static T DY(T x, T y, T g) { return x > y ? T(0) : g; }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a.max(b); }
};
struct Min {
  static constexpr bool kEigen = true;
  template <class T> static T Apply(T a, T b) { return a < b ? a : b; }
  template <class T> static T DX(T x, T y, T g) { return x < y ? g : T(0); }
  template <class T> static T DY(T x, T y, T g) { return x < y ? T(0) : g; }
  template <class A, class B> static auto Eigen(const A& a, const B& b) { return a.min(b); }
};
struct Pow {
  static constexpr bool kEigen = false;
  template <class T> static T Apply(T a, T b) {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
  template <class T> static T DX(T x, T y, T g) { return g * y * std::pow(x, y - T(1)); }
  template <class T> static T DY(T x, T y, T g) { return g * std::pow(x, y) * std::log(x); }
};

template <class Op, class T>
class Elementwise {
 public:
  explicit Elementwise(const OpInfo& op) : args_(op) {}

  // A running sum, a received value. An integer division by zero declines: Compute gives
  // the error.
  bool Scalar(const RillScalar* in, RillScalar* out) const {
    if constexpr (std::is_same_v<Op, Div> && std::is_integral_v<T>) {
      T y;
      if (ReadScalar(in[1], &y) && y == 0) return false;
    }
    return ScalarBinary<T, T>(in, out, [](T a, T b) { return Op::template Apply<T>(a, b); });
  }

  void Compute(KernelContext& ctx) {
    if constexpr (std::is_same_v<Op, Div> && std::is_integral_v<T>) {
      Tensor y = ctx.Input(args_.y);
      const T* py = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) {
        if (py[i] == 0) throw Error("integer division by zero (Y[" + std::to_string(i) + "] is 0)");
      }
    }
    if constexpr (Op::kEigen) {
      Tensor x = ctx.Input(args_.x);
      Tensor y = ctx.Input(args_.y);
      if (SameDims(x, y)) {
        // Read X and Y before Allocate: Out may be X or Y itself.
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* po = ctx.AllocateOutput<T>(args_.out, x.dims_data(), x.ndim());
        ParallelFor(x.numel(), 3.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
          const int64_t k = end - begin;
          VecMap<T>(po + begin, k) = Op::Eigen(ConstVecMap<T>(px + begin, k), ConstVecMap<T>(py + begin, k));
        });
        return;
      }
    }
    BinaryBroadcast<T, T>(ctx, args_, [](T a, T b) { return Op::template Apply<T>(a, b); });
  }

 private:
  const BinaryArgs args_;
};

// X@GRAD (shaped like X) and Y@GRAD (shaped like Y: summed over the broadcast dims), each
// only when asked for.
template <class Op, class T>
void ElementwiseGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const T* pg = g.data<T>();
  if (g.numel() != x.numel()) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(x.dims()));
  T* dx = ctx.HasOutput("X@GRAD") ? ctx.AllocateOutput<T>("X@GRAD", x.dims()) : nullptr;
  if (b.pre == 1 && b.post == 1) {
    // Y as many elements as X: no sum, each output one pass, in parallel chunks when large.
    T* dy = ctx.HasOutput("Y@GRAD") ? ctx.AllocateOutput<T>("Y@GRAD", y.dims()) : nullptr;
    const double bytes = (dx && dy ? 5.0 : 3.0) * sizeof(T) * b.n;
    ParallelFor(b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      if (dx) {
        for (int64_t j = begin; j < end; ++j) dx[j] = Op::DX(px[j], py[j], pg[j]);
      }
      if (dy) {
        for (int64_t j = begin; j < end; ++j) dy[j] = Op::DY(px[j], py[j], pg[j]);
      }
    });
    return;
  }
  std::vector<T> dy(ctx.HasOutput("Y@GRAD") ? static_cast<size_t>(y.numel()) : 0, T(0));
  // One loop per output: each then vectorizes (dX elementwise; dY elementwise along Y
  // when post is 1, as for operands of one shape, else a sum over `post` elements kept in
  // kLanes partial sums so the additions do not wait on each other).
  constexpr int64_t kLanes = 8;
  if (b.post == 1) {
    for (int64_t i = 0; i < b.pre; ++i) {
      const T* xs = px + i * b.n;
      const T* gs = pg + i * b.n;
      if (dx) {
        T* d = dx + i * b.n;
        for (int64_t j = 0; j < b.n; ++j) d[j] = Op::DX(xs[j], py[j], gs[j]);
      }
      if (!dy.empty()) {
        T* d = dy.data();
        for (int64_t j = 0; j < b.n; ++j) d[j] += Op::DY(xs[j], py[j], gs[j]);
      }
    }
  } else {
    for (int64_t i = 0; i < b.pre; ++i) {
      for (int64_t j = 0; j < b.n; ++j) {
        const T yv = py[j];
        const int64_t base = (i * b.n + j) * b.post;
        const T* xs = px + base;
        const T* gs = pg + base;
        if (dx) {
          T* d = dx + base;
          for (int64_t k = 0; k < b.post; ++k) d[k] = Op::DX(xs[k], yv, gs[k]);
        }
        if (!dy.empty()) {
          T lanes[kLanes] = {};
          int64_t k = 0;
          for (; k + kLanes <= b.post; k += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) lanes[l] += Op::DY(xs[k + l], yv, gs[k + l]);
          T sum = 0;
          for (; k < b.post; ++k) sum += Op::DY(xs[k], yv, gs[k]);
          for (T lane : lanes) sum += lane;
          dy[j] += sum;
        }
      }
    }
  }
  if (!dy.empty()) std::copy(dy.begin(), dy.end(), ctx.AllocateOutput<T>("Y@GRAD", y.dims()));
}

template <class Op>
void RegisterOne(Registrar& r, const char* type, const char* formula) {
  const std::string grad = std::string(type) + "_grad";
  const OpSchema schema = OpSchema(type)
      .Doc(std::string("Out = ") + formula + ", elementwise. Y's dims must match a contiguous run of X's "
           "starting at `axis` (Fluid's broadcasting); Out is shaped like X.")
      .Input("X", "left operand")
      .Input("Y", "right operand, broadcast to X")
      .Output("Out", "the result, shaped like X")
      .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end)")
      .KernelDtypeFrom("X")
      .Grad(grad, "X,Y,Out@GRAD", "X,Y");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpuStateful<RILL_MATH_NUMERIC_TYPES>(r, type, [](auto t) { return TypeTag<Elementwise<Op, decltype(t)>>{}; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &ElementwiseGrad<Op, decltype(t)>; });
}

}  // namespace

void RegisterElementwise(Registrar& r) {
  RegisterOne<Add>(r, "elementwise_add", "X + Y");
  RegisterOne<Sub>(r, "elementwise_sub", "X - Y");
  RegisterOne<Mul>(r, "elementwise_mul", "X * Y");
  RegisterOne<Div>(r, "elementwise_div", "X / Y");
  RegisterOne<Max>(r, "elementwise_max", "max(X, Y)");
  RegisterOne<Min>(r, "elementwise_min", "min(X, Y)");
  RegisterOne<Pow>(r, "elementwise_pow", "X ^ Y");
}

}  // namespace rill::math
