// row_conv's row of Out (row_conv.cc), compiled once per instruction set (isa.h) by
// row_conv_loops.cc: K products and sums an element, on rows that stay in cache, bound it
// at SSE2's width rather than the memory it moves.
//
// A row is one call, so a result is the same bits for any thread budget.
#ifndef RILL_MATH_ROW_CONV_LOOPS_H_
#define RILL_MATH_ROW_CONV_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// out[j] = the sum over k < reach of x[k * d + j] * w[k * d + j], in k's order, for j < d:
// one row of Out from the `reach` rows from its own on (x) and the filter's first rows (w).
// out overlaps neither x nor w.
template <class T> using LookaheadLoop = void (*)(T* out, const T* x, const T* w, int64_t reach, int64_t d);

// Instantiated by row_conv_loops.cc for each set's tag, for float and double.
template <class Set, class T> void AddLookahead(T* out, const T* x, const T* w, int64_t reach, int64_t d);

template <class T> LookaheadLoop<T> LookaheadLoopFor() {
  return ForMathIsa([](auto set) -> LookaheadLoop<T> { return &AddLookahead<decltype(set), T>; });
}

}  // namespace rill::math

#endif  // RILL_MATH_ROW_CONV_LOOPS_H_
