// The activations' loops over one contiguous run of elements, compiled once per instruction
// set (isa.h) by activation_loops.cc, and the choice among them.
//
// Forward(op, x, out, n) writes out[0, n) from x[0, n); Backward(op, v, g, dx, n) writes
// dx[0, n) from the functor's forward value v and the incoming gradient g (see
// activation_functors.h). out and dx may be x, v or g themselves: each element is read
// before it is written.
#ifndef RILL_MATH_ACTIVATION_LOOPS_H_
#define RILL_MATH_ACTIVATION_LOOPS_H_

#include <cstdint>

#include "activation_functors.h"
#include "isa.h"

namespace rill::math::activation {

// One set's loops for functor Op on dtype T.
template <class Op, class T> struct Loops {
  void (*forward)(const Op&, const T*, T*, int64_t);
  void (*backward)(const Op&, const T*, const T*, T*, int64_t);
};

// Instantiated by activation_loops.cc for each set's tag (isa.h).
template <class Set, class Op, class T> void Forward(const Op&, const T*, T*, int64_t);
template <class Set, class Op, class T> void Backward(const Op&, const T*, const T*, T*, int64_t);

// Every functor compiled per set, for float and double (X), or for one type (XT). Sin and
// Cos of floats are a group apart: Eigen compiles their polynomial under options of its own,
// which GCC will not inline the rest of Eigen into under the piecewise group's
// -fno-trapping-math (CMakeLists.txt), so they are built without it; of doubles they are
// our own blends, which need it.
// clang-format off
#define RILL_MATH_PIECEWISE_ACTIVATIONS(X, XT)                                                            \
  X(Relu) X(Sigmoid) X(Tanh) X(Square) X(Exp) X(Log) X(Sqrt) X(Abs) X(Relu6) X(LeakyRelu) X(Erf) X(Gelu)  \
  X(Swish) X(HardSwish) X(HardSigmoid) X(Clip) X(Silu) X(LogSigmoid) X(TanhShrink) X(SoftShrink)          \
  X(HardShrink) X(ThresholdedRelu) X(BRelu) X(SoftRelu) X(Elu) X(Softplus) X(Softsign) X(Mish) X(Selu)    \
  X(STanh) X(Pow) X(Reciprocal) X(Rsqrt) X(Expm1) X(Log1p) X(LogBase<2>) X(LogBase<10>) X(Tan) X(Asin)    \
  X(Acos) X(Atan) X(Sinh) X(Cosh) X(Rounding<FloorStep>) X(Rounding<CeilStep>) X(Rounding<RoundStep>)     \
  X(Rounding<SignStep>) XT(Sin, double) XT(Cos, double)
// clang-format on
#define RILL_MATH_TRIGONOMETRIC_ACTIVATIONS(X, XT) XT(Sin, float) XT(Cos, float)
// square and abs also take integers.
#define RILL_MATH_INTEGER_ACTIVATIONS(X) X(Square, int32_t) X(Square, int64_t) X(Abs, int32_t) X(Abs, int64_t)

// The loops of MathIsa()'s set.
template <class Op, class T> Loops<Op, T> LoopsFor() {
  return ForMathIsa([](auto set) {
    using Set = decltype(set);
    return Loops<Op, T>{&Forward<Set, Op, T>, &Backward<Set, Op, T>};
  });
}

}  // namespace rill::math::activation

#endif  // RILL_MATH_ACTIVATION_LOOPS_H_
