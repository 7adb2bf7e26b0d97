// plugins/math/scalar.h — one-element operands read and written as their bits (ABI v9).
//
// Loop counters, running sums and the values a channel carries are scalars (a
// one-element CPU tensor of shape [1], no LoD). A small kernel on them spends most of
// its time describing and allocating tensors; reading them with var_scalar and writing
// with var_set_scalar takes a few short host calls instead.
//
// Contract: ReadScalar is true only for a scalar of T's dtype. WriteScalar writes only
// into a variable that is empty or already holds a scalar, where it leaves what the
// tensor path would leave (a one-element CPU tensor of T, shape [1], no LoD); anything
// else returns false, having changed nothing, and the kernel takes its tensor path (and
// gives that path's errors).
#ifndef RILL_PLUGINS_MATH_SCALAR_H_
#define RILL_PLUGINS_MATH_SCALAR_H_

#include <cstdint>
#include <cstring>

#include "rill/sdk.hpp"

namespace rill::math {

template <class T>
bool ReadScalar(const Variable& v, T* value) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "a scalar is at most 8 bytes");
  int32_t dtype = 0;
  uint64_t bits = 0;
  if (!v || !v.GetScalar(&dtype, &bits) || dtype != DataTypeOf<T>::value) return false;
  std::memcpy(value, &bits, sizeof(T));
  return true;
}

template <class T>
bool WriteScalar(Variable v, T value) {
  int32_t dtype = 0;
  uint64_t bits = 0;
  if (!v || (!v.GetScalar(&dtype, &bits) && v.initialized())) return false;
  v.SetScalar(value);
  return true;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SCALAR_H_
