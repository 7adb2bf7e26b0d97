// elementwise_div's same-shape loop in floating point, compiled once per instruction set
// (isa.h) by quotient_loops.cc: division is the one elementwise operation whose throughput,
// not memory, bounds the loop at SSE2's width, and a wider set divides several times as
// many elements per instruction.
//
// Each quotient is IEEE division of one pair, the same bits at any width and for any
// thread budget.
#ifndef RILL_MATH_QUOTIENT_LOOPS_H_
#define RILL_MATH_QUOTIENT_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// out[i] = x[i] / y[i] for i < n. out may be x or y: each element is read before it is
// written.
template <class T> using QuotientLoop = void (*)(const T* x, const T* y, T* out, int64_t n);

// Instantiated by quotient_loops.cc for each set's tag, for float and double.
template <class Set, class T> void Quotients(const T* x, const T* y, T* out, int64_t n);

// MathIsa()'s loop over T, picked on first use.
template <class T> QuotientLoop<T> QuotientLoopFor() {
  static const QuotientLoop<T> loop =
      ForMathIsa([](auto set) -> QuotientLoop<T> { return &Quotients<decltype(set), T>; });
  return loop;
}

}  // namespace rill::math

#endif  // RILL_MATH_QUOTIENT_LOOPS_H_
