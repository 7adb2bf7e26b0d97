// The elementwise ops' same-shape loops (binary_loops.h) for one instruction set:
// CMakeLists.txt compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "binary_loops.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "binary_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

// x, y and out may alias only as whole buffers (out is x or y), which leaves each element's
// read before its write whatever the compiler reorders across elements: its runtime check
// for overlap takes the vector loop there too.
template <class Set, Binary Op, class T> void SameShape(const T* x, const T* y, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = ApplyBinary<Op>(x[i], y[i]);
}

#define RILL_MATH_BINARY_LOOP(OP, T) \
  template void SameShape<RILL_MATH_ISA_TAG, Binary::OP, T>(const T*, const T*, T*, int64_t);
#define RILL_MATH_BINARY_LOOPS_OF(T) \
  RILL_MATH_BINARY_LOOP(kAdd, T)     \
  RILL_MATH_BINARY_LOOP(kSub, T)     \
  RILL_MATH_BINARY_LOOP(kMul, T)     \
  RILL_MATH_BINARY_LOOP(kMax, T)     \
  RILL_MATH_BINARY_LOOP(kMin, T)
RILL_MATH_BINARY_LOOPS_OF(float)
RILL_MATH_BINARY_LOOPS_OF(double)
RILL_MATH_BINARY_LOOPS_OF(int32_t)
RILL_MATH_BINARY_LOOPS_OF(int64_t)
RILL_MATH_BINARY_LOOP(kDiv, float)
RILL_MATH_BINARY_LOOP(kDiv, double)

}  // namespace rill::math
