// The softmax loops (softmax_loops.h) for one instruction set: CMakeLists.txt compiles this
// file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "softmax_loops.h"

#include <cmath>

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "softmax_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::softmax {
namespace {

// Block i of `v`: n rows of post elements, each column one vector.
template <class T> using Block = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T> using BlockOut = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T> using Row = Eigen::Array<T, 1, Eigen::Dynamic>;

}  // namespace

template <class Set, class T>
void Forward(const T* x, T* out, T* shift, const Vectors& v, int64_t first, int64_t last, bool log) {
  if (v.n == 0) return;
  const int64_t size = v.n * v.post;
  if (v.post == 1) {  // contiguous vectors
    for (int64_t i = first; i < last; ++i) {
      const ConstVecMap<T> xi(x + i * size, v.n);
      VecMap<T> oi(out + i * size, v.n);
      const T max = xi.maxCoeff();
      oi = (xi - max).exp();
      const T total = oi.sum(), s = max + std::log(total);
      if (log) oi = xi - s;
      else oi /= total;
      if (shift != nullptr) shift[i] = s;
    }
    return;
  }
  Row<T> max(v.post), total(v.post), s(v.post);
  for (int64_t i = first; i < last; ++i) {
    const Block<T> xi(x + i * size, v.n, v.post);
    BlockOut<T> oi(out + i * size, v.n, v.post);
    max = xi.colwise().maxCoeff();
    oi = (xi.rowwise() - max).exp();
    total = oi.colwise().sum();
    s = max + total.log();
    if (log) oi = xi.rowwise() - s;
    else oi.rowwise() /= total;
    if (shift != nullptr) VecMap<T>(shift + i * v.post, v.post) = s.transpose();
  }
}

template <class Set, class T>
void Backward(const T* out, const T* g, T* dx, const Vectors& v, int64_t first, int64_t last, bool log) {
  const int64_t size = v.n * v.post;
  if (v.post == 1) {
    for (int64_t i = first; i < last; ++i) {
      const ConstVecMap<T> oi(out + i * size, v.n), gi(g + i * size, v.n);
      VecMap<T> di(dx + i * size, v.n);
      if (log) di = gi - oi.exp() * gi.sum();
      else di = oi * (gi - (gi * oi).sum());
    }
    return;
  }
  Row<T> sum(v.post);
  for (int64_t i = first; i < last; ++i) {
    const Block<T> oi(out + i * size, v.n, v.post), gi(g + i * size, v.n, v.post);
    BlockOut<T> di(dx + i * size, v.n, v.post);
    if (log) {
      sum = gi.colwise().sum();
      di = gi - (oi.exp().rowwise() * sum);
    } else {
      sum = (gi * oi).colwise().sum();
      di = oi * (gi.rowwise() - sum);
    }
  }
}

template void Forward<RILL_MATH_ISA_TAG, float>(const float*, float*, float*, const Vectors&, int64_t, int64_t, bool);
template void Forward<RILL_MATH_ISA_TAG, double>(const double*, double*, double*, const Vectors&, int64_t, int64_t,
                                                 bool);
template void Backward<RILL_MATH_ISA_TAG, float>(const float*, const float*, float*, const Vectors&, int64_t, int64_t,
                                                 bool);
template void Backward<RILL_MATH_ISA_TAG, double>(const double*, const double*, double*, const Vectors&, int64_t,
                                                  int64_t, bool);

}  // namespace rill::math::softmax
