// softmax and log_softmax over the vectors of a tensor seen as [pre, n, post] (the vector at
// (i, k) holds the n elements (i, j, k)), and their gradients, compiled once per instruction
// set (isa.h) by softmax_loops.cc: exp is most of the work, and several times faster at
// AVX-512's width.
//
// Each loop takes the blocks [first, last) of `pre`: a thread gives it a contiguous run of
// blocks, and each vector's sums are Eigen's (a fixed order for a given set and n), so a
// result is the same bits for any thread budget. out and dx are not any input.
#ifndef RILL_MATH_SOFTMAX_LOOPS_H_
#define RILL_MATH_SOFTMAX_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math::softmax {

// The shape of the vectors normalized.
struct Vectors {
  int64_t pre = 1, n = 1, post = 1;
};

template <class T> struct Loops {
  // out = softmax of x (or, log, log_softmax: x - shift), with shift = max + ln(sum(exp(x -
  // max))) of each vector, which is also written to shift[i * post + k] when shift is not
  // null (the cross entropy's -log softmax(x_j) is shift - x_j, finite where the
  // probability underflows).
  void (*forward)(const T* x, T* out, T* shift, const Vectors& v, int64_t first, int64_t last, bool log);
  // dx from Out and Out@GRAD: out * (g - sum(g * out)) for softmax; g - exp(out) * sum(g)
  // for log_softmax (log).
  void (*backward)(const T* out, const T* g, T* dx, const Vectors& v, int64_t first, int64_t last, bool log);
};

// Instantiated by softmax_loops.cc for each set's tag.
template <class Set, class T>
void Forward(const T* x, T* out, T* shift, const Vectors& v, int64_t first, int64_t last, bool log);
template <class Set, class T>
void Backward(const T* out, const T* g, T* dx, const Vectors& v, int64_t first, int64_t last, bool log);

template <class T> Loops<T> LoopsFor() {
  return ForMathIsa([](auto set) {
    using Set = decltype(set);
    return Loops<T>{&Forward<Set, T>, &Backward<Set, T>};
  });
}

}  // namespace rill::math::softmax

#endif  // RILL_MATH_SOFTMAX_LOOPS_H_
