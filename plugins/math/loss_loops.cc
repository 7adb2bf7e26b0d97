// The elementwise losses' loops (loss_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "loss_loops.h"

#include <algorithm>
#include <cmath>

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "loss_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::loss {
namespace {

// Blocks of at most kBlock elements: the transcendental part computed vectorized into a
// stack array, then a blend for the ignored labels, which the compiler vectorizes too.
constexpr int64_t kBlock = 1024;
template <class T> using Block = Eigen::Array<T, Eigen::Dynamic, 1, Eigen::ColMajor, kBlock, 1>;

}  // namespace

template <class Set, class T>
void SigmoidCrossEntropyForward(const T* x, const T* label, T* out, int64_t begin, int64_t end, T ignore, T div) {
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t len = std::min(kBlock, end - b);
    const ConstVecMap<T> xs(x + b, len), ls(label + b, len);
    const Block<T> loss = xs.max(T(0)) - xs * ls + (-xs.abs()).exp().log1p();
    VecMap<T>(out + b, len) = loss.binaryExpr(ls, [ignore, div](T v, T l) { return l == ignore ? T(0) : v / div; });
  }
}

template <class Set, class T>
void SigmoidCrossEntropyBackward(const T* x, const T* label, const T* g, T* dx, int64_t begin, int64_t end, T ignore,
                                 T div) {
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t len = std::min(kBlock, end - b);
    const ConstVecMap<T> xs(x + b, len), ls(label + b, len), gs(g + b, len);
    const Block<T> d = ((T(1) + (-xs).exp()).inverse() - ls) * gs;
    VecMap<T>(dx + b, len) = d.binaryExpr(ls, [ignore, div](T v, T l) { return l == ignore ? T(0) : v / div; });
  }
}

namespace {

// One smooth_l1_loss row. The weights' presence is a template argument, so that each
// loop is a straight vector loop: both sides of each piecewise formula are computed and
// blended (the options CMakeLists.txt compiles this file with), and f's terms go to a
// block on the stack that Eigen sums in one fixed order.
template <bool kWeighted, class T>
T SmoothL1Row(const T* x, const T* y, const T* inside, const T* outside, T* diff, int64_t cols, T s2) {
  const T edge = T(1) / s2, half_s2 = T(0.5) * s2, half_edge = T(0.5) / s2;
  T sum = T(0);
  alignas(64) T f[kBlock];
  for (int64_t b = 0; b < cols; b += kBlock) {
    const int64_t len = std::min(kBlock, cols - b);
    for (int64_t j = 0; j < len; ++j) {
      T d = x[b + j] - y[b + j];
      if constexpr (kWeighted) d *= inside[b + j];
      diff[b + j] = d;
      const T a = std::abs(d);
      T term = a < edge ? half_s2 * d * d : a - half_edge;
      if constexpr (kWeighted) term *= outside[b + j];
      f[j] = term;
    }
    sum += ConstVecMap<T>(f, len).sum();
  }
  return sum;
}

template <bool kWeighted, class T>
void SmoothL1GradRow(const T* diff, T scale, const T* inside, const T* outside, T* out, int64_t cols, T s2) {
  const T edge = T(1) / s2;
  for (int64_t j = 0; j < cols; ++j) {
    const T v = diff[j];
    const T sign = v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
    const T df = std::abs(v) < edge ? s2 * v : sign;
    if constexpr (kWeighted) {
      out[j] = scale * (inside[j] * outside[j]) * df;
    } else {
      out[j] = scale * df;
    }
  }
}

}  // namespace

template <class Set, class T>
void SmoothL1Forward(const T* x, const T* y, const T* inside, const T* outside, T* diff, T* loss, int64_t cols,
                     int64_t first, int64_t last, T s2) {
  for (int64_t i = first; i < last; ++i) {
    const int64_t at = i * cols;
    loss[i] = inside != nullptr ? SmoothL1Row<true>(x + at, y + at, inside + at, outside + at, diff + at, cols, s2)
                                : SmoothL1Row<false>(x + at, y + at, inside, outside, diff + at, cols, s2);
  }
}

template <class Set, class T>
void SmoothL1Backward(const T* diff, const T* g, const T* inside, const T* outside, T* out, int64_t cols, int64_t first,
                      int64_t last, T s2, T sign) {
  for (int64_t i = first; i < last; ++i) {
    const int64_t at = i * cols;
    if (inside != nullptr) {
      SmoothL1GradRow<true>(diff + at, sign * g[i], inside + at, outside + at, out + at, cols, s2);
    } else {
      SmoothL1GradRow<false>(diff + at, sign * g[i], inside, outside, out + at, cols, s2);
    }
  }
}

#define RILL_MATH_LOSS_LOOPS(T)                                                                                       \
  template void SigmoidCrossEntropyForward<RILL_MATH_ISA_TAG, T>(const T*, const T*, T*, int64_t, int64_t, T, T);     \
  template void SigmoidCrossEntropyBackward<RILL_MATH_ISA_TAG, T>(const T*, const T*, const T*, T*, int64_t, int64_t, \
                                                                  T, T);                                              \
  template void SmoothL1Forward<RILL_MATH_ISA_TAG, T>(const T*, const T*, const T*, const T*, T*, T*, int64_t,        \
                                                      int64_t, int64_t, T);                                           \
  template void SmoothL1Backward<RILL_MATH_ISA_TAG, T>(const T*, const T*, const T*, const T*, T*, int64_t, int64_t,  \
                                                       int64_t, T, T);
RILL_MATH_LOSS_LOOPS(float)
RILL_MATH_LOSS_LOOPS(double)

}  // namespace rill::math::loss
