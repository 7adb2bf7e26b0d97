// The normalization gradients' loops (norm_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "norm_loops.h"

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "norm_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::norm {

template <class Set, class T> void GradSums(const T* x, const T* g, int64_t n, T mu, T k, T* dot, T* total) {
  const ConstVecMap<T> xs(x, n), gs(g, n);
  *dot = (gs * ((xs - mu) * k)).sum();
  *total = gs.sum();
}

template <class Set, class T> void GradDx(const T* x, const T* g, int64_t n, T mu, T alpha, T beta, T gamma, T* dx) {
  VecMap<T>(dx, n) = alpha * ConstVecMap<T>(g, n) + beta * (ConstVecMap<T>(x, n) - mu) + gamma;
}

#define RILL_MATH_NORM_LOOPS(T)                                                            \
  template void GradSums<RILL_MATH_ISA_TAG, T>(const T*, const T*, int64_t, T, T, T*, T*); \
  template void GradDx<RILL_MATH_ISA_TAG, T>(const T*, const T*, int64_t, T, T, T, T, T*);
RILL_MATH_NORM_LOOPS(float)
RILL_MATH_NORM_LOOPS(double)

}  // namespace rill::math::norm
