// core/runtime/native_scalar.h — the element types the executor's native scalar steps
// compute in (counter_step.h, scalar_binary_step.h), in one place for both.
//
// Contract: a native step computes only in int32, int64, fp32 and fp64, and only in those
// the op has a CPU kernel for, so it never runs where the kernel itself could not.
#ifndef RILL_CORE_RUNTIME_NATIVE_SCALAR_H_
#define RILL_CORE_RUNTIME_NATIVE_SCALAR_H_

#include <cstdint>
#include <string>

#include "core/registry/registry.h"

namespace rill::core {

// Bit d set: dtype d is one native steps compute in, and `op_type` has a CPU kernel for it.
inline uint32_t NativeScalarDtypes(const Registry& registry, const std::string& op_type) {
  uint32_t dtypes = 0;
  for (int32_t d : {RILL_INT32, RILL_INT64, RILL_FP32, RILL_FP64}) {
    if (registry.FindKernel(op_type, RILL_CPU, d)) dtypes |= 1u << d;
  }
  return dtypes;
}

// Calls f(T{}) with `dtype`'s C++ type and returns true; false for a dtype native steps do
// not compute in.
template <class F>
bool WithNativeScalarType(int32_t dtype, F&& f) {
  switch (dtype) {
    case RILL_INT32: f(int32_t{}); return true;
    case RILL_INT64: f(int64_t{}); return true;
    case RILL_FP32: f(float{}); return true;
    case RILL_FP64: f(double{}); return true;
    default: return false;
  }
}

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_NATIVE_SCALAR_H_
