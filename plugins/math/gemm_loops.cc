// The double-precision product (gemm_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "gemm_loops.h"

#include <Eigen/Core>

#if !defined(RILL_MATH_ISA_TAG)
#error "gemm_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::gemm {

template <class Set>
void DoubleGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<const Mat, 0, Stride> am(a, trans_a ? k : m, trans_a ? m : k, Stride(lda));
  Eigen::Map<const Mat, 0, Stride> bm(b, trans_b ? n : k, trans_b ? k : n, Stride(ldb));
  Eigen::Map<Mat, 0, Stride> cm(c, m, n, Stride(ldc));
  if (beta == 0) cm.setZero();
  else if (beta != 1) cm *= beta;
  if (trans_a && trans_b) cm.noalias() += alpha * (am.transpose() * bm.transpose());
  else if (trans_a) cm.noalias() += alpha * (am.transpose() * bm);
  else if (trans_b) cm.noalias() += alpha * (am * bm.transpose());
  else cm.noalias() += alpha * (am * bm);
}

template void DoubleGemm<RILL_MATH_ISA_TAG>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                            const double*, int64_t, double, double*, int64_t);

}  // namespace rill::math::gemm
