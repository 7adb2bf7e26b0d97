// The innermost loops of a reduction (reduction.h), compiled once per instruction set
// (isa.h) by reduction_loops.cc: a reduction reads every element once and is bound by how
// many elements a core combines per cycle, which the vector width sets.
//
// Each loop's order of combination is fixed for a given set and length (packets of
// accumulators, then their lanes), so a result is the same bits run to run and for every
// thread budget; max and min propagate NaN (nan_order.h's rule: a NaN among the values is the extreme).
#ifndef RILL_MATH_REDUCTION_LOOPS_H_
#define RILL_MATH_REDUCTION_LOOPS_H_

#include <cstdint>
#include <limits>

#include "isa.h"

namespace rill::math {

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

// What R of no elements gives (the mean's sum: 0).
template <Reduction R, class T> T Identity() {
  if constexpr (R == Reduction::kMax) return std::numeric_limits<T>::lowest();
  if constexpr (R == Reduction::kMin) return std::numeric_limits<T>::max();
  if constexpr (R == Reduction::kProd) return T(1);
  return T(0);
}

namespace reduction {

template <class T> struct Loops {
  // The reduction of x[0, n) (the mean's sum; the identity for n 0).
  T (*row)(const T* x, int64_t n);
  // acc[0, n) = acc (op) x[0, n), element by element.
  void (*rows)(T* acc, const T* x, int64_t n);
};

// Instantiated by reduction_loops.cc for each set's tag, reduction and element type (the
// reduce ops' float, double, int32_t and int64_t; uint8_t's max and min for bools).
template <class Set, Reduction R, class T> T Row(const T* x, int64_t n);
template <class Set, Reduction R, class T> void Rows(T* acc, const T* x, int64_t n);
// The sum of x[i] * y[i] over [0, n), in double (float and double); x's squares where y
// is x.
template <class Set, class T> double DotInDouble(const T* x, const T* y, int64_t n);

// A running maximum with where it came from: m = max(m, v) element by element over n, the
// earlier row kept on ties and against NaN (a strict >), and idx = row where v won (float
// and double; sequence_pool's MAX).
template <class Set, class T> void KeepMax(T* m, int32_t* idx, const T* v, int64_t n, int32_t row);

// MathIsa()'s loops for R over T, picked on first use.
template <Reduction R, class T> const Loops<T>& LoopsFor() {
  static const Loops<T> loops = ForMathIsa([](auto set) {
    using Set = decltype(set);
    return Loops<T>{&Row<Set, R, T>, &Rows<Set, R, T>};
  });
  return loops;
}

// MathIsa()'s DotInDouble over T.
template <class T> auto DotInDoubleFor() {
  static const auto loop = ForMathIsa([](auto set) { return &DotInDouble<decltype(set), T>; });
  return loop;
}

// MathIsa()'s KeepMax over T.
template <class T> auto KeepMaxFor() {
  static const auto loop = ForMathIsa([](auto set) { return &KeepMax<decltype(set), T>; });
  return loop;
}

}  // namespace reduction
}  // namespace rill::math

#endif  // RILL_MATH_REDUCTION_LOOPS_H_
