// The same-shape loops of the arithmetic elementwise ops (add, sub, mul, div, max, min),
// compiled once per instruction set (isa.h) by binary_loops.cc: out[i] = x[i] op y[i] over
// contiguous buffers, the loop elementwise.cc runs on each chunk of a pass. Division's
// throughput, and max and min's compare-and-select, bound such a loop at SSE2's width; a
// wider set handles several times as many elements per instruction.
//
// Each element is op's result for one pair (IEEE arithmetic for floats, wrapping for
// integers), the same bits at any width and for any thread budget.
#ifndef RILL_MATH_BINARY_LOOPS_H_
#define RILL_MATH_BINARY_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

enum class Binary { kAdd, kSub, kMul, kDiv, kMax, kMin };

// a op b for one pair: the element rule of the loops and of elementwise.cc's broadcasting
// walks. Max and min are Paddle's (a > b ? a : b): where either is NaN, b. Integer division
// is not here: elementwise.cc defines it for every pair, checking divisors first.
template <Binary Op, class T> inline T ApplyBinary(T a, T b) {
  if constexpr (Op == Binary::kAdd) return a + b;
  if constexpr (Op == Binary::kSub) return a - b;
  if constexpr (Op == Binary::kMul) return a * b;
  if constexpr (Op == Binary::kDiv) return a / b;
  if constexpr (Op == Binary::kMax) return a > b ? a : b;
  if constexpr (Op == Binary::kMin) return a < b ? a : b;
}

// out[i] = x[i] op y[i] for i < n. out may be x or y: each element is read before it is
// written.
template <class T> using BinaryLoop = void (*)(const T* x, const T* y, T* out, int64_t n);

// Instantiated by binary_loops.cc for each set's tag: every op over float and double, and
// every op but division over int32_t and int64_t.
template <class Set, Binary Op, class T> void SameShape(const T* x, const T* y, T* out, int64_t n);

// MathIsa()'s loop of Op over T, picked on first use.
template <Binary Op, class T> BinaryLoop<T> BinaryLoopFor() {
  static const BinaryLoop<T> loop =
      ForMathIsa([](auto set) -> BinaryLoop<T> { return &SameShape<decltype(set), Op, T>; });
  return loop;
}

}  // namespace rill::math

#endif  // RILL_MATH_BINARY_LOOPS_H_
