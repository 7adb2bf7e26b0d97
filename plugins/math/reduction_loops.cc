// The reduction loops (reduction_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "reduction_loops.h"

#include <cstring>
#include <type_traits>

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "reduction_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math::reduction {
namespace {

namespace pk = Eigen::internal;

// a (op) b, for one element and for a packet of them. Max and min of packets are the
// instructions' (which return one operand when the other is NaN): Row notes NaNs apart.
template <Reduction R, class T> T Apply(T a, T b) {
  if constexpr (R == Reduction::kMax) return a < b ? b : a;
  if constexpr (R == Reduction::kMin) return b < a ? b : a;
  if constexpr (R == Reduction::kProd) return a * b;
  return a + b;
}
template <Reduction R, class P> P ApplyPacket(const P& a, const P& b) {
  if constexpr (R == Reduction::kMax) return pk::pmax(a, b);
  if constexpr (R == Reduction::kMin) return pk::pmin(a, b);
  if constexpr (R == Reduction::kProd) return pk::pmul(a, b);
  return pk::padd(a, b);
}

constexpr bool Extreme(Reduction r) { return r == Reduction::kMax || r == Reduction::kMin; }

// The first NaN of x[0, n), for a row Row found one in.
template <class T> T FirstNan(const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != x[i]) return x[i];
  }
  return std::numeric_limits<T>::quiet_NaN();
}

// Row for floats: four packets of accumulators, each combining every fourth packet of x
// element by element (four independent chains, so the loop runs at the rate the core loads,
// not at one operation's latency), then the four combined, their lanes, and the elements
// past the last whole packet: a fixed order for a given set and n. Max and min
// also keep, per lane, whether some element compared unordered with itself; a row holding
// a NaN returns its first one (nan_order.h's rule).
template <Reduction R, class T> T FloatRow(const T* x, int64_t n) {
  using P = typename pk::packet_traits<T>::type;
  constexpr int64_t kLanes = pk::packet_traits<T>::size;
  const P identity = pk::pset1<P>(Identity<R, T>());
  P acc0 = identity, acc1 = identity, acc2 = identity, acc3 = identity;
  P nan = pk::pzero(identity);
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const P v0 = pk::ploadu<P>(x + i), v1 = pk::ploadu<P>(x + i + kLanes);
    const P v2 = pk::ploadu<P>(x + i + 2 * kLanes), v3 = pk::ploadu<P>(x + i + 3 * kLanes);
    acc0 = ApplyPacket<R>(acc0, v0);
    acc1 = ApplyPacket<R>(acc1, v1);
    acc2 = ApplyPacket<R>(acc2, v2);
    acc3 = ApplyPacket<R>(acc3, v3);
    if constexpr (Extreme(R)) {
      nan = pk::por(nan, pk::por(pk::por(pk::pcmp_lt_or_nan(v0, v0), pk::pcmp_lt_or_nan(v1, v1)),
                                 pk::por(pk::pcmp_lt_or_nan(v2, v2), pk::pcmp_lt_or_nan(v3, v3))));
    }
  }
  for (; i + kLanes <= n; i += kLanes) {
    const P v = pk::ploadu<P>(x + i);
    acc0 = ApplyPacket<R>(acc0, v);
    if constexpr (Extreme(R)) nan = pk::por(nan, pk::pcmp_lt_or_nan(v, v));
  }
  acc0 = ApplyPacket<R>(ApplyPacket<R>(acc0, acc1), ApplyPacket<R>(acc2, acc3));
  // The lanes combined in registers, halves folded onto halves (Eigen's horizontal
  // reductions): a chain of log2(kLanes) steps, which is most of a short row's time.
  T result;
  if constexpr (R == Reduction::kMax) result = pk::predux_max(acc0);
  else if constexpr (R == Reduction::kMin) result = pk::predux_min(acc0);
  else if constexpr (R == Reduction::kProd) result = pk::predux_mul(acc0);
  else result = pk::predux(acc0);
  bool unordered = false;
  for (; i < n; ++i) {
    result = Apply<R>(result, x[i]);
    if constexpr (Extreme(R)) unordered |= x[i] != x[i];
  }
  if constexpr (Extreme(R)) {
    // A lane's bits are all set where it met a NaN: the lanes' bits or-ed together.
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    T lanes[kLanes];
    Bits bits[kLanes];
    pk::pstoreu(lanes, nan);
    std::memcpy(bits, lanes, sizeof bits);
    Bits any = 0;
    for (int64_t l = 0; l < kLanes; ++l) any |= bits[l];
    if (unordered || any != 0) return FirstNan(x, n);
  }
  return result;
}

}  // namespace

