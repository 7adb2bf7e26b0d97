// ctc_align's count (ctc_align_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "ctc_align_loops.h"

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

template int64_t CountKept<RILL_MATH_ISA_TAG, int32_t>(const int32_t*, int64_t, int32_t, bool);
template int64_t CountKept<RILL_MATH_ISA_TAG, int64_t>(const int64_t*, int64_t, int64_t, bool);

}  // namespace rill::math
