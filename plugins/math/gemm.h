// plugins/math/gemm.h — the one matrix product every GEMM-shaped CPU kernel calls (mul,
// matmul, matmul_v2, fc, the convolutions' im2col products, and their gradients).
//
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T,
//
// row-major, op(A) [m, k], op(B) [k, n], C [m, n], with leading dimensions (elements
// between rows as stored). With beta == 0, C is written without being read (it may hold
// anything, NaN included). fp32 runs oneDNN's sgemm (AVX2 / AVX-512 chosen at run time,
// on the cores intra_op.h gives it); fp64, which oneDNN has no GEMM for, runs
// Eigen's, compiled per instruction set, in blocks of C on the passes' team (gemm.cc).
#ifndef RILL_PLUGINS_MATH_GEMM_H_
#define RILL_PLUGINS_MATH_GEMM_H_

#include <cstdint>

namespace rill::math {

template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

// The common case: contiguous matrices (lda, ldb, ldc their stored row lengths).
template <class T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta, T* c) {
  Gemm<T>(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_GEMM_H_
