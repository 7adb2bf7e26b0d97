// elementwise_pow's same-shape loop in single precision, compiled once per instruction set
// (isa.h) by pow_loops.cc: a log and an exp in double precision are all of its work, and
// Eigen vectorizes them well only from AVX2 on.
//
// The loop is elementwise, so a result is the same bits for any thread budget.
#ifndef RILL_MATH_POW_LOOPS_H_
#define RILL_MATH_POW_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// out[i] = x[i] ^ y[i] for i < n, as std::pow in double precision rounded to float gives it:
// exp(y log x) in double precision for x positive and finite and y finite, where its error
// (about |y log x| double roundings, and |y log x| is under 104 wherever a float result is
// neither 0 nor inf) vanishes in the rounding to float; std::pow itself for the rest (signs,
// zeros, infinities, NaN). out may be x or y: each element is read before it is written.
using PowLoop = void (*)(const float* x, const float* y, float* out, int64_t n);

// Instantiated by pow_loops.cc for each set's tag.
template <class Set> void PowFloats(const float* x, const float* y, float* out, int64_t n);

inline PowLoop PowLoopFor() {
  return ForMathIsa([](auto set) -> PowLoop { return &PowFloats<decltype(set)>; });
}

}  // namespace rill::math

#endif  // RILL_MATH_POW_LOOPS_H_
