// core/runtime/native_scalar.h — what the executor's native scalar steps share
// (counter_step.h, scalar_binary_step.h, fill_scalar_step.h): the element types they
// compute in, and which tensor a result goes to and where in it.
//
// Contract: a native step computes only in int32, int64, fp32 and fp64, and only in those
// the op has a CPU kernel for, so it never runs where the kernel itself could not.
#ifndef RILL_CORE_RUNTIME_NATIVE_SCALAR_H_
#define RILL_CORE_RUNTIME_NATIVE_SCALAR_H_

#include <cstdint>
#include <string>

#include "core/registry/registry.h"
#include "core/runtime/tensor.h"
#include "core/runtime/variable.h"

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
[[gnu::always_inline]] inline bool WithNativeScalarType(int32_t dtype, F&& f) {
  switch (dtype) {
    case RILL_INT32: f(int32_t{}); return true;
    case RILL_INT64: f(int64_t{}); return true;
    case RILL_FP32: f(float{}); return true;
    case RILL_FP64: f(double{}); return true;
    default: return false;
  }
}

// The tensor `v` holds, or nullptr (no variable, or another kind of value).
inline Tensor* TensorIn(Variable* v) { return v != nullptr ? v->GetTensor() : nullptr; }

// The tensor a scalar result is written into: an empty variable's new one, one not
// allocated yet (and without LoD), or a scalar; nullptr for anything the kernels' scalar
// paths would not write either (the kernel then runs and gives its own result or error).
inline Tensor* ScalarOutput(Variable* v) {
  if (v == nullptr) return nullptr;
  if (Tensor* t = v->GetTensor()) return (!t->initialized() && !t->has_lod()) || t->is_scalar() ? t : nullptr;
  return v->initialized() ? nullptr : v->GetMutableTensor();
}

// The memory of `t` when a one-element `dtype` result of rank `ndim` is written there in
// place (ScalarSlot's usual case, inline for the native steps' fast paths), else nullptr.
inline void* InPlaceScalar(const Tensor& t, int32_t dtype, size_t ndim) {
  return t.host_scalar_key() == Tensor::HostScalarKey(dtype, static_cast<int32_t>(ndim)) ? t.OwnData() : nullptr;
}

// The same for a scalar by Tensor::is_scalar ([1], no LoD), or nullptr for no tensor: where
// var_set_scalar and the scalar add write a value over the one the last message or step
// left.
inline void* InPlaceScalar(const Tensor* t, int32_t dtype) {
  return t != nullptr && !t->has_lod() ? InPlaceScalar(*t, dtype, 1) : nullptr;
}

// Where a one-element `dtype` tensor of rank `ndim` (at most kMaxScalarDims) goes in `t`:
// in place when `t` already is one and owns its memory (a loop's counter, condition or
// running sum, rewritten every step), else through Allocate, which reshapes or
// reallocates as a kernel's output would.
constexpr size_t kMaxScalarDims = 8;
inline void* ScalarSlot(Tensor& t, int32_t dtype, size_t ndim) {
  static constexpr int64_t kOnes[kMaxScalarDims] = {1, 1, 1, 1, 1, 1, 1, 1};
  if (void* data = InPlaceScalar(t, dtype, ndim)) return data;
  return ndim == 1 ? t.AllocateScalar(dtype) : t.Allocate(dtype, kOnes, ndim);
}

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_NATIVE_SCALAR_H_
