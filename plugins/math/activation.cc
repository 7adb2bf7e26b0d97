// Unary elementwise ops: relu, sigmoid, tanh, square, exp, log, sqrt, abs, relu6,
// leaky_relu, gelu, swish, hard_swish, hard_sigmoid, clip; scale (Out = scale * X + bias,
// or scale * (X + bias)); cast (Out = X converted to out_dtype); and their gradients.
#include <unsupported/Eigen/SpecialFunctions>

#include <cmath>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Each op is made from the kernel's context (it reads its attributes there); Forward(x, out)
// writes Out, Backward(v, g, dx) writes X@GRAD from the incoming gradient g and v, which is
// Out for ops whose derivative is cheapest from the output (kGradFromOut) and X otherwise.
// Formulas and attribute defaults are Fluid's.
template <class A> using S = typename A::Scalar;
// Piecewise formulas are written as lambdas over both operands' values (binaryExpr), not
// Eigen's select: select reads its chosen branch only, so it compiles to a branch per
// element, mispredicted on half of them for activations' mixed signs; with both values in
// hand the compiler makes it a vector blend.

struct Relu {
  static constexpr bool kGradFromOut = true;
  explicit Relu(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(0)); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = out.binaryExpr(g, [](S<A> o, S<A> gv) { return o > S<A>(0) ? gv : S<A>(0); });
  }
};
struct Sigmoid {
  static constexpr bool kGradFromOut = true;
  explicit Sigmoid(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = (S<A>(1) + (-x).exp()).inverse(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = g * out * (S<A>(1) - out);
  }
};
struct Tanh {
  static constexpr bool kGradFromOut = true;
  explicit Tanh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.tanh(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = g * (S<A>(1) - out.square());
  }
};
struct Square {
  static constexpr bool kGradFromOut = false;
  explicit Square(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.square(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = S<A>(2) * x * g; }
};
struct Exp {
  static constexpr bool kGradFromOut = true;
  explicit Exp(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.exp(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const { dx = g * out; }
};
struct Log {
  static constexpr bool kGradFromOut = false;
  explicit Log(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.log(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g / x; }
};
struct Sqrt {
  static constexpr bool kGradFromOut = true;
  explicit Sqrt(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.sqrt(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = S<A>(0.5) * g / out;
  }
};
struct Abs {
  static constexpr bool kGradFromOut = false;
  explicit Abs(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.abs(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * x.sign(); }
};
struct Relu6 {
  static constexpr bool kGradFromOut = true;
  explicit Relu6(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {}
  double t;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(0)).min(S<A>(t)); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> top = S<A>(t);
    dx = out.binaryExpr(g, [top](S<A> o, S<A> gv) { return o > S<A>(0) && o < top ? gv : S<A>(0); });
  }
};
struct LeakyRelu {
  static constexpr bool kGradFromOut = false;
  explicit LeakyRelu(KernelContext& ctx) : alpha(ctx.Attr<float>("alpha")) {}
  double alpha;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> a = S<A>(alpha);
    out = x.unaryExpr([a](S<A> v) { return v > S<A>(0) ? v : a * v; });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> a = S<A>(alpha);
    dx = x.binaryExpr(g, [a](S<A> v, S<A> gv) { return v > S<A>(0) ? gv : a * gv; });
  }
};
// gelu: x * Phi(x) with Phi the normal CDF, or (approximate) Phi by its tanh form.
struct Gelu {
  static constexpr bool kGradFromOut = false;
  explicit Gelu(KernelContext& ctx) : approximate(ctx.Attr<bool>("approximate")) {}
  bool approximate;
  static constexpr double kSqrtHalf = 0.70710678118654752440, kSqrt2OverPi = 0.79788456080286535588;
  static constexpr double kInvSqrt2Pi = 0.39894228040143267794, kCubic = 0.044715;
  template <class A> static auto Inner(const A& x) { return S<A>(kSqrt2OverPi) * (x + S<A>(kCubic) * x.cube()); }
  template <class A, class O> void Forward(const A& x, O out) const {
    if (approximate) out = S<A>(0.5) * x * (S<A>(1) + Inner(x).tanh());
    else out = S<A>(0.5) * x * (S<A>(1) + (S<A>(kSqrtHalf) * x).erf());
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    if (approximate) {
      const auto t = Inner(x).tanh().eval();
      dx = g * (S<A>(0.5) * (S<A>(1) + t) +
                S<A>(0.5) * x * (S<A>(1) - t.square()) * S<A>(kSqrt2OverPi) * (S<A>(1) + S<A>(3 * kCubic) * x.square()));
    } else {
      dx = g * (S<A>(0.5) * (S<A>(1) + (S<A>(kSqrtHalf) * x).erf()) +
                x * (S<A>(-0.5) * x.square()).exp() * S<A>(kInvSqrt2Pi));
    }
  }
};
// swish: x * sigmoid(beta x).
struct Swish {
  static constexpr bool kGradFromOut = false;
  explicit Swish(KernelContext& ctx) : beta(ctx.Attr<float>("beta")) {}
  double beta;
  template <class A> auto Sig(const A& x) const { return (S<A>(1) + (S<A>(-beta) * x).exp()).inverse(); }
  template <class A, class O> void Forward(const A& x, O out) const { out = x * Sig(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const auto s = Sig(x).eval();
    dx = g * (s + S<A>(beta) * x * s * (S<A>(1) - s));
  }
};
// hard_swish: x * clip(x + offset, 0, threshold) / scale.
struct HardSwish {
  static constexpr bool kGradFromOut = false;
  explicit HardSwish(KernelContext& ctx)
      : t(ctx.Attr<float>("threshold")), scale(ctx.Attr<float>("scale")), offset(ctx.Attr<float>("offset")) {}
  double t, scale, offset;
  template <class A, class O> void Forward(const A& x, O out) const {
    out = x * (x + S<A>(offset)).max(S<A>(0)).min(S<A>(t)) / S<A>(scale);
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const auto shifted = (x + S<A>(offset)).eval();
    const auto inside = (shifted > S<A>(0) && shifted < S<A>(t)).template cast<S<A>>();
    dx = g * (shifted.max(S<A>(0)).min(S<A>(t)) + x * inside) / S<A>(scale);
  }
};
// hard_sigmoid: clip(slope * x + offset, 0, 1).
struct HardSigmoid {
  static constexpr bool kGradFromOut = true;
  explicit HardSigmoid(KernelContext& ctx) : slope(ctx.Attr<float>("slope")), offset(ctx.Attr<float>("offset")) {}
  double slope, offset;
  template <class A, class O> void Forward(const A& x, O out) const {
    out = (S<A>(slope) * x + S<A>(offset)).max(S<A>(0)).min(S<A>(1));
  }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> k = S<A>(slope);
    dx = out.binaryExpr(g, [k](S<A> o, S<A> gv) { return o > S<A>(0) && o < S<A>(1) ? k * gv : S<A>(0); });
  }
};
// clip: X limited to [min, max].
struct Clip {
  static constexpr bool kGradFromOut = false;
  explicit Clip(KernelContext& ctx) : lo(ctx.Attr<float>("min")), hi(ctx.Attr<float>("max")) {
    if (lo > hi) throw Error("clip: min (" + std::to_string(lo) + ") is greater than max (" + std::to_string(hi) + ")");
  }
  double lo, hi;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(lo)).min(S<A>(hi)); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> l = S<A>(lo), h = S<A>(hi);
    dx = x.binaryExpr(g, [l, h](S<A> v, S<A> gv) { return v > l && v < h ? gv : S<A>(0); });
  }
};

template <class Op, class T>
void Unary(KernelContext& ctx) {
  const Op op(ctx);
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  ParallelFor(x.numel(), 2.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
    op.Forward(ConstVecMap<T>(px + begin, end - begin), VecMap<T>(po + begin, end - begin));
  });
}

template <class Op, class T>
void UnaryGrad(KernelContext& ctx) {
  const Op op(ctx);
  Tensor v = ctx.Input(Op::kGradFromOut ? "Out" : "X");
  Tensor g = ctx.Input("Out@GRAD");
  const T* pv = v.data<T>();
  const T* pg = g.data<T>();
  if (g.numel() != v.numel()) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like " + (Op::kGradFromOut ? "Out " : "X ") +
                DimsString(v.dims()));
  }
  T* dx = ctx.AllocateOutput<T>("X@GRAD", v.dims_data(), v.ndim());
  ParallelFor(v.numel(), 3.0 * sizeof(T) * v.numel(), [&](int64_t, int64_t begin, int64_t end) {
    const int64_t k = end - begin;
    op.Backward(ConstVecMap<T>(pv + begin, k), ConstVecMap<T>(pg + begin, k), VecMap<T>(dx + begin, k));
  });
}

