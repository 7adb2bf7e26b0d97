// Unary elementwise ops: Fluid's activations (relu, sigmoid, tanh, square, exp, log, sqrt,
// abs, relu6, leaky_relu, gelu, swish, hard_swish, hard_sigmoid, clip, silu, logsigmoid,
// tanh_shrink, softshrink, hard_shrink, thresholded_relu, brelu, soft_relu, elu, softplus,
// softsign, mish, selu, stanh, pow, reciprocal, rsqrt, expm1, log1p, log2, log10, sin, cos,
// floor, ceil, round, sign); scale (Out = scale * X + bias, or scale * (X + bias)); cast (Out = X
// converted to out_dtype); and their gradients.
#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <cmath>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Each op is made from the kernel's context (it reads its attributes there); Forward(x, out)
// writes Out, Backward(v, g, dx) writes X@GRAD from the incoming gradient g and v, the
// forward value its gradient op reads (kGradFrom: X, or Out where the derivative is
// cheapest from the output, as Fluid's gradient ops read them; for a derivative of zero
// almost everywhere, nothing, and v is g). Formulas and attribute defaults are Fluid's.
enum class GradFrom { kX, kOut, kNothing };
template <class A> using S = typename A::Scalar;
// Piecewise formulas are written as lambdas over both operands' values (binaryExpr), not
// Eigen's select: select reads its chosen branch only, so it compiles to a branch per
// element, mispredicted on half of them for activations' mixed signs; with both values in
// hand the compiler makes it a vector blend (given the flags CMakeLists.txt compiles this
// file with: without them GCC keeps the branch).

