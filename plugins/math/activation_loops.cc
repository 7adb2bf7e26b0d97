// The activations' loops for one instruction set and one group of functors
// (activation_loops.h): CMakeLists.txt compiles this file once per set and group, naming the
// set's tag in RILL_MATH_ISA_TAG and the group in RILL_MATH_ACTIVATION_GROUP.
#include "activation_loops.h"

#include <algorithm>

#if !defined(RILL_MATH_ISA_TAG) || !defined(RILL_MATH_ACTIVATION_GROUP)
#error "activation_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set and group"
#endif

namespace rill::math::activation {

// Runs of at most kActivationBlock elements, as the functors expect.
template <class Set, class Op, class T> void Forward(const Op& op, const T* x, T* out, int64_t n) {
  for (int64_t i = 0; i < n; i += kActivationBlock) {
    const int64_t k = std::min<int64_t>(kActivationBlock, n - i);
    op.Forward(ConstVecMap<T>(x + i, k), VecMap<T>(out + i, k));
  }
}

template <class Set, class Op, class T> void Backward(const Op& op, const T* v, const T* g, T* dx, int64_t n) {
  for (int64_t i = 0; i < n; i += kActivationBlock) {
    const int64_t k = std::min<int64_t>(kActivationBlock, n - i);
    op.Backward(ConstVecMap<T>(v + i, k), ConstVecMap<T>(g + i, k), VecMap<T>(dx + i, k));
  }
}

#define RILL_INSTANTIATE_FOR(Op, T)                                                  \
  template void Forward<RILL_MATH_ISA_TAG, Op, T>(const Op&, const T*, T*, int64_t); \
  template void Backward<RILL_MATH_ISA_TAG, Op, T>(const Op&, const T*, const T*, T*, int64_t);
#define RILL_INSTANTIATE(Op) RILL_INSTANTIATE_FOR(Op, float) RILL_INSTANTIATE_FOR(Op, double)

RILL_MATH_ACTIVATION_GROUP(RILL_INSTANTIATE, RILL_INSTANTIATE_FOR)
#if defined(RILL_MATH_ACTIVATION_INTEGERS)
RILL_MATH_INTEGER_ACTIVATIONS(RILL_INSTANTIATE_FOR)
#endif

}  // namespace rill::math::activation