// Registers `type` and its gradient; `attrs` adds the op's attributes to its schema (the
// gradient's schema gets them too, as its kernel reads them).
template <class Op, class... Ts>
void AddUnary(Registrar& r, const char* type, const std::string& formula,
              OpSchema& (*attrs)(OpSchema&) = [](OpSchema& s) -> OpSchema& { return s; }) {
  const std::string grad = std::string(type) + "_grad";
  OpSchema schema = OpSchema(type)
      .Doc("Out = " + formula + ", elementwise.")
      .Input("X", "input")
      .Output("Out", "result, shaped like X")
      .KernelDtypeFrom("X")
      .Grad(grad, Op::kGradFromOut ? "Out,Out@GRAD" : "X,Out@GRAD", "X");
  attrs(schema);
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<Ts...>(r, type, [](auto t) { return &Unary<Op, decltype(t)>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &UnaryGrad<Op, decltype(t)>; });
}

template <class T>
void ScaleGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", g.dims_data(), g.ndim());
  VecMap<T>(dx, g.numel()) = ConstVecMap<T>(pg, g.numel()) * static_cast<T>(ctx.Attr<float>("scale"));
}

// X@GRAD = Out@GRAD converted back to X's dtype.
template <class From>
void CastGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  VisitDataType<float, double>(x.dtype(), "cast_grad X", [&](auto to) {
    using To = decltype(to);
    VisitDataType<float, double>(g.dtype(), "cast_grad Out@GRAD", [&](auto from) {
      using G = decltype(from);
      const G* pg = g.data<G>();
      To* p = dx.Allocate<To>(g.dims());
      for (int64_t i = 0; i < g.numel(); ++i) p[i] = static_cast<To>(pg[i]);
    });
  });
}

