// The elementwise losses' loops (loss_loops.h) for one instruction set: CMakeLists.txt
// compiles this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "loss_loops.h"

#include <algorithm>

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

#define RILL_MATH_LOSS_LOOPS(T)                                                                                       \
  template void SigmoidCrossEntropyForward<RILL_MATH_ISA_TAG, T>(const T*, const T*, T*, int64_t, int64_t, T, T);     \
  template void SigmoidCrossEntropyBackward<RILL_MATH_ISA_TAG, T>(const T*, const T*, const T*, T*, int64_t, int64_t, \
                                                                  T, T);
RILL_MATH_LOSS_LOOPS(float)
RILL_MATH_LOSS_LOOPS(double)

}  // namespace rill::math::loss
