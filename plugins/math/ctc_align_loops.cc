// ctc_align's count and copy (ctc_align_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "ctc_align_loops.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(RILL_MATH_ISA_TAG)
#error "ctc_align_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

template <class Set, class T> int64_t CountKept(const T* in, int64_t n, T blank, bool merge_repeated) {
  if (n == 0) return 0;
  int64_t kept = in[0] != blank;
  for (int64_t i = 1; i < n; ++i) kept += StaysAfter(in[i], in[i - 1], blank, merge_repeated);
  return kept;
}

template <class Set, class T>
void CopyKept(const T* in, [[maybe_unused]] int64_t n, T* out, int64_t kept, T blank, bool merge_repeated) {
  if (kept == 0) return;
  out[0] = in[0];
  int64_t i = 1, k = in[0] != blank;
#if defined(__AVX512F__)
  // A register of tokens at a time, each compared with the blank and with the token before
  // it (the register loaded one token earlier): the kept ones moved to its front (compress)
  // and the whole register stored, its lanes past them overwritten by the next store; a
  // store is made only while a whole register still fits in out[0, kept).
  constexpr int64_t kLanes = 64 / sizeof(T);
  const __m512i b =
      sizeof(T) == 8 ? _mm512_set1_epi64(static_cast<long long>(blank)) : _mm512_set1_epi32(static_cast<int>(blank));
  const uint32_t all = (1u << kLanes) - 1;
  for (; i + kLanes <= n && k + kLanes <= kept; i += kLanes) {
    const __m512i v = _mm512_loadu_si512(in + i), before = _mm512_loadu_si512(in + i - 1);
    if constexpr (sizeof(T) == 8) {
      const uint32_t keep =
          _mm512_cmpneq_epi64_mask(v, b) & (merge_repeated ? _mm512_cmpneq_epi64_mask(v, before) : all);
      _mm512_storeu_si512(out + k, _mm512_maskz_compress_epi64(static_cast<__mmask8>(keep), v));
      k += __builtin_popcount(keep);
    } else {
      const uint32_t keep =
          _mm512_cmpneq_epi32_mask(v, b) & (merge_repeated ? _mm512_cmpneq_epi32_mask(v, before) : all);
      _mm512_storeu_si512(out + k, _mm512_maskz_compress_epi32(static_cast<__mmask16>(keep), v));
      k += __builtin_popcount(keep);
    }
  }
#endif
  // Every token is written at the next free place, which moves on only past one that
  // stays, and the loop ends with the last of those, so nothing is written at out[kept] or
  // past; no branch on the tokens, so that the copy does not stall on each token's guess.
  for (; k < kept; ++i) {
    out[k] = in[i];
    k += StaysAfter(in[i], in[i - 1], blank, merge_repeated);
  }
}

template int64_t CountKept<RILL_MATH_ISA_TAG, int32_t>(const int32_t*, int64_t, int32_t, bool);
template int64_t CountKept<RILL_MATH_ISA_TAG, int64_t>(const int64_t*, int64_t, int64_t, bool);
template void CopyKept<RILL_MATH_ISA_TAG, int32_t>(const int32_t*, int64_t, int32_t*, int64_t, int32_t, bool);
template void CopyKept<RILL_MATH_ISA_TAG, int64_t>(const int64_t*, int64_t, int64_t*, int64_t, int64_t, bool);

}  // namespace rill::math
