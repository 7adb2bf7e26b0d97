// The softmax loops (softmax_loops.h) for one instruction set: CMakeLists.txt compiles this
// file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "softmax_loops.h"

#include <algorithm>
#include <cmath>

#include "kernels.h"
#include "reduction_loops.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "softmax_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::softmax {
namespace {

// Block i of `v`: n rows of post elements, each column one vector.
template <class T> using Block = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T> using BlockOut = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T> using Row = Eigen::Array<T, 1, Eigen::Dynamic>;

namespace pk = Eigen::internal;

// out[0, n) = exp(x - shift), returning its sum: in whole packets (Eigen's exp of a packet),
// two at a time on independent sums, the elements past the last whole packet through one
// packet on the stack. Eigen's array loops would take a misaligned run's head and tail (a
// sequence or an odd width starts anywhere) an element at a time, at several times a
// packet's cost. The sum's order is fixed for a given set and n.
template <class T> T ExpShiftedSum(const T* x, T shift, T* out, int64_t n) {
  using P = typename pk::packet_traits<T>::type;
  constexpr int64_t kLanes = pk::packet_traits<T>::size;
  const P s = pk::pset1<P>(shift);
  P sum0 = pk::pset1<P>(T(0)), sum1 = sum0;
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const P e0 = pk::pexp(pk::psub(pk::ploadu<P>(x + i), s));
    const P e1 = pk::pexp(pk::psub(pk::ploadu<P>(x + i + kLanes), s));
    pk::pstoreu(out + i, e0);
    pk::pstoreu(out + i + kLanes, e1);
    sum0 = pk::padd(sum0, e0);
    sum1 = pk::padd(sum1, e1);
  }
  T total = pk::predux(pk::padd(sum0, sum1));
  for (; i < n; i += kLanes) {
    const int64_t len = std::min(kLanes, n - i);
    T part[kLanes] = {};
    std::copy(x + i, x + i + len, part);
    pk::pstoreu(part, pk::pexp(pk::psub(pk::ploadu<P>(part), s)));
    for (int64_t k = 0; k < len; ++k) total += part[k];
    std::copy(part, part + len, out + i);
  }
  return total;
}

}  // namespace

template <class Set, class T>
void Forward(const T* x, T* out, T* shift, const Vectors& v, int64_t first, int64_t last, bool log) {
  if (v.n == 0) return;
  const int64_t size = v.n * v.post;
  if (v.post == 1) {  // contiguous vectors
    for (int64_t i = first; i < last; ++i) {
      const ConstVecMap<T> xi(x + i * size, v.n);
      VecMap<T> oi(out + i * size, v.n);
      const T max = reduction::Row<Set, Reduction::kMax, T>(x + i * size, v.n);
      const T total = ExpShiftedSum(x + i * size, max, out + i * size, v.n);
      if (!log && shift == nullptr) {
        oi *= T(1) / total;
        continue;
      }
      const T s = max + std::log(total);
      if (log) oi = xi - s;
      else oi *= T(1) / total;
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
