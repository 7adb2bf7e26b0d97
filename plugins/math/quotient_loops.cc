// elementwise_div's loop (quotient_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "quotient_loops.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "quotient_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

template <class Set, class T> void Quotients(const T* x, const T* y, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] / y[i];
}

template void Quotients<RILL_MATH_ISA_TAG, float>(const float*, const float*, float*, int64_t);
template void Quotients<RILL_MATH_ISA_TAG, double>(const double*, const double*, double*, int64_t);

}  // namespace rill::math
