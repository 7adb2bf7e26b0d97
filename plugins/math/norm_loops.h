// Normalization gradients' loops over one contiguous run of a channel's elements (group_norm
// and instance_norm in NCHW), compiled once per instruction set (isa.h) by norm_loops.cc:
// two reductions and an affine map of two inputs, several times faster at AVX-512's width
// than at the baseline's.
//
// A reduction's order is fixed by the set and the run's length, never by which thread runs
// it: the same bits for any thread budget.
#ifndef RILL_MATH_NORM_LOOPS_H_
#define RILL_MATH_NORM_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math::norm {

template <class T> struct GradLoops {
  // *dot = sum(g * (x - mu) * k) and *total = sum(g) over [0, n).
  void (*sums)(const T* x, const T* g, int64_t n, T mu, T k, T* dot, T* total);
  // dx = alpha * g + beta * (x - mu) + gamma over [0, n).
  void (*dx)(const T* x, const T* g, int64_t n, T mu, T alpha, T beta, T gamma, T* dx);
};

// Instantiated by norm_loops.cc for each set's tag, for float and double.
template <class Set, class T> void GradSums(const T* x, const T* g, int64_t n, T mu, T k, T* dot, T* total);
template <class Set, class T> void GradDx(const T* x, const T* g, int64_t n, T mu, T alpha, T beta, T gamma, T* dx);

template <class T> GradLoops<T> GradLoopsFor() {
  return ForMathIsa([](auto set) {
    using Set = decltype(set);
    return GradLoops<T>{&GradSums<Set, T>, &GradDx<Set, T>};
  });
}

}  // namespace rill::math::norm

#endif  // RILL_MATH_NORM_LOOPS_H_
