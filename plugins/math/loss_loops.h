// The elementwise losses' loops, compiled once per instruction set (isa.h) by
// loss_loops.cc: exp and log1p are most of their work, and several times faster at
// AVX-512's width.
//
// Each loop takes elements [begin, end) (a thread gives it a contiguous run) and is
// elementwise, so a result is the same bits for any thread budget.
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

}  // namespace rill::math::loss

#endif  // RILL_MATH_LOSS_LOOPS_H_
