// core/runtime/scalar_binary_step.h — elementwise_add, _sub and _mul on two scalars, run
// natively.
//
// A running sum (`sum = sum + got` after a channel receive) is one elementwise op on two
// one-element tensors. Its kernel call (dispatch, argument lookups and scalar reads across
// the ABI) costs several times the addition and a good part of a channel message, so the
// executor recognises such ops when it prepares a block (Match) and runs them itself (Run):
// Out = X op Y, what the kernel's scalar path writes.
//
// Contract:
//  - Run handles only what the kernel's scalar path does (plugins/math/scalar.h): X and Y
//    scalars (one-element CPU tensors of shape [1], no LoD) of one dtype the op has a CPU
//    kernel for, Out empty or holding a scalar. It then leaves Out a [1] tensor of that
//    dtype holding the result (in Out's memory when it can), as the kernel would. Anything
//    else returns false, having changed nothing, and the executor calls the kernel.
//  - Match takes only ops with exactly one X, Y and Out, of a type whose kernels the
//    registry holds for at least one of the dtypes handled (int32, int64, fp32, fp64).
#ifndef RILL_CORE_RUNTIME_SCALAR_BINARY_STEP_H_
#define RILL_CORE_RUNTIME_SCALAR_BINARY_STEP_H_

#include <cstdint>
#include <optional>

#include "core/registry/registry.h"
#include "core/runtime/native_scalar.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

struct ScalarBinaryStep {
  enum class Kind : uint8_t { kAdd, kSub, kMul };
  uint32_t x = 0, y = 0, out = 0;  // frame indices
  Kind kind = Kind::kAdd;
  uint32_t dtypes = 0;  // bit d set: the op has a CPU kernel for dtype d

  // The native step for `op` when it is one of the ops above, else nothing.
  static std::optional<ScalarBinaryStep> Match(const RillOpInfo& op, const Registry& registry);

  // Runs the op on the block's resolved variables; false, having changed nothing, when the
  // values are not scalars this step handles. Inline up to the usual case (a running sum):
  // X, Y and Out scalars of one dtype, Out owning its memory, written in place.
  [[gnu::always_inline]] bool Run(Variable* const* frame) const {
    const Tensor* tx = TensorIn(frame[x]);
    const Tensor* ty = TensorIn(frame[y]);
    Tensor* to = TensorIn(frame[out]);
    if (tx == nullptr || ty == nullptr || to == nullptr) return RunGeneral(frame);
    if (!tx->is_scalar() || ty->host_scalar_key() != tx->host_scalar_key() || ty->has_lod()) return RunGeneral(frame);
    const int32_t dtype = tx->dtype();
    void* result = InPlaceScalar(to, dtype);
    if (result == nullptr || dtype >= 32 || (dtypes >> dtype & 1) == 0) return RunGeneral(frame);
    return WithNativeScalarType(dtype, [&](auto type) {
      using T = decltype(type);
      *static_cast<T*>(result) = Apply<T>(*tx->data_as<T>(), *ty->data_as<T>());
    });
  }

 private:
  template <class T>
  T Apply(T a, T b) const {
    return kind == Kind::kAdd ? static_cast<T>(a + b) : kind == Kind::kSub ? static_cast<T>(a - b) : static_cast<T>(a * b);
  }
  // Any other case Run handles (Out empty, or not yet a scalar of that dtype, say).
  bool RunGeneral(Variable* const* frame) const;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SCALAR_BINARY_STEP_H_
