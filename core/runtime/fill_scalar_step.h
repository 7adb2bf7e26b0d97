// core/runtime/fill_scalar_step.h — fill_constant of a one-element tensor, run natively.
//
// Loops reset a scalar every step (the select op's case_to_execute = -1 before each
// select, as Fluid writes it) and go blocks make their constants (`one = 1`) each time
// they start. The fill kernel's call costs many times the store, so the executor
// recognises such fills when it prepares a block (Match) and writes the value itself
// (Run), as the kernel's scalar path (plugins/math/scalar.h) would.
//
// Contract:
//  - Match takes fill_constant ops with one Out and shape [1], of a dtype the op has a CPU
//    kernel for among int32, int64, fp32 and fp64; the value is converted as the kernel
//    converts it (the attribute read as a float, then cast).
//  - Run writes only into Out empty, holding a tensor not allocated yet (no LoD), or
//    holding a scalar (native_scalar.h's ScalarOutput), where the kernel writes the same.
//    It leaves Out a [1] CPU tensor of the dtype holding the value, in Out's memory when
//    Out owns it. Anything else returns false, having changed nothing, and the executor
//    calls the kernel. The executor runs it only when placed on the CPU: elsewhere the
//    kernel makes the tensor on the device.
#ifndef RILL_CORE_RUNTIME_FILL_SCALAR_STEP_H_
#define RILL_CORE_RUNTIME_FILL_SCALAR_STEP_H_

#include <cstdint>
#include <optional>

#include "core/registry/registry.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

struct FillScalarStep {
  uint32_t out = 0;  // frame index
  int32_t dtype = 0;
  uint64_t bits = 0;  // the value, as dtype's bytes

  // The native step for `op` when it is such a fill, else nothing.
  static std::optional<FillScalarStep> Match(const RillOpInfo& op, const Registry& registry);

  // Writes the value into the block's resolved Out; false, having changed nothing, when
  // Out holds something the kernel's scalar path would not write into.
  bool Run(Variable* const* frame) const;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_FILL_SCALAR_STEP_H_
