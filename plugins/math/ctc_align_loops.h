// ctc_align's count and copy of the tokens a sequence keeps, compiled once per instruction
// set (isa.h) by ctc_align_loops.cc: both compare each token with the blank and with the
// token before it, and SSE2 has no vector compare of 64-bit integers, so at its width the
// loops run a token at a time. The copy moves a register's kept tokens together at
// AVX-512's width (compress).
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

// The tokens of in[0, n) that stay, in order, to out[0, kept), `kept` being what CountKept
// answered for them; nothing is written at out[kept] or past. out does not overlap in.
template <class T>
using CopyKeptLoop = void (*)(const T* in, int64_t n, T* out, int64_t kept, T blank, bool merge_repeated);

// Instantiated by ctc_align_loops.cc for each set's tag, for int32_t and int64_t.
template <class Set, class T> int64_t CountKept(const T* in, int64_t n, T blank, bool merge_repeated);
template <class Set, class T> void CopyKept(const T* in, int64_t n, T* out, int64_t kept, T blank, bool merge_repeated);

// MathIsa()'s loops over T, picked on first use.
template <class T> struct CtcAlignLoops {
  CountKeptLoop<T> count;
  CopyKeptLoop<T> copy;
};
template <class T> const CtcAlignLoops<T>& CtcAlignLoopsFor() {
  static const CtcAlignLoops<T> loops = ForMathIsa([](auto set) {
    return CtcAlignLoops<T>{&CountKept<decltype(set), T>, &CopyKept<decltype(set), T>};
  });
  return loops;
}

}  // namespace rill::math

#endif  // RILL_MATH_CTC_ALIGN_LOOPS_H_
