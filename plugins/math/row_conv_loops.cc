// row_conv's loop (row_conv_loops.h) for one instruction set: CMakeLists.txt compiles this
// file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "row_conv_loops.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "row_conv_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

template <class Set, class T>
void AddLookahead(T* __restrict out, const T* __restrict x, const T* __restrict w, int64_t reach, int64_t d) {
  for (int64_t j = 0; j < d; ++j) out[j] = x[j] * w[j];
  for (int64_t k = 1; k < reach; ++k) {
    for (int64_t j = 0; j < d; ++j) out[j] += x[k * d + j] * w[k * d + j];
  }
}

template void AddLookahead<RILL_MATH_ISA_TAG, float>(float*, const float*, const float*, int64_t, int64_t);
template void AddLookahead<RILL_MATH_ISA_TAG, double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace rill::math
