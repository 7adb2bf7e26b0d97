// The elementwise losses' loops, compiled once per instruction set (isa.h) by
// loss_loops.cc: exp and log1p, or a piecewise formula's two sides and the blend between
// them, are most of their work, and several times faster at the machine's width.
//
// Each loop takes elements [begin, end), or rows [first, last), that a thread gives it,
// and a row's sum is made by one call in one order, so a result is the same bits for any
// thread budget.
#ifndef RILL_MATH_LOSS_LOOPS_H_
#define RILL_MATH_LOSS_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math::loss {

// sigmoid_cross_entropy_with_logits: an element whose label is `ignore` gives 0; the others
// are divided by `div`.
template <class T> struct SigmoidCrossEntropyLoops {
  // out = max(x, 0) - x * label + ln(1 + exp(-|x|))
  void (*forward)(const T* x, const T* label, T* out, int64_t begin, int64_t end, T ignore, T div);
  // dx = (sigmoid(x) - label) * g
  void (*backward)(const T* x, const T* label, const T* g, T* dx, int64_t begin, int64_t end, T ignore, T div);
};

// Instantiated by loss_loops.cc for each set's tag, for float and double.
template <class Set, class T>
void SigmoidCrossEntropyForward(const T* x, const T* label, T* out, int64_t begin, int64_t end, T ignore, T div);
template <class Set, class T>
void SigmoidCrossEntropyBackward(const T* x, const T* label, const T* g, T* dx, int64_t begin, int64_t end, T ignore,
                                 T div);

template <class T> SigmoidCrossEntropyLoops<T> SigmoidCrossEntropyLoopsFor() {
  return ForMathIsa([](auto set) {
    using Set = decltype(set);
    return SigmoidCrossEntropyLoops<T>{&SigmoidCrossEntropyForward<Set, T>, &SigmoidCrossEntropyBackward<Set, T>};
  });
}

// smooth_l1_loss on rows of `cols` elements, with s2 = sigma^2 and the weights null or
// both given (smooth_l1_loss.cc states the formulas).
template <class T> struct SmoothL1Loops {
  // diff = inside * (x - y) and loss[i] = the sum over row i of outside * f(diff).
  void (*forward)(const T* x, const T* y, const T* inside, const T* outside, T* diff, T* loss, int64_t cols,
                  int64_t first, int64_t last, T s2);
  // out = sign * g[i] * inside * outside * f'(diff) over row i.
  void (*backward)(const T* diff, const T* g, const T* inside, const T* outside, T* out, int64_t cols, int64_t first,
                   int64_t last, T s2, T sign);
};

template <class Set, class T>
void SmoothL1Forward(const T* x, const T* y, const T* inside, const T* outside, T* diff, T* loss, int64_t cols,
                     int64_t first, int64_t last, T s2);
template <class Set, class T>
void SmoothL1Backward(const T* diff, const T* g, const T* inside, const T* outside, T* out, int64_t cols, int64_t first,
                      int64_t last, T s2, T sign);

template <class T> SmoothL1Loops<T> SmoothL1LoopsFor() {
  return ForMathIsa([](auto set) {
    using Set = decltype(set);
    return SmoothL1Loops<T>{&SmoothL1Forward<Set, T>, &SmoothL1Backward<Set, T>};
  });
}

}  // namespace rill::math::loss

#endif  // RILL_MATH_LOSS_LOOPS_H_
