// The fill, copy and reverse loops (memory_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG, with loop pattern
// distribution off (as every per-set object), so that these loops stay loops rather than
// becoming the memset and memcpy calls they stand in for.
#include "memory_loops.h"

#include <algorithm>

#if !defined(RILL_MATH_ISA_TAG)
#error "memory_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::memory {

template <class Set, class Word>
void Fill(Word* p, int64_t n, Word value) {
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

// The bytes up to `to`'s next cache line one by one, so that each vector store of the rest
// writes within one line: a store split across two lines costs more than a split load.
template <class Set>
void Copy(const uint8_t* __restrict from, uint8_t* __restrict to, int64_t n) {
  constexpr uintptr_t kLine = 64;
  const auto head = std::min<int64_t>(n, static_cast<int64_t>((kLine - reinterpret_cast<uintptr_t>(to) % kLine) % kLine));
  for (int64_t i = 0; i < head; ++i) to[i] = from[i];
  for (int64_t i = head; i < n; ++i) to[i] = from[i];
}

template <class Set, class Word>
void Reverse(const Word* __restrict from, Word* __restrict to, int64_t n) {
  for (int64_t j = 0; j < n; ++j) to[j] = from[n - 1 - j];
}

template void Fill<RILL_MATH_ISA_TAG, uint8_t>(uint8_t*, int64_t, uint8_t);
template void Fill<RILL_MATH_ISA_TAG, uint16_t>(uint16_t*, int64_t, uint16_t);
template void Fill<RILL_MATH_ISA_TAG, uint32_t>(uint32_t*, int64_t, uint32_t);
template void Fill<RILL_MATH_ISA_TAG, uint64_t>(uint64_t*, int64_t, uint64_t);
template void Copy<RILL_MATH_ISA_TAG>(const uint8_t*, uint8_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint8_t>(const uint8_t*, uint8_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint16_t>(const uint16_t*, uint16_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint32_t>(const uint32_t*, uint32_t*, int64_t);
template void Reverse<RILL_MATH_ISA_TAG, uint64_t>(const uint64_t*, uint64_t*, int64_t);

}  // namespace rill::math::memory
