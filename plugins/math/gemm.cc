#include "gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <string>

#include "gemm_loops.h"
#include "intra_op.h"
#include "parallel_for.h"
#include "rill/sdk.hpp"

namespace rill::math {
namespace {

// C = beta * C, for an empty product (k == 0), which the libraries may not take.
template <class T> void ScaleOnly(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? T(0) : beta * c[i * ldc + j];
}

}  // namespace

template <>
void Gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return ScaleOnly(m, n, beta, c, ldc);
  const dnnl_status_t s = RunIntraOp(
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
      sizeof(float) * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n), [&] {
        return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      });
  if (s != dnnl_success) {
    throw Error("oneDNN sgemm of [" + std::to_string(m) + ", " + std::to_string(k) + "] by [" + std::to_string(k) +
                    ", " + std::to_string(n) + "] failed (status " + std::to_string(s) + ")",
                RILL_INTERNAL);
  }
}

// fp64: Eigen's product compiled for the machine's widest set (gemm_loops.h), C split into
// blocks of at least kDoubleBlock rows (or, when C is wider than tall, columns), each its own
// product over the whole of k, on the passes' team. The blocks depend on the shape alone,
// so an element of C is summed in the same order whatever the thread budget.
template <>
void Gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return ScaleOnly(m, n, beta, c, ldc);
  constexpr int64_t kDoubleBlock = 128;
  const auto gemm = gemm::DoubleGemmForIsa();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const bool by_rows = m >= n;
  const int64_t split = by_rows ? m : n;
  const int64_t blocks = flops < kParallelFlops ? 1 : std::clamp<int64_t>(split / kDoubleBlock, 1, 64);
  ParallelForBlocks(split, blocks, [&](int64_t, int64_t begin, int64_t end) {
    if (by_rows) {
      gemm(trans_a, trans_b, end - begin, n, k, alpha, trans_a ? a + begin : a + begin * lda, lda, b, ldb, beta,
           c + begin * ldc, ldc);
    } else {
      gemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, trans_b ? b + begin * ldb : b + begin, ldb, beta,
           c + begin, ldc);
    }
  });
}

}  // namespace rill::math
