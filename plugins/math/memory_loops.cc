// The fill, copy, xor, reverse, match and transpose loops (memory_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG, with loop pattern
// distribution off (as every per-set object), so that these loops stay loops rather than
// becoming the memset and memcpy calls they stand in for.
#include "memory_loops.h"

#include <algorithm>
#include <cstring>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(RILL_MATH_ISA_TAG)
#error "memory_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::memory {

template <class Set, class Word> void Fill(Word* p, int64_t n, Word value) {
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

// The bytes up to `to`'s next cache line one by one, so that each vector store of the rest
// writes within one line: a store split across two lines costs more than a split load.
template <class Set> void Copy(const uint8_t* __restrict from, uint8_t* __restrict to, int64_t n) {
  constexpr uintptr_t kLine = 64;
  const auto head =
      std::min<int64_t>(n, static_cast<int64_t>((kLine - reinterpret_cast<uintptr_t>(to) % kLine) % kLine));
  for (int64_t i = 0; i < head; ++i) to[i] = from[i];
  for (int64_t i = head; i < n; ++i) to[i] = from[i];
}

template <class Set> void XorBytes(const uint8_t* from, uint8_t* to, int64_t n, uint8_t mask) {
  for (int64_t i = 0; i < n; ++i) to[i] = from[i] ^ mask;
}

template <class Set, class Word> void Reverse(const Word* __restrict from, Word* __restrict to, int64_t n) {
  for (int64_t j = 0; j < n; ++j) to[j] = from[n - 1 - j];
}

#if defined(__AVX2__)  // the sets with 256-bit registers: not the baseline's SSE2
namespace {            // internal to each set's copy: the helpers differ by the set's flags

// 256 bits of words, as GCC's vector extension (one register), and the lane indices a
// shuffle of two of them takes.
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef int32_t I32x8 __attribute__((vector_size(32)));
typedef uint64_t U64x4 __attribute__((vector_size(32)));
typedef int64_t I64x4 __attribute__((vector_size(32)));
template <class V, class Word> V Load256(const Word* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class Word> void Store256(Word* p, const V& v) { std::memcpy(p, &v, sizeof v); }

// One block: to[c * ts + r] = from[r * fs + c] for r, c < 32 / sizeof(Word), by rounds of
// shuffles interleaving pairs of rows: a word at a time, then two, then four (8-byte
// words: one, then two).
void TransposeBlock(const uint32_t* from, int64_t fs, uint32_t* to, int64_t ts) {
  using V = U32x8;
  using I = I32x8;
  V r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = Load256<V>(from + k * fs);
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shuffle(r[k], r[k + 1], I{0, 8, 1, 9, 4, 12, 5, 13});
    t[k + 1] = __builtin_shuffle(r[k], r[k + 1], I{2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = __builtin_shuffle(t[k], t[k + 2], I{0, 1, 8, 9, 4, 5, 12, 13});
    u[k + 1] = __builtin_shuffle(t[k], t[k + 2], I{2, 3, 10, 11, 6, 7, 14, 15});
    u[k + 2] = __builtin_shuffle(t[k + 1], t[k + 3], I{0, 1, 8, 9, 4, 5, 12, 13});
    u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], I{2, 3, 10, 11, 6, 7, 14, 15});
  }
  for (int k = 0; k < 4; ++k) {
    Store256(to + k * ts, __builtin_shuffle(u[k], u[k + 4], I{0, 1, 2, 3, 8, 9, 10, 11}));
    Store256(to + (k + 4) * ts, __builtin_shuffle(u[k], u[k + 4], I{4, 5, 6, 7, 12, 13, 14, 15}));
  }
}
void TransposeBlock(const uint64_t* from, int64_t fs, uint64_t* to, int64_t ts) {
  using V = U64x4;
  using I = I64x4;
  const V r0 = Load256<V>(from), r1 = Load256<V>(from + fs), r2 = Load256<V>(from + 2 * fs);
  const V r3 = Load256<V>(from + 3 * fs);
  const V t0 = __builtin_shuffle(r0, r1, I{0, 4, 2, 6}), t1 = __builtin_shuffle(r0, r1, I{1, 5, 3, 7});
  const V t2 = __builtin_shuffle(r2, r3, I{0, 4, 2, 6}), t3 = __builtin_shuffle(r2, r3, I{1, 5, 3, 7});
  Store256(to, __builtin_shuffle(t0, t2, I{0, 1, 4, 5}));
  Store256(to + ts, __builtin_shuffle(t1, t3, I{0, 1, 4, 5}));
  Store256(to + 2 * ts, __builtin_shuffle(t0, t2, I{2, 3, 6, 7}));
  Store256(to + 3 * ts, __builtin_shuffle(t1, t3, I{2, 3, 6, 7}));
}

}  // namespace
#endif

template <class Set, class Word>
void Transpose(const Word* from, int64_t from_stride, Word* to, int64_t to_stride, int64_t rows, int64_t cols) {
  const auto one_by_one = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t r = r0; r < r1; ++r) to[c * to_stride + r] = from[r * from_stride + c];
    }
  };
  int64_t whole_rows = 0;
