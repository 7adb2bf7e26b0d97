// plugins/math/gemm_loops.h — Eigen's double-precision matrix product, compiled once per
// instruction set (isa.h) by gemm_loops.cc: oneDNN has no fp64 GEMM, and Eigen's kernels
// are several times faster on AVX-512 than on the plugin's SSE2 baseline. Single-threaded;
// Gemm<double> (gemm.cc) splits a product into blocks of C across the passes' team.
#ifndef RILL_MATH_GEMM_LOOPS_H_
#define RILL_MATH_GEMM_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {
namespace gemm {

// C = alpha * op(A) * op(B) + beta * C, as gemm.h's Gemm, for k > 0: row-major, op(A)
// [m, k], op(B) [k, n], C [m, n] with leading dimensions lda, ldb, ldc. With beta == 0, C
// is written without being read.
template <class Set>
void DoubleGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// MathIsa()'s DoubleGemm.
inline auto DoubleGemmForIsa() {
  static const auto gemm = ForMathIsa([](auto set) { return &DoubleGemm<decltype(set)>; });
  return gemm;
}

}  // namespace gemm
}  // namespace rill::math

#endif  // RILL_MATH_GEMM_LOOPS_H_