struct Relu {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Relu(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(0)); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = out.binaryExpr(g, [](S<A> o, S<A> gv) { return o > S<A>(0) ? gv : S<A>(0); });
  }
};
struct Sigmoid {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Sigmoid(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = (S<A>(1) + (-x).exp()).inverse(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = g * out * (S<A>(1) - out);
  }
};
struct Tanh {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Tanh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.tanh(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = g * (S<A>(1) - out.square());
  }
};
struct Square {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Square(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.square(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = S<A>(2) * x * g; }
};
struct Exp {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Exp(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.exp(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const { dx = g * out; }
};
struct Log {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Log(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.log(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g / x; }
};
struct Sqrt {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Sqrt(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.sqrt(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = S<A>(0.5) * g / out;
  }
};
struct Abs {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Abs(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.abs(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * x.sign(); }
};
struct Relu6 {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Relu6(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {}
  double t;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(0)).min(S<A>(t)); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> top = S<A>(t);
    dx = out.binaryExpr(g, [top](S<A> o, S<A> gv) { return o > S<A>(0) && o < top ? gv : S<A>(0); });
  }
};
struct LeakyRelu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
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
  static constexpr GradFrom kGradFrom = GradFrom::kX;
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
  static constexpr GradFrom kGradFrom = GradFrom::kX;
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
  static constexpr GradFrom kGradFrom = GradFrom::kX;
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
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
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
// clip: X limited to [min, max], each from its tensor (Min, Max) when given.
struct Clip {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Clip(KernelContext& ctx)
      : lo(ScalarFromInput<double, float>(ctx, "Min", "min")), hi(ScalarFromInput<double, float>(ctx, "Max", "max")) {
    if (lo > hi) throw Error("clip: min (" + std::to_string(lo) + ") is greater than max (" + std::to_string(hi) + ")");
  }
  double lo, hi;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(lo)).min(S<A>(hi)); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> l = S<A>(lo), h = S<A>(hi);
    dx = x.binaryExpr(g, [l, h](S<A> v, S<A> gv) { return v > l && v < h ? gv : S<A>(0); });
  }
};

// silu: x * sigmoid(x).
struct Silu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Silu(KernelContext&) {}
  template <class A> static auto Sig(const A& x) { return (S<A>(1) + (-x).exp()).inverse(); }
  template <class A, class O> void Forward(const A& x, O out) const { out = x * Sig(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const auto s = Sig(x).eval();
    dx = g * s * (S<A>(1) + x * (S<A>(1) - s));
  }
};
// logsigmoid: ln(sigmoid(x)) = min(x, 0) - ln(1 + exp(-|x|)), which neither overflows nor
// rounds to ln(0); its derivative sigmoid(-x) = 1 / (1 + exp(x)) tends to 0 for large x.
struct LogSigmoid {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit LogSigmoid(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    out = x.min(S<A>(0)) - (-x.abs()).exp().log1p();
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * (S<A>(1) + x.exp()).inverse();
  }
};
// tanh_shrink: x - tanh(x).
struct TanhShrink {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit TanhShrink(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x - x.tanh(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * x.tanh().square();
  }
};
// softshrink: x - lambda above lambda, x + lambda below -lambda, 0 between.
struct SoftShrink {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit SoftShrink(KernelContext& ctx) : lambda(ctx.Attr<float>("lambda")) {}
  double lambda;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> l = S<A>(lambda);
    out = x.unaryExpr([l](S<A> v) { return v > l ? v - l : v < -l ? v + l : S<A>(0); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> l = S<A>(lambda);
    dx = x.binaryExpr(g, [l](S<A> v, S<A> gv) { return v > l || v < -l ? gv : S<A>(0); });
  }
};
// hard_shrink: x where |x| > threshold, else 0.
struct HardShrink {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit HardShrink(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {}
  double t;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> k = S<A>(t);
    out = x.unaryExpr([k](S<A> v) { return v > k || v < -k ? v : S<A>(0); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> k = S<A>(t);
    dx = x.binaryExpr(g, [k](S<A> v, S<A> gv) { return v > k || v < -k ? gv : S<A>(0); });
  }
};
// thresholded_relu: x above threshold, else 0.
struct ThresholdedRelu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit ThresholdedRelu(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {}
  double t;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> k = S<A>(t);
    out = x.unaryExpr([k](S<A> v) { return v > k ? v : S<A>(0); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> k = S<A>(t);
    dx = x.binaryExpr(g, [k](S<A> v, S<A> gv) { return v > k ? gv : S<A>(0); });
  }
};
// brelu: x limited to [t_min, t_max].
struct BRelu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit BRelu(KernelContext& ctx) : lo(ctx.Attr<float>("t_min")), hi(ctx.Attr<float>("t_max")) {
    if (lo > hi) throw Error("brelu: t_min (" + std::to_string(lo) + ") is greater than t_max (" + std::to_string(hi) + ")");
  }
  double lo, hi;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(lo)).min(S<A>(hi)); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> l = S<A>(lo), h = S<A>(hi);
    dx = x.binaryExpr(g, [l, h](S<A> v, S<A> gv) { return v > l && v < h ? gv : S<A>(0); });
  }
};
// soft_relu: ln(1 + exp(x clipped to [-threshold, threshold])). Its gradient, from Out as
// Fluid's: sigmoid(x) = 1 - exp(-Out), and 0 where x was clipped, which is where Out is
// Soft(-threshold) or Soft(threshold): the same function of the same value in T, so a
// clipped x's Out equals its bound to the bit.
struct SoftRelu {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit SoftRelu(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {
    if (!(t > 0)) throw Error("soft_relu: threshold (" + std::to_string(t) + ") is not positive");
  }
  double t;
  template <class T> static T Soft(T v) { return std::log1p(std::exp(v)); }
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> k = S<A>(t);
    out = x.unaryExpr([k](S<A> v) { return Soft(std::min(std::max(v, -k), k)); });
  }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> lo = Soft(S<A>(-t)), hi = Soft(S<A>(t));
    dx = out.binaryExpr(g, [lo, hi](S<A> o, S<A> gv) { return o > lo && o < hi ? gv * -std::expm1(-o) : S<A>(0); });
  }
};
// elu: x above 0, else alpha * (exp(x) - 1).
struct Elu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Elu(KernelContext& ctx) : alpha(ctx.Attr<float>("alpha")) {}
  double alpha;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> a = S<A>(alpha);
    out = x.unaryExpr([a](S<A> v) { return v > S<A>(0) ? v : a * std::expm1(v); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> a = S<A>(alpha);
    dx = x.binaryExpr(g, [a](S<A> v, S<A> gv) { return v > S<A>(0) ? gv : gv * a * std::exp(v); });
  }
};
// softplus: ln(1 + exp(beta * x)) / beta, or x where beta * x > threshold.
struct Softplus {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Softplus(KernelContext& ctx) : beta(ctx.Attr<float>("beta")), t(ctx.Attr<float>("threshold")) {
    if (beta == 0) throw Error("softplus: beta is 0");
  }
  double beta, t;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> b = S<A>(beta), k = S<A>(t);
    out = x.unaryExpr([b, k](S<A> v) { return b * v > k ? v : std::log1p(std::exp(b * v)) / b; });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> b = S<A>(beta), k = S<A>(t);
    dx = x.binaryExpr(g, [b, k](S<A> v, S<A> gv) { return b * v > k ? gv : gv / (S<A>(1) + std::exp(-b * v)); });
  }
};
// softsign: x / (1 + |x|).
struct Softsign {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Softsign(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x / (S<A>(1) + x.abs()); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) + x.abs()).square();
  }
};
// mish: x * tanh(softplus(x)), softplus(x) being x above threshold.
struct Mish {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Mish(KernelContext& ctx) : t(ctx.Attr<float>("threshold")) {}
  double t;
  // softplus as Paddle computes it: x above the threshold, exp(x) below its negative.
  template <class V> static V Softplus(V v, V k) { return v > k ? v : v < -k ? std::exp(v) : std::log1p(std::exp(v)); }
  template <class V> static V SoftplusGrad(V v, V k) {
    return v > k ? V(1) : v < -k ? std::exp(v) : V(1) / (V(1) + std::exp(-v));
  }
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> k = S<A>(t);
    out = x.unaryExpr([k](S<A> v) { return v * std::tanh(Softplus(v, k)); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> k = S<A>(t);
    dx = x.binaryExpr(g, [k](S<A> v, S<A> gv) {
      const S<A> th = std::tanh(Softplus(v, k));
      return gv * (th + v * (S<A>(1) - th * th) * SoftplusGrad(v, k));
    });
  }
};
// selu: scale * (x above 0, else alpha * (exp(x) - 1)); its gradient from Out, as Fluid's.
struct Selu {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Selu(KernelContext& ctx) : scale(ctx.Attr<float>("scale")), alpha(ctx.Attr<float>("alpha")) {
    if (!(scale > 0) || !(alpha > 0)) {
      throw Error("selu: scale (" + std::to_string(scale) + ") and alpha (" + std::to_string(alpha) +
                  ") must be positive");
    }
  }
  double scale, alpha;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> s = S<A>(scale), a = S<A>(alpha);
    out = x.unaryExpr([s, a](S<A> v) { return s * (v > S<A>(0) ? v : a * std::expm1(v)); });
  }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> s = S<A>(scale), sa = S<A>(scale * alpha);
    dx = out.binaryExpr(g, [s, sa](S<A> o, S<A> gv) { return o > S<A>(0) ? gv * s : gv * (o + sa); });
  }
};
// stanh: scale_b * tanh(scale_a * x).
struct STanh {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit STanh(KernelContext& ctx) : a(ctx.Attr<float>("scale_a")), b(ctx.Attr<float>("scale_b")) {}
  double a, b;
  template <class A, class O> void Forward(const A& x, O out) const { out = S<A>(b) * (S<A>(a) * x).tanh(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * S<A>(a * b) * (S<A>(1) - (S<A>(a) * x).tanh().square());
  }
};
// pow: x ^ factor, the factor from FactorTensor (one fp32 value) when the op has it.
struct Pow {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Pow(KernelContext& ctx) : factor(ctx.Attr<float>("factor")) {
    if (ctx.HasInput("FactorTensor")) {
      Tensor f = ctx.Input("FactorTensor");
      if (f.numel() != 1 || f.dtype() != RILL_FP32) {
        throw Error("pow: FactorTensor must be one fp32 value, not " + std::string(DataTypeName(f.dtype())) + " " +
                    DimsString(f.dims()));
      }
      factor = f.data<float>()[0];
    }
  }
  double factor;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.pow(S<A>(factor)); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * S<A>(factor) * x.pow(S<A>(factor - 1));
  }
};
struct Reciprocal {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Reciprocal(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.inverse(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = -g * out.square();
  }
};
struct Rsqrt {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Rsqrt(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.rsqrt(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = S<A>(-0.5) * g * out.cube();
  }
};
struct Expm1 {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Expm1(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.expm1(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    dx = g * (out + S<A>(1));
  }
};
struct Log1p {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Log1p(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.log1p(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) + x);
  }
};
// log2 and log10: ln(x) / ln(base).
template <int kBase>
struct LogBase {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit LogBase(KernelContext&) {}
  static double LnBase() { return std::log(static_cast<double>(kBase)); }
  template <class A, class O> void Forward(const A& x, O out) const { out = x.log() / S<A>(LnBase()); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (x * S<A>(LnBase()));
  }
};
struct Sin {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Sin(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.sin(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * x.cos(); }
};
struct Cos {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Cos(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.cos(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = -g * x.sin(); }
};
struct Tan {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Tan(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.tan(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / x.cos().square();
  }
};
struct Asin {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Asin(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.asin(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) - x.square()).sqrt();
  }
};
struct Acos {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Acos(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.acos(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = -g / (S<A>(1) - x.square()).sqrt();
  }
};
struct Atan {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Atan(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.atan(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) + x.square());
  }
};
struct Sinh {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Sinh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.sinh(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * x.cosh(); }
};
struct Cosh {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Cosh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.cosh(); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * x.sinh(); }
};
// floor, ceil, round (halves away from zero) and sign: steps, whose gradient is 0 (as
// Fluid's).
template <class Step>
struct Rounding {
  static constexpr GradFrom kGradFrom = GradFrom::kNothing;
  explicit Rounding(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    out = x.unaryExpr([](S<A> v) { return Step()(v); });
  }
  template <class A, class B, class O> void Backward(const A&, const B& g, O dx) const { dx = g * S<A>(0); }
};
struct SignStep {
  template <class T> T operator()(T v) const { return static_cast<T>((v > T(0)) - (v < T(0))); }
};
struct FloorStep {
  template <class T> T operator()(T v) const { return std::floor(v); }
};
struct CeilStep {
  template <class T> T operator()(T v) const { return std::ceil(v); }
};
struct RoundStep {
  template <class T> T operator()(T v) const { return std::round(v); }
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

// The forward slot a gradient op of kGradFrom `from` reads, and the slots it reads in all.
constexpr const char* GradValueSlot(GradFrom from) {
  return from == GradFrom::kX ? "X" : from == GradFrom::kOut ? "Out" : "Out@GRAD";
}
constexpr const char* GradInputs(GradFrom from) {
  return from == GradFrom::kX ? "X,Out@GRAD" : from == GradFrom::kOut ? "Out,Out@GRAD" : "Out@GRAD";
}

template <class Op, class T>
void UnaryGrad(KernelContext& ctx) {
  const Op op(ctx);
  Tensor v = ctx.Input(GradValueSlot(Op::kGradFrom));
  Tensor g = ctx.Input("Out@GRAD");
  const T* pv = v.data<T>();
  const T* pg = g.data<T>();
  if (g.numel() != v.numel()) {
    throw Error(std::string("Out@GRAD ") + DimsString(g.dims()) + " is not shaped like " +
                GradValueSlot(Op::kGradFrom) + " " + DimsString(v.dims()));
  }
  T* dx = ctx.AllocateOutput<T>("X@GRAD", v.dims_data(), v.ndim());
  ParallelFor(v.numel(), 3.0 * sizeof(T) * v.numel(), [&](int64_t, int64_t begin, int64_t end) {
    const int64_t k = end - begin;
    op.Backward(ConstVecMap<T>(pv + begin, k), ConstVecMap<T>(pg + begin, k), VecMap<T>(dx + begin, k));
  });
}

// Registers `type` and its gradient; `attrs` adds the op's attributes to its schema (the
// gradient's schema gets them too, as its kernel reads them), and may declare the gradient
// again where it reads more than GradInputs.
template <class Op, class... Ts>
void AddUnary(Registrar& r, const char* type, const std::string& formula,
              OpSchema& (*attrs)(OpSchema&) = [](OpSchema& s) -> OpSchema& { return s; }) {
  const std::string grad = std::string(type) + "_grad";
  OpSchema schema = OpSchema(type)
      .Doc("Out = " + formula + ", elementwise.")
      .Input("X", "input")
      .Output("Out", "result, shaped like X")
      .KernelDtypeFrom("X")
      .Grad(grad, GradInputs(Op::kGradFrom), "X");
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
  VecMap<T>(dx, g.numel()) = ConstVecMap<T>(pg, g.numel()) * ScalarFromInput<T, float>(ctx, "ScaleTensor", "scale");
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

// scale of SelectedRows X: SelectedRows of the same rows, their values scaled.
template <class T>
void Scale(KernelContext& ctx) {
  const double scale = ScalarFromInput<double, float>(ctx, "ScaleTensor", "scale");
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T s = static_cast<T>(scale), b = static_cast<T>(bias);
  const auto write = [&](const T* px, T* po, int64_t n) {
    if (after) {
      VecMap<T>(po, n) = ConstVecMap<T>(px, n) * s + b;
    } else {
      VecMap<T>(po, n) = (ConstVecMap<T>(px, n) + b) * s;
    }
  };
  if (Variable xv = ctx.InputVar("X"); xv.IsSelectedRows()) {
    const Variable::SelectedRows sr = xv.selected_rows();
    // Out may be X: its rows and values are read before Out is remade.
    const std::vector<int64_t> rows(sr.rows, sr.rows + sr.count), dims = sr.value.dims();
    const std::vector<T> values(sr.value.data<T>(), sr.value.data<T>() + sr.value.numel());
    Tensor out = ctx.OutputVar("Out").SetSelectedRows(rows.data(), rows.size(), sr.height);
    write(values.data(), out.Allocate<T>(dims), static_cast<int64_t>(values.size()));
    return;
  }
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  write(px, ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim()), x.numel());
}

template <class From>
void Cast(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const auto out_dtype = static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype"));
  const From* px = x.data<From>();
  Tensor out = ctx.Output("Out");
  // Out may be X: read everything before the allocation can replace X's memory.
  if (out_dtype == RILL_FP16) {  // fp16 through Eigen's half, rounding to nearest even
    std::vector<Eigen::half> converted(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) converted[i] = Eigen::half(static_cast<float>(px[i]));
    std::copy(converted.begin(), converted.end(), static_cast<Eigen::half*>(out.Allocate(RILL_FP16, x.dims())));
    return;
  }
  VisitDataType<bool, int32_t, int64_t, float, double>(out_dtype, "cast out_dtype", [&](auto to) {
    using To = decltype(to);
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
    return s.Input("Min", "the lower limit, one element; replaces min", RILL_SLOT_OPTIONAL)
        .Input("Max", "the upper limit, one element; replaces max", RILL_SLOT_OPTIONAL)
        .RequiredAttr("min", RILL_ATTR_FLOAT, "the lower limit")
        .RequiredAttr("max", RILL_ATTR_FLOAT, "the upper limit (at least min)")
        .Grad("clip_grad", "X,Min,Max,Out@GRAD", "X");
  });

  AddUnary<Silu, float, double>(r, "silu", "X * sigmoid(X)");
  AddUnary<LogSigmoid, float, double>(r, "logsigmoid", "ln(1 / (1 + exp(-X)))");
  AddUnary<TanhShrink, float, double>(r, "tanh_shrink", "X - tanh(X)");
  AddUnary<SoftShrink, float, double>(r, "softshrink", "X - lambda if X > lambda, X + lambda if X < -lambda, else 0",
                                      [](OpSchema& s) -> OpSchema& { return s.Attr("lambda", 0.5, "the offset"); });
  AddUnary<HardShrink, float, double>(r, "hard_shrink", "X if |X| > threshold, else 0", [](OpSchema& s) -> OpSchema& {
    return s.Attr("threshold", 0.5, "the smallest |X| kept");
  });
  AddUnary<ThresholdedRelu, float, double>(r, "thresholded_relu", "X if X > threshold, else 0",
                                           [](OpSchema& s) -> OpSchema& {
                                             return s.Attr("threshold", 1.0, "the smallest X kept");
                                           });
  AddUnary<BRelu, float, double>(r, "brelu", "min(max(X, t_min), t_max)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("t_min", 0.0, "the lower limit").Attr("t_max", 24.0, "the upper limit (at least t_min)");
  });
  AddUnary<SoftRelu, float, double>(r, "soft_relu", "ln(1 + exp(min(max(X, -threshold), threshold)))",
                                    [](OpSchema& s) -> OpSchema& {
                                      return s.Attr("threshold", 40.0, "X is clipped to [-threshold, threshold]");
                                    });
  AddUnary<Elu, float, double>(r, "elu", "X if X > 0, else alpha * (exp(X) - 1)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("alpha", 1.0, "the scale below 0");
  });
  AddUnary<Softplus, float, double>(r, "softplus", "ln(1 + exp(beta * X)) / beta, or X where beta * X > threshold",
                                    [](OpSchema& s) -> OpSchema& {
                                      return s.Attr("beta", 1.0, "the scale (not 0)")
                                          .Attr("threshold", 20.0, "past it, Out is X");
                                    });
  AddUnary<Softsign, float, double>(r, "softsign", "X / (1 + |X|)");
  AddUnary<Mish, float, double>(r, "mish", "X * tanh(softplus(X)), softplus(X) = X if X > threshold else ln(1 + exp(X))",
                                [](OpSchema& s) -> OpSchema& {
                                  return s.Attr("threshold", 20.0, "past it, softplus(X) is X");
                                });
  AddUnary<Selu, float, double>(r, "selu", "scale * (X if X > 0, else alpha * (exp(X) - 1))",
                                [](OpSchema& s) -> OpSchema& {
                                  return s.Attr("scale", 1.0507009873554804934193349852946, "the scale (positive)")
                                      .Attr("alpha", 1.6732632423543772848170429916717, "the scale below 0 (positive)");
                                });
  AddUnary<STanh, float, double>(r, "stanh", "scale_b * tanh(scale_a * X)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("scale_a", 2.0 / 3.0, "the scale of X").Attr("scale_b", 1.7159, "the scale of Out");
  });
  AddUnary<Pow, float, double>(r, "pow", "X ^ factor", [](OpSchema& s) -> OpSchema& {
    return s.Input("FactorTensor", "the factor, one fp32 value; replaces the attribute", RILL_SLOT_OPTIONAL)
        .Attr("factor", 1.0, "the exponent")
        .Grad("pow_grad", "X,FactorTensor,Out@GRAD", "X");
  });
  AddUnary<Reciprocal, float, double>(r, "reciprocal", "1 / X");
  AddUnary<Rsqrt, float, double>(r, "rsqrt", "1 / sqrt(X)");
  AddUnary<Expm1, float, double>(r, "expm1", "exp(X) - 1");
  AddUnary<Log1p, float, double>(r, "log1p", "ln(1 + X)");
  AddUnary<LogBase<2>, float, double>(r, "log2", "log2(X)");
  AddUnary<LogBase<10>, float, double>(r, "log10", "log10(X)");
  AddUnary<Sin, float, double>(r, "sin", "sin(X)");
  AddUnary<Cos, float, double>(r, "cos", "cos(X)");
  AddUnary<Tan, float, double>(r, "tan", "tan(X)");
  AddUnary<Asin, float, double>(r, "asin", "asin(X)");
  AddUnary<Acos, float, double>(r, "acos", "acos(X)");
  AddUnary<Atan, float, double>(r, "atan", "atan(X)");
  AddUnary<Sinh, float, double>(r, "sinh", "sinh(X)");
  AddUnary<Cosh, float, double>(r, "cosh", "cosh(X)");
  AddUnary<Rounding<FloorStep>, float, double>(r, "floor", "the largest integer not above X (gradient 0)");
  AddUnary<Rounding<CeilStep>, float, double>(r, "ceil", "the smallest integer not below X (gradient 0)");
  AddUnary<Rounding<RoundStep>, float, double>(r, "round", "the nearest integer, halves away from 0 (gradient 0)");
  AddUnary<Rounding<SignStep>, float, double>(r, "sign", "1 for X > 0, -1 for X < 0, 0 for 0 (gradient 0)");

  const OpSchema scale = OpSchema("scale")
      .Doc("Out = scale * X + bias (bias_after_scale) or scale * (X + bias); SelectedRows X gives SelectedRows of "
           "its rows.")
      .Input("X", "input, a tensor or SelectedRows")
      .Input("ScaleTensor", "the scale, one element; replaces the attribute", RILL_SLOT_OPTIONAL)
      .Output("Out", "result, shaped like X")
      .Attr("scale", 1.0, "multiplier")
      .Attr("bias", 0.0, "offset")
      .Attr("bias_after_scale", true, "add bias after scaling (true) or before (false)")
      .KernelDtypeFrom("X")
      .Grad("scale_grad", "Out@GRAD,ScaleTensor", "X");
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