template <class Set, Reduction R, class T> T Row(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    return FloatRow<R>(x, n);
  } else {
    // Integers combine exactly in any order (a sum or product modulo 2^width). Lane l takes
    // the elements l mod kLanes: 256 bytes of independent accumulators, four of the widest
    // vectors, which the compiler keeps in registers, so that four loads are in flight
    // where one accumulator would wait on each.
    constexpr int64_t kLanes = 256 / sizeof(T);
    T lane[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) lane[l] = Identity<R, T>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 256
      for (int64_t l = 0; l < kLanes; ++l) lane[l] = Apply<R>(lane[l], x[i + l]);
    }
    T acc = Identity<R, T>();
    for (int64_t l = 0; l < kLanes; ++l) acc = Apply<R>(acc, lane[l]);
    for (; i < n; ++i) acc = Apply<R>(acc, x[i]);
    return acc;
  }
}

template <class Set, Reduction R, class T> void Rows(T* acc, const T* x, int64_t n) {
  VecMap<T> a(acc, n);
  const ConstVecMap<T> v(x, n);
  if constexpr (R == Reduction::kSum || R == Reduction::kMean) a += v;
  if constexpr (R == Reduction::kProd) a *= v;
  // Eigen 3.4's element-wise max and min take no NaN rule but their functors do (the same
  // ones maxCoeff<PropagateNaN> vectorizes with).
  if constexpr (R == Reduction::kMax) a = a.binaryExpr(v, Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>());
  if constexpr (R == Reduction::kMin) a = a.binaryExpr(v, Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>());
}

template <class Set, class T> double DotInDouble(const T* x, const T* y, int64_t n) {
  // Sixteen double accumulators, lane j taking the products j mod 16: independent chains
  // the compiler keeps in vector registers; combined in lane order.
  constexpr int64_t kLanes = 16;
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(x[i + l]) * static_cast<double>(y[i + l]);
  }
  double sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += acc[l];
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(y[i]);
  return sum;
}

template <class Set, class T>
void KeepMax(T* __restrict m, int32_t* __restrict idx, const T* __restrict v, int64_t n, int32_t row) {
  for (int64_t k = 0; k < n; ++k) {
    const T a = v[k], b = m[k];
    const int32_t wins = a > b;  // 0 or 1: the index moves by arithmetic, which vectorizes as a blend
    m[k] = a > b ? a : b;
    idx[k] += (row - idx[k]) * wins;  // both in [0, rows): no overflow
  }
}

#define RILL_MATH_REDUCTION_LOOPS(R, T)                                  \
  template T Row<RILL_MATH_ISA_TAG, Reduction::R, T>(const T*, int64_t); \
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
// reduce_all and reduce_any: the minimum and maximum of bools' bytes.
RILL_MATH_REDUCTION_LOOPS(kMax, uint8_t)
RILL_MATH_REDUCTION_LOOPS(kMin, uint8_t)
template double DotInDouble<RILL_MATH_ISA_TAG, float>(const float*, const float*, int64_t);
template double DotInDouble<RILL_MATH_ISA_TAG, double>(const double*, const double*, int64_t);
template void KeepMax<RILL_MATH_ISA_TAG, float>(float*, int32_t*, const float*, int64_t, int32_t);
template void KeepMax<RILL_MATH_ISA_TAG, double>(double*, int32_t*, const double*, int64_t, int32_t);

}  // namespace rill::math::reduction
