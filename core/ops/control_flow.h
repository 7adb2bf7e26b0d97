// core/ops/control_flow.h — the host's built-in ops: `while` and `conditional_block`, and
// Fluid's save/load ops.
// Registered through rill/sdk.hpp like any plugin's ops, under the plugin name "core".
#ifndef RILL_CORE_OPS_CONTROL_FLOW_H_
#define RILL_CORE_OPS_CONTROL_FLOW_H_

#include "core/runtime/tensor.h"
#include "rill/sdk.hpp"

namespace rill::core {
void RegisterWhile(rill::Registrar& r);
void RegisterConditionalBlock(rill::Registrar& r);
void RegisterSaveLoad(rill::Registrar& r);  // save_load_ops.cc

// The value of a one-element bool tensor (input `slot`), wherever it lives: a condition
// computed by a device kernel is read through a copy to the host. Throws if `cond` is not
// a one-element bool tensor. The host's ops read the tensor behind the handle directly,
// and a condition on the host inline (a select's case reads one every round; a loop's
// condition the host reads itself, ctx_run_loop, unless it lives on a device).
bool ReadConditionSlow(const Tensor& cond, const char* slot);  // errors and device copies
inline bool ReadCondition(const Tensor& cond, const char* slot) {
  if (cond.dtype() == RILL_BOOL && cond.numel() == 1 && cond.place().device_type == RILL_CPU) {
    return *static_cast<const bool*>(cond.data());
  }
  return ReadConditionSlow(cond, slot);
}
bool ReadCondition(rill::Tensor cond, const char* slot);
}  // namespace rill::core

#endif  // RILL_CORE_OPS_CONTROL_FLOW_H_