#if defined(__AVX2__)
  {
    constexpr int64_t kBlock = 32 / sizeof(Word);
    const int64_t whole_cols = cols / kBlock * kBlock;
    whole_rows = rows / kBlock * kBlock;
    for (int64_t r = 0; r < whole_rows; r += kBlock) {
      for (int64_t c = 0; c < whole_cols; c += kBlock) {
        TransposeBlock(from + r * from_stride + c, from_stride, to + c * to_stride + r, to_stride);
      }
    }
    one_by_one(0, whole_rows, whole_cols, cols);
  }
#endif
  one_by_one(whole_rows, rows, 0, cols);
}

namespace {  // each set's object its own copy (isa.h)

// Whether w equals none of l[0, K): a fold over the list written out, not a loop, so that
// the loop over words is the innermost one and vectorizes.
template <int K, class Word, size_t... J> int UnmatchedOf(Word w, const Word* l, std::index_sequence<J...>) {
  return ((w != l[J]) & ...);
}
template <int K, class Word> int Unmatched(Word w, const Word* l) {
  return UnmatchedOf<K>(w, l, std::make_index_sequence<K>());
}

}  // namespace

template <class Set, class Word, int K> int64_t CountUnmatched(const Word* from, int64_t n, const Word* list) {
  Word l[K];
  std::copy(list, list + K, l);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += Unmatched<K>(from[i], l);
  return count;
}

template <class Set, class Word, int K>
void CopyUnmatched(const Word* from, [[maybe_unused]] int64_t n, Word* to, int64_t count, const Word* list) {
  Word l[K];
  std::copy(list, list + K, l);
  int64_t i = 0, k = 0;
#if defined(__AVX512F__)
  // A register of words at a time: the unmatched moved to its front (compress) and the
  // whole register stored, its lanes past them overwritten by the next store; a store is
  // made only while a whole register still fits in to[0, count). The list's words are
  // broadcast once, and a register's K compares are independent, their masks and-ed
  // together.
  constexpr int64_t kLanes = 64 / sizeof(Word);
  __m512i t[K];
  for (int j = 0; j < K; ++j) {
    t[j] =
        sizeof(Word) == 8 ? _mm512_set1_epi64(static_cast<long long>(l[j])) : _mm512_set1_epi32(static_cast<int>(l[j]));
  }
  for (; i + kLanes <= n && k + kLanes <= count; i += kLanes) {
    const __m512i v = _mm512_loadu_si512(from + i);
    uint32_t keep = ~0u;
    for (int j = 0; j < K; ++j) {
      if constexpr (sizeof(Word) == 8) keep &= _mm512_cmpneq_epu64_mask(v, t[j]);
      else keep &= _mm512_cmpneq_epu32_mask(v, t[j]);
    }
    if constexpr (sizeof(Word) == 8) {
      keep &= 0xffu;
      _mm512_storeu_si512(to + k, _mm512_maskz_compress_epi64(static_cast<__mmask8>(keep), v));
    } else {
      keep &= 0xffffu;
      _mm512_storeu_si512(to + k, _mm512_maskz_compress_epi32(static_cast<__mmask16>(keep), v));
    }
    k += __builtin_popcount(keep);
  }
#endif
  // Every word is written at the next free place, which moves on only past an unmatched
  // one; the loop ends with the last of those, so nothing is written at to[count] or past.
  for (; k < count; ++i) {
    to[k] = from[i];
    k += Unmatched<K>(from[i], l);
  }
}

template void Fill<RILL_MATH_ISA_TAG, uint8_t>(uint8_t*, int64_t, uint8_t);
template void Fill<RILL_MATH_ISA_TAG, uint16_t>(uint16_t*, int64_t, uint16_t);
template void Fill<RILL_MATH_ISA_TAG, uint32_t>(uint32_t*, int64_t, uint32_t);
template void Fill<RILL_MATH_ISA_TAG, uint64_t>(uint64_t*, int64_t, uint64_t);
template void Copy<RILL_MATH_ISA_TAG>(const uint8_t*, uint8_t*, int64_t);
template void XorBytes<RILL_MATH_ISA_TAG>(const uint8_t*, uint8_t*, int64_t, uint8_t);
template void Reverse<RILL_MATH_ISA_TAG, uint8_t>(const uint8_t*, uint8_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint16_t>(const uint16_t*, uint16_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint32_t>(const uint32_t*, uint32_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint64_t>(const uint64_t*, uint64_t*, int64_t);
#define RILL_MATH_MATCH_LOOPS(Word, K)                                                            \
  template int64_t CountUnmatched<RILL_MATH_ISA_TAG, Word, K>(const Word*, int64_t, const Word*); \
  template void CopyUnmatched<RILL_MATH_ISA_TAG, Word, K>(const Word*, int64_t, Word*, int64_t, const Word*);
#define RILL_MATH_MATCH_LOOPS_OF(Word) \
  RILL_MATH_MATCH_LOOPS(Word, 1)       \
  RILL_MATH_MATCH_LOOPS(Word, 2) RILL_MATH_MATCH_LOOPS(Word, 4) RILL_MATH_MATCH_LOOPS(Word, 8)
RILL_MATH_MATCH_LOOPS_OF(uint32_t)
RILL_MATH_MATCH_LOOPS_OF(uint64_t)
template void Transpose<RILL_MATH_ISA_TAG, uint32_t>(const uint32_t*, int64_t, uint32_t*, int64_t, int64_t, int64_t);
template void Transpose<RILL_MATH_ISA_TAG, uint64_t>(const uint64_t*, int64_t, uint64_t*, int64_t, int64_t, int64_t);

}  // namespace rill::math::memory
