// Max pooling's gradient along a row of windows, compiled once per instruction set (isa.h)
// by pool_loops.cc: the windows of a row are handled side by side, one vector lane each,
// so that which element of a window is its largest (in random data, a branch no predictor
// guesses) costs a select, not a branch.
//
// A row of windows: n windows, each kh x kw elements of X, `row` apart down and `col` apart
// across, window w's element (0, 0) at x + w * step, and their Out and Out@GRAD side by
// side (max[w], g[w]). An element's offset in its window is r * row + c * col. Every offset
// from x the loops form (w * step plus an offset in a window) fits in int32_t, which the
// caller sees to, so that a lane of `at` is as wide as a float's.
//
// Each window's answer depends on its own elements only, so a result is the same for any
// thread budget.
#ifndef RILL_MATH_POOL_LOOPS_H_
#define RILL_MATH_POOL_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// at[w] = the offset of window w's first element, row by row, equal to max[w], or where
// max[w] is NaN its first NaN; -1 where none is. Returns whether some at[w] is -1.
template <class T>
using FirstEqualRowLoop = bool (*)(const T* x, int64_t n, int64_t step, int64_t kh, int64_t kw, int64_t row,
                                   int64_t col, const T* max, int32_t* at);

// dx[w * step + at[w]] = g[w] for each window w < n, at[w] one of its offsets; dx is laid
// out as X. No two windows may share an element.
template <class T> using StoreRowLoop = void (*)(const int32_t* at, const T* g, int64_t n, int64_t step, T* dx);

// Instantiated by pool_loops.cc for each set's tag, for float and double.
template <class Set, class T>
bool FirstEqualRow(const T* x, int64_t n, int64_t step, int64_t kh, int64_t kw, int64_t row, int64_t col, const T* max,
                   int32_t* at);
template <class Set, class T> void StoreRow(const int32_t* at, const T* g, int64_t n, int64_t step, T* dx);

// MathIsa()'s loops over T, picked on first use.
template <class T> struct MaxPoolGradLoops {
  FirstEqualRowLoop<T> first_equal;
  StoreRowLoop<T> store;
};
template <class T> const MaxPoolGradLoops<T>& MaxPoolGradLoopsFor() {
  static const MaxPoolGradLoops<T> loops = ForMathIsa([](auto set) {
    return MaxPoolGradLoops<T>{&FirstEqualRow<decltype(set), T>, &StoreRow<decltype(set), T>};
  });
  return loops;
}

}  // namespace rill::math

#endif  // RILL_MATH_POOL_LOOPS_H_
