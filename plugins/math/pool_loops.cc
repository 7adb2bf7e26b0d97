// Max pooling's row loops (pool_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
//
// A row goes in blocks of kLanes windows, the last block ending at n: it may go over
// windows the block before it did, and writes their answers again, the same (each depends
// only on its window, and a store of the last block writes what the one before it wrote).
// A block's loops have a trip count known at compile time, so they are whole vectors with
// no remainder; AVX-512 handles a block of floats with its permutes and scatters.
#include "pool_loops.h"

#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(RILL_MATH_ISA_TAG)
#error "pool_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {
namespace {

constexpr int64_t kLanes = 16;

// FirstEqualRow for any n.
template <class T>
bool Search(const T* x, int64_t n, int64_t step, int64_t kh, int64_t kw, int64_t row, int64_t col, const T* max,
            int32_t* at) {
  for (int64_t w = 0; w < n; ++w) at[w] = -1;
  // The window's elements from its last to its first, so that the last match kept is the
  // first; each pass is one vector loop across the row's windows.
  for (int64_t r = kh; r-- > 0;) {
    for (int64_t c = kw; c-- > 0;) {
      const auto offset = static_cast<int32_t>(r * row + c * col);
      const T* e = x + offset;
      for (int64_t w = 0; w < n; ++w) {
        const T v = e[w * step], m = max[w];
        const bool hit = (v == m) | ((m != m) & (v != v));
        at[w] = hit ? offset : at[w];
      }
    }
  }
  int32_t missed = 0;
  for (int64_t w = 0; w < n; ++w) missed |= at[w];
  return missed < 0;  // every offset found is at least 0
}

#if defined(__AVX512F__)
// kLanes windows 2 elements apart along a row of contiguous elements (step 2, col 1), as
// Search: element c of window l is at e[2 * l + c] (e = its row of x, plus c), so the
// vectors at e and e + 15 hold the elements c of all of them (e[0], e[2], ... e[30]), put
// into lanes by one permute. The second vector starts at e + 15, not e + 16, so that no
// load reads past the last window's element e[30], and so past X.
bool SearchStride2(const float* x, int64_t kh, int64_t kw, int64_t row, const float* max, int32_t* at) {
  // Lanes 0-7 from e's vector (e[0], e[2], ... e[14]), lanes 8-15 from e + 15's (its
  // elements 1, 3, ... 15: e[16], e[18], ... e[30]); the second's are numbered from 16.
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 m = _mm512_loadu_ps(max);
  const __mmask16 nan = _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
  __m512i found = _mm512_set1_epi32(-1);
  for (int64_t r = kh; r-- > 0;) {
    for (int64_t c = kw; c-- > 0;) {
      const auto offset = static_cast<int32_t>(r * row + c);
      const float* e = x + offset;
      const __m512 v = _mm512_permutex2var_ps(_mm512_loadu_ps(e), evens, _mm512_loadu_ps(e + 15));
      const __mmask16 hit = _mm512_cmp_ps_mask(v, m, _CMP_EQ_OQ) | (nan & _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
      found = _mm512_mask_mov_epi32(found, hit, _mm512_set1_epi32(offset));
    }
  }
  _mm512_storeu_si512(at, found);
  return _mm512_movepi32_mask(found) != 0;  // a sign bit set: a -1
}
#endif

template <class T>
bool SearchBlock(const T* x, int64_t step, int64_t kh, int64_t kw, int64_t row, int64_t col, const T* max,
                 int32_t* at) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (step == 2 && col == 1) return SearchStride2(x, kh, kw, row, max, at);
  }
#endif
  return Search(x, kLanes, step, kh, kw, row, col, max, at);
}

// StoreRow for any n.
template <class T> void Store(const int32_t* at, const T* g, int64_t n, int64_t step, T* dx) {
  for (int64_t w = 0; w < n; ++w) dx[w * step + at[w]] = g[w];
}

template <class T> void StoreBlock(const int32_t* at, const T* g, int64_t step, T* dx) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    // No two windows share an element, so the sixteen stores go to sixteen places.
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i where = _mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(step))),
                                           _mm512_loadu_si512(at));
    _mm512_i32scatter_ps(dx, where, _mm512_loadu_ps(g), sizeof(float));
    return;
  }
#endif
  Store(at, g, kLanes, step, dx);
}

}  // namespace

template <class Set, class T>
bool FirstEqualRow(const T* x, int64_t n, int64_t step, int64_t kh, int64_t kw, int64_t row, int64_t col, const T* max,
                   int32_t* at) {
  if (n < kLanes) return Search(x, n, step, kh, kw, row, col, max, at);
  bool missed = false;
  for (int64_t first = 0; first < n; first += kLanes) {
    const int64_t w = first + kLanes <= n ? first : n - kLanes;
    missed |= SearchBlock(x + w * step, step, kh, kw, row, col, max + w, at + w);
  }
  return missed;
}

template <class Set, class T> void StoreRow(const int32_t* at, const T* g, int64_t n, int64_t step, T* dx) {
  if (n < kLanes) return Store(at, g, n, step, dx);
  for (int64_t first = 0; first < n; first += kLanes) {
    const int64_t w = first + kLanes <= n ? first : n - kLanes;
    StoreBlock(at + w, g + w, step, dx + w * step);
  }
}

#define RILL_POOL_LOOPS(T)                                                                                          \
  template bool FirstEqualRow<RILL_MATH_ISA_TAG, T>(const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, \
                                                    const T*, int32_t*);                                            \
  template void StoreRow<RILL_MATH_ISA_TAG, T>(const int32_t*, const T*, int64_t, int64_t, T*);
RILL_POOL_LOOPS(float)
RILL_POOL_LOOPS(double)
#undef RILL_POOL_LOOPS

}  // namespace rill::math
