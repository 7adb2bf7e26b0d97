#include "gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <Eigen/Core>
#include <string>

#include "intra_op.h"
#include "rill/sdk.hpp"

namespace rill::math {
namespace {

// C = beta * C, for an empty product (k == 0), which the libraries may not take.
template <class T>
void ScaleOnly(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? T(0) : beta * c[i * ldc + j];
}

}  // namespace

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return ScaleOnly(m, n, beta, c, ldc);
  const dnnl_status_t s =
      RunIntraOp(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                 sizeof(float) * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n), [&] {
        return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      });
  if (s != dnnl_success) {
    throw Error("oneDNN sgemm of [" + std::to_string(m) + ", " + std::to_string(k) + "] by [" + std::to_string(k) +
                    ", " + std::to_string(n) + "] failed (status " + std::to_string(s) + ")",
                RILL_INTERNAL);
  }
}

template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return ScaleOnly(m, n, beta, c, ldc);
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

}  // namespace rill::math