template <class T>
void Scale(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const double scale = ctx.Attr<float>("scale");
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  const T s = static_cast<T>(scale), b = static_cast<T>(bias);
  if (after) {
    VecMap<T>(po, x.numel()) = ConstVecMap<T>(px, x.numel()) * s + b;
  } else {
    VecMap<T>(po, x.numel()) = (ConstVecMap<T>(px, x.numel()) + b) * s;
  }
}

template <class From>
void Cast(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const auto out_dtype = static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype"));
  const From* px = x.data<From>();
  Tensor out = ctx.Output("Out");
  VisitDataType<bool, int32_t, int64_t, float, double>(out_dtype, "cast out_dtype", [&](auto to) {
    using To = decltype(to);
    // Out may be X: read everything before the allocation can replace X's memory.
    std::vector<To> converted(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) converted[i] = static_cast<To>(px[i]);
    To* po = out.Allocate<To>(x.dims());
    std::copy(converted.begin(), converted.end(), po);
  });
}

}  // namespace

void RegisterActivation(Registrar& r) {
  AddUnary<Relu, float, double>(r, "relu", "max(X, 0)");
  AddUnary<Sigmoid, float, double>(r, "sigmoid", "1 / (1 + exp(-X))");
  AddUnary<Tanh, float, double>(r, "tanh", "tanh(X)");
  AddUnary<Square, RILL_MATH_NUMERIC_TYPES>(r, "square", "X * X");
  AddUnary<Exp, float, double>(r, "exp", "exp(X)");
  AddUnary<Log, float, double>(r, "log", "ln(X)");
  AddUnary<Sqrt, float, double>(r, "sqrt", "sqrt(X)");
  AddUnary<Abs, float, double>(r, "abs", "|X|");
  AddUnary<Relu6, float, double>(r, "relu6", "min(max(X, 0), threshold)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("threshold", 6.0, "the upper limit");
  });
  AddUnary<LeakyRelu, float, double>(r, "leaky_relu", "X if X > 0, else alpha * X", [](OpSchema& s) -> OpSchema& {
    return s.Attr("alpha", 0.02, "the slope below 0");
  });
  AddUnary<Gelu, float, double>(r, "gelu", "X * Phi(X), Phi the standard normal CDF (approximate: its tanh form)",
                                [](OpSchema& s) -> OpSchema& {
                                  return s.Attr("approximate", false, "use 0.5 (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3)))");
                                });
  AddUnary<Swish, float, double>(r, "swish", "X * sigmoid(beta * X)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("beta", 1.0, "the sigmoid's scale");
  });
  AddUnary<HardSwish, float, double>(r, "hard_swish", "X * min(max(X + offset, 0), threshold) / scale",
                                     [](OpSchema& s) -> OpSchema& {
                                       return s.Attr("threshold", 6.0, "the upper limit of X + offset")
                                           .Attr("scale", 6.0, "the divisor")
                                           .Attr("offset", 3.0, "added to X");
                                     });
  AddUnary<HardSigmoid, float, double>(r, "hard_sigmoid", "min(max(slope * X + offset, 0), 1)",
                                       [](OpSchema& s) -> OpSchema& {
                                         return s.Attr("slope", 0.2, "the slope").Attr("offset", 0.5, "the offset");
                                       });
  AddUnary<Clip, float, double>(r, "clip", "min(max(X, min), max)", [](OpSchema& s) -> OpSchema& {
    return s.RequiredAttr("min", RILL_ATTR_FLOAT, "the lower limit")
        .RequiredAttr("max", RILL_ATTR_FLOAT, "the upper limit (at least min)");
  });

  const OpSchema scale = OpSchema("scale")
      .Doc("Out = scale * X + bias (bias_after_scale) or scale * (X + bias).")
      .Input("X", "input")
      .Output("Out", "result, shaped like X")
      .Attr("scale", 1.0, "multiplier")
      .Attr("bias", 0.0, "offset")
      .Attr("bias_after_scale", true, "add bias after scaling (true) or before (false)")
      .KernelDtypeFrom("X")
      .Grad("scale_grad", "Out@GRAD", "X");
  r.Op(scale);
  r.Op(scale.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "scale", [](auto t) { return &Scale<decltype(t)>; });
  RegisterCpu<float, double>(r, "scale_grad", [](auto t) { return &ScaleGrad<decltype(t)>; });

  const OpSchema cast = OpSchema("cast")
      .Doc("Out = X converted to out_dtype (C++ conversion: floats truncate toward zero into ints).")
      .Input("X", "input")
      .Output("Out", "X as out_dtype")
      .Attr("in_dtype", int64_t{RILL_FP32}, "X's dtype (informational; X's actual dtype is used)")
      .Attr("out_dtype", int64_t{RILL_FP32}, "dtype of Out")
      .KernelDtypeFrom("X")
      .Grad("cast_grad", "X,Out@GRAD", "X");
  r.Op(cast);
  r.Op(cast.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "cast", [](auto t) { return &Cast<decltype(t)>; });
  RegisterCpu<float, double>(r, "cast_grad", [](auto t) { return &CastGrad<decltype(t)>; });
}

}  // namespace rill::math
