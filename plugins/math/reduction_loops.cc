// The reduction loops (reduction_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "reduction_loops.h"

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "reduction_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::reduction {

template <class Set, Reduction R, class T>
T Row(const T* x, int64_t n) {
  if (n == 0) return Identity<R, T>();
  const ConstVecMap<T> v(x, n);
  if constexpr (R == Reduction::kSum || R == Reduction::kMean) return v.sum();
  if constexpr (R == Reduction::kProd) return v.prod();
  if constexpr (R == Reduction::kMax) return v.template maxCoeff<Eigen::PropagateNaN>();
  if constexpr (R == Reduction::kMin) return v.template minCoeff<Eigen::PropagateNaN>();
}

template <class Set, Reduction R, class T>
void Rows(T* acc, const T* x, int64_t n) {
  VecMap<T> a(acc, n);
  const ConstVecMap<T> v(x, n);
  if constexpr (R == Reduction::kSum || R == Reduction::kMean) a += v;
  if constexpr (R == Reduction::kProd) a *= v;
  // Eigen 3.4's element-wise max and min take no NaN rule but their functors do (the same
  // ones maxCoeff<PropagateNaN> vectorizes with).
  if constexpr (R == Reduction::kMax) a = a.binaryExpr(v, Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>());
  if constexpr (R == Reduction::kMin) a = a.binaryExpr(v, Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>());
}

#define RILL_MATH_REDUCTION_LOOPS(R, T)                                       \
  template T Row<RILL_MATH_ISA_TAG, Reduction::R, T>(const T*, int64_t);      \
  template void Rows<RILL_MATH_ISA_TAG, Reduction::R, T>(T*, const T*, int64_t);
#define RILL_MATH_REDUCTION_LOOPS_OF(T) \
  RILL_MATH_REDUCTION_LOOPS(kSum, T)    \
  RILL_MATH_REDUCTION_LOOPS(kMean, T)   \
  RILL_MATH_REDUCTION_LOOPS(kMax, T)    \
  RILL_MATH_REDUCTION_LOOPS(kMin, T)    \
  RILL_MATH_REDUCTION_LOOPS(kProd, T)
RILL_MATH_REDUCTION_LOOPS_OF(float)
RILL_MATH_REDUCTION_LOOPS_OF(double)
RILL_MATH_REDUCTION_LOOPS_OF(int32_t)
RILL_MATH_REDUCTION_LOOPS_OF(int64_t)

}  // namespace rill::math::reduction
