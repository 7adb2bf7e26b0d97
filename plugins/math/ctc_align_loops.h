// ctc_align's count of the tokens a sequence keeps, compiled once per instruction set
// (isa.h) by ctc_align_loops.cc: the count compares each token with the blank and with the
// token before it, and SSE2 has no vector compare of 64-bit integers, so at its width the
// loop runs a token at a time.
#ifndef RILL_MATH_CTC_ALIGN_LOOPS_H_
#define RILL_MATH_CTC_ALIGN_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// Whether `token` stays after `before`: it is not the blank, and with merge_repeated it is
// not the token before it (a blank between two equal tokens keeps both).
template <class T> inline int StaysAfter(T token, T before, T blank, bool merge_repeated) {
  return (token != blank) & (!merge_repeated | (token != before));
}

// How many of in[0, n) stay (StaysAfter; the first token only if it is not the blank).
template <class T> using CountKeptLoop = int64_t (*)(const T* in, int64_t n, T blank, bool merge_repeated);

// Instantiated by ctc_align_loops.cc for each set's tag, for int32_t and int64_t.
template <class Set, class T> int64_t CountKept(const T* in, int64_t n, T blank, bool merge_repeated);

// MathIsa()'s loop over T, picked on first use.
template <class T> CountKeptLoop<T> CountKeptLoopFor() {
  static const CountKeptLoop<T> loop =
      ForMathIsa([](auto set) -> CountKeptLoop<T> { return &CountKept<decltype(set), T>; });
  return loop;
}

}  // namespace rill::math

#endif  // RILL_MATH_CTC_ALIGN_LOOPS_H_
