// The activations' formulas: one functor per unary elementwise op of activation.cc, kept
// apart from its kernels so that activation_loops.cc can compile them once per instruction
// set (isa.h).
//
// A functor is made from the kernel's context on the calling thread (it reads its attributes
// there) and is then only read: Forward and Backward are const and take Eigen array
// expressions of one contiguous run of elements, so the loops may call them from any thread,
// on any run.
#ifndef RILL_MATH_ACTIVATION_FUNCTORS_H_
#define RILL_MATH_ACTIVATION_FUNCTORS_H_

#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels.h"

namespace rill::math::activation {

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
//
// Eigen evaluates an expression with a lambda in it one scalar at a time, its exp or log
// included (a libm call each). A piecewise formula with a transcendental branch therefore
// computes that branch over the whole run first, into a Block (vectorized), and then blends;
// the loops hand a functor runs of at most kActivationBlock elements, so a Block lives on
// the stack and in L1. The Block's argument is clamped to the branch's own domain where the
// other branch is taken, so it cannot overflow there.
constexpr int kActivationBlock = 1024;
template <class A> using Block = Eigen::Array<S<A>, Eigen::Dynamic, 1, Eigen::ColMajor, kActivationBlock, 1>;

// exp(x) - 1: below |x| = 0.7 by its Taylor series, elsewhere exp(x) - 1 from Eigen's
// vectorized exp, where the subtraction cancels little (|exp(x) - 1| > 0.5): within 2 ulp
// where Eigen's exp is within 1, as it is but for single precision above 43 under AVX-512
// (up to 5 ulp there; Eigen's expm1 keeps that error too). Both branches are computed and
// blended, so the compiler vectorizes the whole loop (Eigen's expm1 takes an exp, a log and
// a division for floats and calls libm per element for doubles).
// Single precision: the series to x^9 / 9!, as x (1 + x (1/2 + ...)) (the sign of a zero
// kept), within 1 ulp. Double precision: the series to x^17 / 17! (its first omitted term is
// under 1e-18 of the sum below 0.7), as x + x (x (1/2 + x (1/6 + ...))), within 1.5 ulp
// whether or not the compiler fuses its multiplications and additions; that sum turns -0
// into +0, and expm1 keeps its argument's sign, so the sign is copied back.
constexpr float kExpm1SeriesBelow = 0.7f;
inline float Expm1Blend(float v, float exp_v) {
  const float series =
      v *
      (1.0f +
       v * (0.5f + v * (1.0f / 6 +
                        v * (1.0f / 24 +
                             v * (1.0f / 120 +
                                  v * (1.0f / 720 + v * (1.0f / 5040 + v * (1.0f / 40320 + v * (1.0f / 362880)))))))));
  return std::fabs(v) < kExpm1SeriesBelow ? series : exp_v - 1.0f;
}
inline double Expm1Blend(double v, double exp_v) {
  // Written out rather than looped over a table of 1 / k!, so that the compiler vectorizes
  // the caller's loop instead of unrolling this one.
  const double p =
      1.0 / 2 +
      v * (1.0 / 6 +
           v * (1.0 / 24 +
                v * (1.0 / 120 +
                     v * (1.0 / 720 +
                          v * (1.0 / 5040 +
                               v * (1.0 / 40320 +
                                    v * (1.0 / 362880 +
                                         v * (1.0 / 3628800 +
                                              v * (1.0 / 39916800 +
                                                   v * (1.0 / 479001600 +
                                                        v * (1.0 / 6227020800 +
                                                             v * (1.0 / 87178291200 +
                                                                  v * (1.0 / 1307674368000 +
                                                                       v * (1.0 / 20922789888000 +
                                                                            v * (1.0 / 355687428096000)))))))))))))));
  const double series = std::copysign(v + v * (v * p), v);
  return std::fabs(v) < kExpm1SeriesBelow ? series : exp_v - 1.0;
}
template <class X> Block<X> Expm1Of(const X& x) {
  const Block<X> v = x;
  const Block<X> e = v.exp();
  Block<X> out(v.size());
  for (Eigen::Index i = 0; i < v.size(); ++i) out[i] = Expm1Blend(v[i], e[i]);
  return out;
}
// ln(1 + x). Single precision: Eigen's, vectorized. Double precision: Kahan's formula,
// u = 1 + x, ln u (x / (u - 1)), whose ratio cancels the rounding of u (Eigen calls libm's
// log1p per element for doubles); x where u rounds to 1, ln u where u overflows.
template <class X> auto Log1pOf(const X& x) {
  if constexpr (std::is_same_v<S<X>, float>) {
    return x.log1p();  // an expression, evaluated where it is used
  } else {
    const Block<X> v = x;
    const Block<X> u = v + 1.0;
    const Block<X> log_u = u.log();
    Block<X> out(v.size());
    for (Eigen::Index i = 0; i < v.size(); ++i) {
      const double w = u[i];
      out[i] = w == 1.0                                       ? v[i]
               : w == std::numeric_limits<double>::infinity() ? log_u[i]
                                                              : log_u[i] * (v[i] / (w - 1.0));
    }
    return out;
  }
}
// tanh x. Single precision: Eigen's, vectorized. Double precision (Eigen's is libm's per
// element), of |x| then given x's sign (a zero's kept): below kTanhByExpm1Below as
// -m / (2 + m) with m = expm1(-2 |x|), which does not cancel near 0; above it as
// 1 - 2 / (exp(2 |x|) + 1), whose subtraction from 1 shrinks exp's error (the fraction is
// under 1/2 there), and which reaches 1 without overflow trouble (2 / inf is 0). Within 5
// ulp: the quotient carries expm1's error.
constexpr double kTanhByExpm1Below = 0.55;
template <class X> auto TanhOf(const X& x) {
  if constexpr (std::is_same_v<S<X>, float>) {
    return x.tanh();  // an expression, evaluated where it is used
  } else {
    const Block<X> v = x;
    const Block<X> a = v.abs();
    const Block<X> m = Expm1Of(-2.0 * a.min(kTanhByExpm1Below));
    const Block<X> e = (2.0 * a).exp();
    Block<X> out(a.size());
    for (Eigen::Index i = 0; i < a.size(); ++i) {
      const double t = a[i] < kTanhByExpm1Below ? -m[i] / (2.0 + m[i]) : 1.0 - 2.0 / (e[i] + 1.0);
      out[i] = std::copysign(t, v[i]);
    }
    return out;
  }
}

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
  template <class A, class O> void Forward(const A& x, O out) const { out = TanhOf(x); }
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
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const { dx = S<A>(0.5) * g / out; }
};
// Integers too (forward only, as Paddle's): the most negative value, whose magnitude its
// type cannot hold, stays itself (two's complement wraps), as Java's Math.abs defines it.
struct Abs {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Abs(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (std::is_integral_v<S<A>>) {
      using U = std::make_unsigned_t<S<A>>;
      out = x.unaryExpr([](S<A> v) { return static_cast<S<A>>(v < 0 ? U(0) - static_cast<U>(v) : static_cast<U>(v)); });
    } else {
      out = x.abs();
    }
  }
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
  explicit LeakyRelu(double slope) : alpha(slope) {}  // prelu's, one slope a run
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
// erf x. Single precision: Eigen's, vectorized. Double precision (Eigen's is libm's per
// element), in Sun's fdlibm scheme, whose published coefficients these are, on a = |x|,
// the sign given back after (a zero's kept):
//  - a < 0.84375: a + a R(a^2), R a rational of degree 4 over 5;
//  - a < 1.25: erx + R(a - 1), degree 6 over 6, erx = erf(1) rounded to 32 bits;
//  - a < 6: 1 - exp(-z^2 - 0.5625) exp((z - a)(z + a) + R(1 / a^2)) / a, z = a with its low
//    32 bits cleared (so z^2 is exact), degree 7 over 8 below 1 / 0.35, 6 over 7 above;
//  - else 1 (erf is 1 to double precision there).
// Each branch is computed for every element, its argument clamped to its own interval so
// nothing overflows where another is taken, and blended: the two near-zero rationals are
// one evaluation with per-element coefficients, and so are the two tail ones, whose two
// exps are Eigen's, vectorized. Within an ulp or two of libm's erf (the test checks it).
namespace erf_coefficients {
constexpr double kErx = 8.45062911510467529297e-01;
// Near zero, for a < 0.84375 (on a^2) then for a < 1.25 (on a - 1): numerators, and
// denominators after their leading 1, lowest degree first; the shorter padded with zeros.
constexpr double kNearP[2][7] = {
    {1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02, -5.77027029648944159157e-03,
     -2.37630166566501626084e-05, 0, 0},
    {-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01, 3.18346619901161753674e-01,
     -1.10894694282396677476e-01, 3.54783043256182359371e-02, -2.16637559486879084300e-03}};
constexpr double kNearQ[2][6] = {{3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                                  1.32494738004321644526e-04, -3.96022827877536812320e-06, 0},
                                 {1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
                                  1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02}};
// The tail, on 1 / a^2, below 1 / 0.35 then above.
constexpr double kTailP[2][8] = {
    {-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01, -6.23753324503260060396e+01,
     -1.62396669462573470355e+02, -1.84605092906711035994e+02, -8.12874355063065934246e+01,
     -9.81432934416914548592e+00},
    {-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01, -1.60636384855821916062e+02,
     -6.37566443368389627722e+02, -1.02509513161107724954e+03, -4.83519191608651397019e+02, 0}};
constexpr double kTailQ[2][8] = {
    {1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02, 6.45387271733267880336e+02,
     4.29008140027567833386e+02, 1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02},
    {3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03, 3.19985821950859553908e+03,
     2.55305040643316442583e+03, 4.74528541206955367215e+02, -2.24409524465858183362e+01, 0}};
}  // namespace erf_coefficients

// p[0] + t (p[1] + t (...)) over N coefficients, each the first set's where `first`, else
// the second's: a blend per coefficient, expanded at compile time (a loop here, even of
// constant count, keeps the caller's loop from vectorizing).
template <size_t N, size_t... K>
inline double HornerOf(const double (&p)[2][N], bool first, double t, std::index_sequence<K...>) {
  double sum = first ? p[0][N - 1] : p[1][N - 1];
  ((sum = sum * t + (first ? p[0][N - 2 - K] : p[1][N - 2 - K])), ...);
  return sum;
}
template <size_t N> inline double HornerOf(const double (&p)[2][N], bool first, double t) {
  return HornerOf(p, first, t, std::make_index_sequence<N - 1>());
}

template <class X> auto ErfOf(const X& x) {
  if constexpr (std::is_same_v<S<X>, float>) {
    return x.erf();  // an expression, evaluated where it is used
  } else {
    using namespace erf_coefficients;
    constexpr double kNearBelow = 0.84375, kMidBelow = 1.25, kTailSplit = 1 / 0.35, kOneFrom = 6;
    const Block<X> v = x;
    const Eigen::Index n = v.size();
    Block<X> tail_a(n), exp_first(n), exp_second(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double a = std::min(std::max(std::fabs(v[i]), kMidBelow), kOneFrom);
      const double t = 1 / (a * a);
      const bool low = a < kTailSplit;
      const double ratio = HornerOf(kTailP, low, t) / (1 + t * HornerOf(kTailQ, low, t));
      uint64_t bits;
      std::memcpy(&bits, &a, sizeof bits);
      bits &= 0xffffffff00000000ull;
      double z;
      std::memcpy(&z, &bits, sizeof z);
      tail_a[i] = a;
      exp_first[i] = -z * z - 0.5625;
      exp_second[i] = (z - a) * (z + a) + ratio;
    }
    const Block<X> first = exp_first.exp(), second = exp_second.exp();
    Block<X> out(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double a = std::fabs(v[i]);
      const bool near = a < kNearBelow;
      const double b = std::min(a, kMidBelow);
      const double t = near ? b * b : b - 1;
      const double ratio = HornerOf(kNearP, near, t) / (1 + t * HornerOf(kNearQ, near, t));
      const double tail = 1 - first[i] * second[i] / tail_a[i];
      const double e = near ? a + a * ratio : a < kMidBelow ? kErx + ratio : a >= kOneFrom ? 1.0 : tail;
      out[i] = std::copysign(e, v[i]);
    }
    return out;
  }
}

// erf, whose derivative is 2 / sqrt(pi) exp(-x^2).
struct Erf {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Erf(KernelContext&) {}
  static constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  template <class A, class O> void Forward(const A& x, O out) const { out = ErfOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * S<A>(kTwoOverSqrtPi) * (-x.square()).exp();
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
    if (approximate) out = S<A>(0.5) * x * (S<A>(1) + TanhOf(Inner(x)));
    else out = S<A>(0.5) * x * (S<A>(1) + ErfOf(S<A>(kSqrtHalf) * x));
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    if (approximate) {
      const Block<A> t = TanhOf(Inner(x));
      dx = g * (S<A>(0.5) * (S<A>(1) + t) + S<A>(0.5) * x * (S<A>(1) - t.square()) * S<A>(kSqrt2OverPi) *
                                                (S<A>(1) + S<A>(3 * kCubic) * x.square()));
    } else {
      dx = g * (S<A>(0.5) * (S<A>(1) + ErfOf(S<A>(kSqrtHalf) * x)) +
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
    const Block<A> s = Sig(x);
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
    const S<A> top = S<A>(t), shift = S<A>(offset), divisor = S<A>(scale);
    dx = x.binaryExpr(g, [top, shift, divisor](S<A> v, S<A> gv) {
      const S<A> shifted = v + shift;
      const S<A> clipped = std::min(std::max(shifted, S<A>(0)), top);
      return gv * (clipped + (shifted > S<A>(0) && shifted < top ? v : S<A>(0))) / divisor;
    });
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
// X limited to [lo, hi], its gradient passing strictly inside: clip and brelu, which take
// their limits from different places.
struct Limited {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  Limited(const char* op, const char* lo_name, double lo_value, const char* hi_name, double hi_value)
      : lo(lo_value), hi(hi_value) {
    if (lo > hi) {
      throw Error(std::string(op) + ": " + lo_name + " (" + std::to_string(lo) + ") is greater than " + hi_name + " (" +
                  std::to_string(hi) + ")");
    }
  }
  double lo, hi;
  template <class A, class O> void Forward(const A& x, O out) const { out = x.max(S<A>(lo)).min(S<A>(hi)); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> l = S<A>(lo), h = S<A>(hi);
    dx = x.binaryExpr(g, [l, h](S<A> v, S<A> gv) { return v > l && v < h ? gv : S<A>(0); });
  }
};
// clip: X limited to [min, max], each from its tensor (Min, Max) when given.
struct Clip : Limited {
  explicit Clip(KernelContext& ctx)
      : Limited("clip", "min", ScalarFromInput<double, float>(ctx, "Min", "min"), "max",
                ScalarFromInput<double, float>(ctx, "Max", "max")) {}
};

// silu: x * sigmoid(x).
struct Silu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Silu(KernelContext&) {}
  template <class A> static auto Sig(const A& x) { return (S<A>(1) + (-x).exp()).inverse(); }
  template <class A, class O> void Forward(const A& x, O out) const { out = x * Sig(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const Block<A> s = Sig(x);
    dx = g * s * (S<A>(1) + x * (S<A>(1) - s));
  }
};
// logsigmoid: ln(sigmoid(x)) = min(x, 0) - ln(1 + exp(-|x|)), which neither overflows nor
// rounds to ln(0); its derivative sigmoid(-x) = 1 / (1 + exp(x)) tends to 0 for large x.
struct LogSigmoid {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit LogSigmoid(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    out = x.min(S<A>(0)) - Log1pOf((-x.abs()).exp());
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * (S<A>(1) + x.exp()).inverse();
  }
};
// tanh_shrink: x - tanh(x).
struct TanhShrink {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit TanhShrink(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x - TanhOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * TanhOf(x).square();
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
struct BRelu : Limited {
  explicit BRelu(KernelContext& ctx)
      : Limited("brelu", "t_min", ctx.Attr<float>("t_min"), "t_max", ctx.Attr<float>("t_max")) {}
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
    out = Log1pOf(x.max(-k).min(k).exp());
  }
  // Out at the clamp comes from the forward's exp and log, which may round a few ulp apart
  // from Soft(±t) computed here: the bounds move 4 ulp inward, so the clamp's own Out
  // counts as clamped (an X within that of the bound loses its gradient).
  template <class T> static T Inward(T bound, T toward, int ulps = 4) {
    for (int i = 0; i < ulps; ++i) bound = std::nextafter(bound, toward);
    return bound;
  }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const {
    const S<A> soft_lo = Soft(S<A>(-t)), soft_hi = Soft(S<A>(t));
    const S<A> lo = Inward(soft_lo, soft_hi), hi = Inward(soft_hi, soft_lo);
    const Block<A> d = -Expm1Of(-out) * g;
    dx = out.binaryExpr(d, [lo, hi](S<A> o, S<A> dv) { return o > lo && o < hi ? dv : S<A>(0); });
  }
};
// elu: x above 0, else alpha * (exp(x) - 1).
struct Elu {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Elu(KernelContext& ctx) : alpha(ctx.Attr<float>("alpha")) {}
  double alpha;
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> a = S<A>(alpha);
    const Block<A> below = a * Expm1Of(x.min(S<A>(0)));
    out = x.binaryExpr(below, [](S<A> v, S<A> b) { return v > S<A>(0) ? v : b; });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    Block<A> slope = S<A>(alpha) * x.min(S<A>(0)).exp();
    slope = x.binaryExpr(slope, [](S<A> v, S<A> d) { return v > S<A>(0) ? S<A>(1) : d; });
    dx = g * slope;
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
    const Block<A> soft = Log1pOf((b * x).min(k).exp()) / b;
    out = x.binaryExpr(soft, [b, k](S<A> v, S<A> sv) { return b * v > k ? v : sv; });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> b = S<A>(beta), k = S<A>(t);
    Block<A> slope = (S<A>(1) + (-b * x).exp()).inverse();
    slope = x.binaryExpr(slope, [b, k](S<A> v, S<A> d) { return b * v > k ? S<A>(1) : d; });
    dx = g * slope;
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
  // Paddle's three pieces: `above` where x > threshold, `below` where x < -threshold, else
  // `between`, blended in one pass (a vector blend: CMakeLists.txt's flags).
  template <class A>
  static Block<A> Pieces(const A& x, S<A> k, const Block<A>& above, const Block<A>& below, const Block<A>& between) {
    Block<A> out(x.size());
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const S<A> v = x[i];
      out[i] = v > k ? above[i] : v < -k ? below[i] : between[i];
    }
    return out;
  }
  // softplus as Paddle computes it: x above the threshold, exp(x) below its negative, else
  // ln(1 + exp(x)); e is exp of x capped at the threshold, where it is not used.
  template <class A> static Block<A> Softplus(const A& x, const Block<A>& e, S<A> k) {
    return Pieces(x, k, Block<A>(x), e, Log1pOf(e));
  }
  // tanh(s) of s = softplus(x) > 0 from m = expm1(-2s), -m / (2 + m): exact to rounding
  // where tanh(s) nears 1 (Eigen's tanh is a few roundings off there, which the gradient's
  // 1 - tanh(s)^2 and a finite difference of Out would magnify).
  template <class A> static Block<A> TanhFromMinus2s(const Block<A>& minus_2s) {
    const Block<A> m = Expm1Of(minus_2s);
    return -m / (S<A>(2) + m);
  }
  template <class A, class O> void Forward(const A& x, O out) const {
    const S<A> k = S<A>(t);
    const Block<A> e = x.min(k).exp();
    out = x * TanhFromMinus2s<A>(S<A>(-2) * Softplus(x, e, k));
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    const S<A> k = S<A>(t);
    const Block<A> e = x.min(k).exp();
    // 1 - tanh(s)^2 as 4q / (1 + q)^2, q = exp(-2s): no cancellation where tanh(s) nears 1.
    const Block<A> minus_2s = S<A>(-2) * Softplus(x, e, k);
    const Block<A> q = minus_2s.exp();
    const Block<A> th = TanhFromMinus2s<A>(minus_2s), sech2 = S<A>(4) * q / (S<A>(1) + q).square();
    // softplus' derivative: 1 above the threshold, exp(x) below its negative, else sigmoid(x).
    const Block<A> sigmoid = (S<A>(1) + (-x.max(-k).min(k)).exp()).inverse();
    const Block<A> slope = Pieces(x, k, Block<A>::Ones(x.size()), e, sigmoid);
    dx = g * (th + x * sech2 * slope);
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
    const Block<A> below = a * Expm1Of(x.min(S<A>(0)));
    out = s * x.binaryExpr(below, [](S<A> v, S<A> b) { return v > S<A>(0) ? v : b; });
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
  template <class A, class O> void Forward(const A& x, O out) const { out = S<A>(b) * TanhOf(S<A>(a) * x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g * S<A>(a * b) * (S<A>(1) - TanhOf(S<A>(a) * x).square());
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
  template <class A, class O> void Forward(const A& x, O out) const { RaiseInto(x, factor, out); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    Block<A> power(x.size());
    RaiseInto(x, factor - 1, power);
    dx = g * S<A>(factor) * power;
  }
  // out = x ^ f (out may be x). For an integer f up to kMultipliedPowers in size: products
  // of x (of 1 / x for a negative f) by squaring, which keep std::pow's signs, zeros,
  // infinities and x ^ 0 = 1 (NaN's included), at a few roundings more. They are taken a
  // chunk of kChunk elements at a time, all of f's squarings on one chunk in registers before
  // the next chunk is read, so the run is read and written once. std::pow otherwise.
  static constexpr double kMultipliedPowers = 32;
  static constexpr int kChunk = 16;
  template <class V> static V Raised(V base, uint32_t e, V one) {
    V result = one;
    for (; e != 0; e >>= 1) {
      if (e & 1) result = result * base;
      if (e > 1) base = base * base;
    }
    return result;
  }
  template <class A, class O> static void RaiseInto(const A& x, double f, O&& out) {
    using T = S<A>;
    if (f != std::floor(f) || std::fabs(f) > kMultipliedPowers) {
      // std::pow itself: Eigen's array pow differs from it (the sign of -0 ^ odd for fp64).
      out = x.unaryExpr([e = T(f)](T v) { return std::pow(v, e); });
      return;
    }
    using Chunk = Eigen::Array<T, kChunk, 1>;
    const auto e = static_cast<uint32_t>(std::fabs(f));
    const Eigen::Index n = x.size();
    Eigen::Index i = 0;
    for (; i + kChunk <= n; i += kChunk) {
      const Chunk v = x.template segment<kChunk>(i);
      out.template segment<kChunk>(i) = Raised<Chunk>(f < 0 ? Chunk(v.inverse()) : v, e, Chunk::Ones());
    }
    for (; i < n; ++i) out[i] = Raised<T>(f < 0 ? T(1) / x[i] : x[i], e, T(1));
  }
};
struct Reciprocal {
  static constexpr GradFrom kGradFrom = GradFrom::kOut;
  explicit Reciprocal(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = x.inverse(); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const { dx = -g * out.square(); }
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
  template <class A, class O> void Forward(const A& x, O out) const { out = Expm1Of(x); }
  template <class A, class B, class O> void Backward(const A& out, const B& g, O dx) const { dx = g * (out + S<A>(1)); }
};
struct Log1p {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Log1p(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = Log1pOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g / (S<A>(1) + x); }
};
// log2 and log10: ln(x) / ln(base).
template <int kBase> struct LogBase {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit LogBase(KernelContext&) {}
  static double LnBase() { return std::log(static_cast<double>(kBase)); }
  template <class A, class O> void Forward(const A& x, O out) const { out = x.log() / S<A>(LnBase()); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (x * S<A>(LnBase()));
  }
};
// sin and cos in double precision, which the compiler vectorizes (Eigen's are a libm call
// per element for doubles; for floats Eigen's own are vectorized and kept). x less the
// nearest multiple q of pi/2, with pi/2 as three doubles, the first two of 33 bits, so
// that for |x| < 2^20 (q < 2^20) their multiples are exact and the remainder r is off by
// about an ulp of r plus q times pi/2's truncation, under 1e-30; then Cephes' sin or cos
// polynomial of r, by q mod 4, each computed and chosen by bit masks, which vectorize
// (activation_loops.h builds these double loops in the piecewise group). Within 2
// ulp of the exact value. Where that absolute error would show, a remainder under 2^-40
// off a nonzero multiple, and beyond 2^20, infinities and NaN, the first pass gives NaN and
// a second pass, which only a run holding a NaN takes, puts libm's value there.
constexpr double kTrigReducedBelow = 1048576.0;       // 2^20
constexpr double kTrigRemainderAbove = 9.094947e-13;  // 2^-40
constexpr double kHalfPi1 = 1.5707963267341256, kHalfPi2 = 6.077100506303966e-11, kHalfPi3 = 2.0222662487959506e-21;
constexpr double kRoundToInteger = 6755399441055744.0;  // 1.5 * 2^52: (t + it) - it rounds t to an integer
struct TrigReduction {
  double r, m;  // the remainder, and q mod 4 as one of -2, -1, 0, 1, 2 (2 and -2 alike)
};
// The per-element functions below are always inlined into the loops that call them: a
// copy out of line is the baseline set's (isa.h), and a call per element stops the loop
// from vectorizing.
[[gnu::always_inline]] inline TrigReduction ReduceByHalfPi(double v) {
  const double q = (v * 0.6366197723675814 + kRoundToInteger) - kRoundToInteger;  // 2 / pi
  const double r = ((v - q * kHalfPi1) - q * kHalfPi2) - q * kHalfPi3;
  return {r, q - 4.0 * ((q * 0.25 + kRoundToInteger) - kRoundToInteger)};
}
// sin or cos of v, or NaN where libm's is to be taken instead: beyond 2^20 (infinities and
// NaN too), and for a tiny remainder off a nonzero multiple.
template <bool kCos> [[gnu::always_inline]] inline double SinCosReduced(double v) {
  const bool in_range = std::fabs(v) < kTrigReducedBelow;
  const TrigReduction t = ReduceByHalfPi(in_range ? v : 0.0);
  const bool libm = !in_range || (std::fabs(t.r) < kTrigRemainderAbove && v != t.r);
  const double r = t.r, a = std::fabs(r), z = r * r;
  // sin r of |r|, then r's sign: so the sign of a zero is kept.
  const double s = std::copysign(
      a + a * z *
              (((((1.58962301576546568060e-10 * z - 2.50507477628578072866e-8) * z + 2.75573136213857245213e-6) * z -
                 1.98412698295895385996e-4) *
                    z +
                8.33333333332211858878e-3) *
                   z -
               1.66666666666666307295e-1),
      r);
  const double c =
      (1.0 - 0.5 * z) +
      z * z *
          (((((-1.13585365213876817300e-11 * z + 2.08757008419747316778e-9) * z - 2.75573141792967388112e-7) * z +
             2.48015872888517045348e-5) *
                z -
            1.38888888888730564116e-3) *
               z +
           4.16666666666665929218e-2);
  // sin(q pi/2 + r) is s, c, -s, -c and cos(q pi/2 + r) is c, -s, -c, s for q mod 4 = 0..3.
  const bool odd = t.m == 1.0 || t.m == -1.0, half = t.m == 2.0 || t.m == -2.0;
  const bool take_c = odd != kCos;
  const bool negative = half || (kCos ? t.m == 1.0 : t.m == -1.0);
  uint64_t sb, cb;
  std::memcpy(&sb, &s, sizeof sb);
  std::memcpy(&cb, &c, sizeof cb);
  const uint64_t take = uint64_t{0} - static_cast<uint64_t>(take_c);
  const uint64_t nan = uint64_t{0} - static_cast<uint64_t>(libm);
  const uint64_t value = ((cb & take) | (sb & ~take)) ^ (static_cast<uint64_t>(negative) << 63);
  const uint64_t bits = (value & ~nan) | (uint64_t{0x7ff8000000000000} & nan);
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
// tan of v by the same reduction and the same NaN where libm's is to be taken, then
// Cephes' rational form of tan r for |r| <= pi/4: tan(q pi/2 + r) is tan r for even q
// and -1 / tan r for odd q, both computed and chosen by a blend, which vectorizes.
[[gnu::always_inline]] inline double TanReducedDouble(double v) {
  const bool in_range = std::fabs(v) < kTrigReducedBelow;
  const TrigReduction t = ReduceByHalfPi(in_range ? v : 0.0);
  const bool libm = !in_range || (std::fabs(t.r) < kTrigRemainderAbove && v != t.r);
  const double r = t.r, z = r * r;
  const double p = (-1.30936939181383777646e4 * z + 1.15351664838587416140e6) * z - 1.79565251976484877988e7;
  const double q =
      (((z + 1.36812963470692954678e4) * z - 1.32089234440210967447e6) * z + 2.50083801823357915839e7) * z -
      5.38695755929454629881e7;
  const double tan_r = r + r * (z * p / q);
  const bool odd = t.m == 1.0 || t.m == -1.0;
  // By bit masks, as SinCosReduced chooses: GCC leaves a choice between doubles a branch.
  const double cot = -1.0 / tan_r;
  uint64_t tb, cb;
  std::memcpy(&tb, &tan_r, sizeof tb);
  std::memcpy(&cb, &cot, sizeof cb);
  const uint64_t take = uint64_t{0} - static_cast<uint64_t>(odd);
  const uint64_t nan = uint64_t{0} - static_cast<uint64_t>(libm);
  const uint64_t bits = (((cb & take) | (tb & ~take)) & ~nan) | (uint64_t{0x7ff8000000000000} & nan);
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
// `reduced` of each double of x, and `libm` where that gives NaN (which only a run holding
// a NaN takes a second pass for).
template <class A, class Reduced, class Libm> Block<A> ReducedOrLibm(const A& x, Reduced reduced, Libm libm) {
  const Block<A> v = x;
  Block<A> out = v.unaryExpr(reduced);
  if (out.isNaN().any()) {
    for (Eigen::Index i = 0; i < v.size(); ++i) {
      if (std::isnan(out[i])) out[i] = libm(v[i]);
    }
  }
  return out;
}
// sin x (kCos false) or cos x of doubles: SinCosReduced, and libm where it does not hold.
template <bool kCos, class A> Block<A> SinCosOfDoubles(const A& x) {
  return ReducedOrLibm(
      x, [](double e) { return SinCosReduced<kCos>(e); }, [](double e) { return kCos ? std::cos(e) : std::sin(e); });
}
template <class A> constexpr bool kIsFloat = std::is_same_v<S<A>, float>;
struct Sin {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Sin(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (kIsFloat<A>) out = x.sin();
    else out = SinCosOfDoubles<false>(x);
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    if constexpr (kIsFloat<A>) dx = g * x.cos();
    else dx = g * SinCosOfDoubles<true>(x);
  }
};
struct Cos {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Cos(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (kIsFloat<A>) out = x.cos();
    else out = SinCosOfDoubles<true>(x);
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    if constexpr (kIsFloat<A>) dx = -g * x.sin();
    else dx = -g * SinCosOfDoubles<false>(x);
  }
};
// tan in single precision, which the compiler vectorizes (Eigen's is a libm call per
// element): |x| less the nearest even multiple of pi/4, in double precision with pi/4 as
// three doubles (the first two short enough that their multiples are exact), so the
// remainder keeps its float precision even at the floats nearest a pole, where the
// remainder is tiny and everything else cancels; then tan or -cot of the remainder by
// Cephes' tanf polynomial: within 3 ulp of the exact value. Beyond kTanReducedBelow (and
// for infinities and NaN) the elements are libm's, in a second pass that only those take.
// Double precision stays libm's.
constexpr float kTanReducedBelow = 4096.0f;
inline float TanReduced(float v) {
  const float a = std::fabs(v) < kTanReducedBelow ? std::fabs(v) : 0.0f;  // the others: libm's
  int j = static_cast<int>(a * 1.27323954473516f);                        // 4 / pi
  j += j & 1;  // the nearest even multiple of pi/4: the remainder is in [-pi/4, pi/4]
  const double y = j;
  const float z = static_cast<float>(((static_cast<double>(a) - y * 0.7853981633961666) - y * 1.2816720757919779e-12) -
                                     y * 5.281499533493714e-24);
  const float zz = z * z;
  const float t =
      (((((9.38540185543e-3f * zz + 3.11992232697e-3f) * zz + 2.44301354525e-2f) * zz + 5.34112807005e-2f) * zz +
        1.33387994085e-1f) *
           zz +
       3.33331568548e-1f) *
          zz * z +
      z;
  const float cot = -1.0f / t;             // computed for every element, so the choices below are blends
  const float r = (j & 2) != 0 ? cot : t;  // tan |x|
  return std::signbit(v) ? -r : r;
}
// tan x by TanReduced where it holds and libm's elsewhere.
template <class A> Block<A> TanOf(const A& x) {
  if constexpr (std::is_same_v<S<A>, float>) {
    Block<A> out = x.unaryExpr([](float v) { return TanReduced(v); });
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      if (!(std::fabs(x[i]) < kTanReducedBelow)) out[i] = std::tan(x[i]);
    }
    return out;
  } else {
    return ReducedOrLibm(
        x, [](double e) { return TanReducedDouble(e); }, [](double e) { return std::tan(e); });
  }
}
// tan's gradient is Out@GRAD / cos² x (Fluid's, from X); in single precision as
// Out@GRAD * (1 + tan² x), the same value, from the vectorized tan: Eigen's cos is not
// inlined into this group of loops (activation_loops.h).
struct Tan {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Tan(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = TanOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    if constexpr (std::is_same_v<S<A>, float>) {
      dx = g * (S<A>(1) + TanOf(x).square());
    } else {
      dx = g / SinCosOfDoubles<true>(x).square();
    }
  }
};
// asin, acos and atan in single precision by Cephes' polynomials, which the compiler
// vectorizes (Eigen's are a libm call per element): each within 3 ulp of the exact value
// (against double precision, over one float in 61), with libm's NaN for |x| > 1 and NaN
// in, and the sign of a zero kept. Double precision: below. pi/2 is added as two
// floats (the second its rounding error), which keeps the subtractions near |x| = 0.5
// within that bound whether or not the compiler fuses multiplies and adds. AsinTerm gives,
// for |x| > 0.5, z = (1 - |x|) / 2 (whose square root s gives asin |x| = pi/2 - 2 asin s),
// else z = x²; Block holds the square roots, computed vectorized before the blend.
constexpr float kHalfPiHigh = 1.57079637f, kHalfPiLow = -4.37113883e-8f;
inline float AsinPolynomial(float s, float z) {  // asin s for s in [0, 0.5], z = s²
  return s + s * z *
                 ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z + 7.4953002686e-2f) * z +
                  1.6666752422e-1f);
}
inline float AsinTerm(float v) {
  const float a = std::fabs(v);
  return a > 0.5f ? 0.5f * (1.0f - a) : a * a;
}
inline float AsinFrom(float v, float z, float root) {
  const bool high = std::fabs(v) > 0.5f;
  const float q = AsinPolynomial(high ? root : std::fabs(v), z);
  return std::copysign(high ? (kHalfPiHigh - (q + q)) + kHalfPiLow : q, v);
}
inline float AcosFrom(float v, float z, float root) {
  // |x| <= 0.5: pi/2 - asin x; x > 0.5: 2 asin sqrt((1 - x) / 2); x < -0.5: pi minus that.
  const bool high = std::fabs(v) > 0.5f;
  const float q = AsinPolynomial(high ? root : std::fabs(v), z);
  if (!high) return (kHalfPiHigh - std::copysign(q, v)) + kHalfPiLow;
  return v > 0.0f ? q + q : (2 * kHalfPiHigh - (q + q)) + 2 * kHalfPiLow;
}
inline float AtanOf(float v) {
  // atan |x| = pi/2 + atan(-1/|x|) above tan(3 pi / 8), pi/4 + atan((|x| - 1) / (|x| + 1))
  // above tan(pi / 8), and the polynomial itself below.
  const float a = std::fabs(v);
  const bool big = a > 2.414213562373095f, mid = a > 0.4142135623730950f;
  const float t = big ? -1.0f / a : mid ? (a - 1.0f) / (a + 1.0f) : a;
  const float base = big ? kHalfPiHigh : mid ? kHalfPiHigh / 2 : 0.0f;
  const float base_low = big ? kHalfPiLow : mid ? kHalfPiLow / 2 : 0.0f;
  const float z = t * t;
  const float p = (((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z;
  return std::copysign((base + (t + t * p)) + base_low, v);
}
// asin and acos in double precision by Cephes' rational functions (Eigen's are a libm call
// per element), each within 2 ulp of the exact value: for |x| <= 0.625 asin |x| =
// |x| + |x| z P(z) / Q(z), z = x²; above, pi/2 - s (1 + R(w) w / S(w)) with w = 1 - |x| and
// s = sqrt(2w), pi/2 as pi/4 + pi/4 (rounded) plus what that sum lacks (kHalfPiRest). acos takes asin of |x| <= 0.5 (pi/2 - asin x), else of sqrt((1 - |x|) / 2) (twice it,
// or pi less that for negative x), so it needs only the inner form. The square roots are
// Eigen's, vectorized, before the blends; |x| > 1 and NaN give NaN through them.
constexpr double kPiOver4 = 7.85398163397448309616e-1, kHalfPiRest = 6.123233995736765886130e-17;
inline double AsinInner(double a) {  // asin a for a in [0, 0.625]
  const double z = a * a;
  const double p =
      ((((4.253011369004428248960e-3 * z - 6.019598008014123785661e-1) * z + 5.444622390564711410273e0) * z -
        1.626247967210700244449e1) *
           z +
       1.956261983317594739197e1) *
          z -
      8.198089802484824371615e0;
  const double q =
      ((((z - 1.474091372988853791896e1) * z + 7.049610280856842141659e1) * z - 1.471791292232726029859e2) * z +
       1.395105614657485689735e2) *
          z -
      4.918853881490881290097e1;
  return a + a * (z * p / q);
}
// atan in double precision by Cephes' rational function (Eigen's is a libm call per
// element), within 2 ulp of the exact value: atan |x| = pi/2 + atan(-1/|x|) above
// tan(3 pi / 8), pi/4 + atan((|x| - 1) / (|x| + 1)) above 0.66, and t + t z P(z) / Q(z),
// z = t², below; pi/2 and pi/4 with what their doubles lack added last. The choices are
// blends, which vectorize; NaN gives NaN, infinities pi/2, and a zero keeps its sign.
[[gnu::always_inline]] inline double AtanDouble(double v) {
  const double a = std::fabs(v);
  const bool big = a > 2.41421356237309504880, mid = a > 0.66;
  const double t = big ? -1.0 / a : mid ? (a - 1.0) / (a + 1.0) : a;
  const double base = big ? 2 * kPiOver4 : mid ? kPiOver4 : 0.0;
  const double rest = big ? kHalfPiRest : mid ? 0.5 * kHalfPiRest : 0.0;
  const double z = t * t;
  const double p =
      (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z - 7.500855792314704667340e1) * z -
       1.228866684490136173410e2) *
          z -
      6.485021904942025371773e1;
  const double q =
      ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z + 4.328810604912902668951e2) * z +
       4.853903996359136964868e2) *
          z +
      1.945506571482613964425e2;
  return std::copysign((base + (t + t * (z * p / q))) + rest, v);
}
inline double AsinDouble(double v, double root) {  // root = sqrt(2 (1 - |v|))
  const double a = std::fabs(v), w = 1.0 - a;
  const double r =
      w *
      ((((2.967721961301243206100e-3 * w - 5.634242780008963776856e-1) * w + 6.968710824104713396794e0) * w -
        2.556901049652824852289e1) *
           w +
       2.853665548261061424989e1) /
      ((((w - 2.194779531642920639778e1) * w + 1.470656354026814941758e2) * w - 3.838770957603691357202e2) * w +
       3.424398657913078477438e2);
  const double outer = ((kPiOver4 - root) - (root * r - kHalfPiRest)) + kPiOver4;
  return std::copysign(a > 0.625 ? outer : AsinInner(a), v);
}
inline double AcosDouble(double v, double root) {  // root = sqrt((1 - |v|) / 2)
  const bool high = std::fabs(v) > 0.5;
  const double t = AsinInner(high ? root : std::fabs(v));
  const double low = ((kPiOver4 - std::copysign(t, v)) + kHalfPiRest) + kPiOver4;
  const double high_value = v > 0.0 ? t + t : (2 * kPiOver4 - (t + t)) + 2 * kPiOver4 + 2 * kHalfPiRest;
  return high ? high_value : low;
}
template <class A, class O, class F> void AsinFamily(const A& x, O out, F from) {
  if constexpr (std::is_same_v<S<A>, float>) {
    const Block<A> z = x.unaryExpr([](float v) { return AsinTerm(v); });
    const Block<A> root = z.sqrt();
    for (Eigen::Index i = 0; i < x.size(); ++i) out[i] = from(x[i], z[i], root[i]);
  }
}
struct Asin {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Asin(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (std::is_same_v<S<A>, float>) {
      AsinFamily(x, out, [](float v, float z, float root) { return AsinFrom(v, z, root); });
    } else {
      const Block<A> v = x;
      const Block<A> root = (2.0 * (1.0 - v.abs())).sqrt();
      for (Eigen::Index i = 0; i < v.size(); ++i) out[i] = AsinDouble(v[i], root[i]);
    }
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) - x.square()).sqrt();
  }
};
struct Acos {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Acos(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (std::is_same_v<S<A>, float>) {
      AsinFamily(x, out, [](float v, float z, float root) { return AcosFrom(v, z, root); });
    } else {
      const Block<A> v = x;
      const Block<A> root = (0.5 * (1.0 - v.abs())).sqrt();
      for (Eigen::Index i = 0; i < v.size(); ++i) out[i] = AcosDouble(v[i], root[i]);
    }
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = -g / (S<A>(1) - x.square()).sqrt();
  }
};
struct Atan {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Atan(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const {
    if constexpr (std::is_same_v<S<A>, float>) out = x.unaryExpr([](float v) { return AtanOf(v); });
    else out = x.unaryExpr([](double v) { return AtanDouble(v); });
  }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const {
    dx = g / (S<A>(1) + x.square());
  }
};
// sinh and cosh from Eigen's vectorized exp and expm1 (Eigen's own are scalar): with
// e = expm1(|x|), sinh |x| = (e + e / (e + 1)) / 2, exact to rounding near 0 where
// (exp(x) - exp(-x)) / 2 cancels; e is capped in the fraction so that an overflowed e gives
// inf, not inf / inf. cosh x = (E + 1 / E) / 2 with E = exp(|x|) has no cancellation.
template <class A> Block<A> SinhOf(const A& x) {
  const Block<A> e = Expm1Of(x.abs());
  const Block<A> capped = e.min(std::numeric_limits<S<A>>::max());
  return x.sign() * (S<A>(0.5) * (e + capped / (capped + S<A>(1))));
}
template <class A> Block<A> CoshOf(const A& x) {
  const Block<A> e = x.abs().exp();
  return S<A>(0.5) * (e + e.inverse());
}
struct Sinh {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Sinh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = SinhOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * CoshOf(x); }
};
struct Cosh {
  static constexpr GradFrom kGradFrom = GradFrom::kX;
  explicit Cosh(KernelContext&) {}
  template <class A, class O> void Forward(const A& x, O out) const { out = CoshOf(x); }
  template <class A, class B, class O> void Backward(const A& x, const B& g, O dx) const { dx = g * SinhOf(x); }
};
// floor, ceil, round (halves away from zero) and sign: steps, whose gradient is 0 (as
// Fluid's).
template <class Step> struct Rounding {
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
}  // namespace rill::math::activation

#endif  // RILL_MATH_ACTIVATION_FUNCTORS_H_
