// The fill loops (fill_loops.h) for one instruction set: CMakeLists.txt compiles this file
// once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "fill_loops.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "fill_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::fill {

template <class Set, class Word>
void Fill(Word* p, int64_t n, Word value) {
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

template void Fill<RILL_MATH_ISA_TAG, uint8_t>(uint8_t*, int64_t, uint8_t);
template void Fill<RILL_MATH_ISA_TAG, uint16_t>(uint16_t*, int64_t, uint16_t);
template void Fill<RILL_MATH_ISA_TAG, uint32_t>(uint32_t*, int64_t, uint32_t);
template void Fill<RILL_MATH_ISA_TAG, uint64_t>(uint64_t*, int64_t, uint64_t);

}  // namespace rill::math::fill
