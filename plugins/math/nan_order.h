// plugins/math/nan_order.h — where NaN stands when a kernel picks values by comparing
// them. `<` is no ordering once a NaN is among the values (every comparison with it is
// false), and a sort or select handed such a comparator has undefined behaviour.
//
// The rule, PyTorch's and NumPy's:
//  - Orders (top_k, sorting): a NaN is larger than every number and equal to another NaN;
//    NanLast below is a strict weak ordering over all values.
//  - Extremes (reduce_max, pooling's max, arg_max, arg_min): a NaN among the values wins;
//    the maximum or minimum is NaN and arg_max / arg_min point to the first NaN.
#ifndef RILL_PLUGINS_MATH_NAN_ORDER_H_
#define RILL_PLUGINS_MATH_NAN_ORDER_H_

#include <cmath>
#include <type_traits>

namespace rill::math {

template <class T> bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// a < b, with NaN above every number: a strict weak ordering.
template <class T> bool NanLast(T a, T b) { return IsNan(b) ? !IsNan(a) : a < b; }

// Whether `v` replaces `best` as the running maximum (kMax) or minimum: a NaN replaces any
// number and nothing replaces a NaN, so the first NaN stays.
template <bool kMax, class T> bool Improves(T v, T best) {
  if (IsNan(best)) return false;
  return IsNan(v) || (kMax ? v > best : v < best);
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_NAN_ORDER_H_
