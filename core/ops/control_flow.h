// core/ops/control_flow.h — the host's built-in ops: `while` and `conditional_block`.
// Registered through rill/sdk.hpp like any plugin's ops, under the plugin name "core".
#ifndef RILL_CORE_OPS_CONTROL_FLOW_H_
#define RILL_CORE_OPS_CONTROL_FLOW_H_

#include "rill/sdk.hpp"

namespace rill::core {
void RegisterWhile(rill::Registrar& r);
void RegisterConditionalBlock(rill::Registrar& r);

// The value of a one-element bool tensor (input `slot`), wherever it lives: a condition
// computed by a device kernel is read through a copy to the host. Throws if `cond` is not
// a one-element bool tensor. The host's ops read the tensor behind the handle directly.
class Tensor;
bool ReadCondition(const Tensor& cond, const char* slot);
bool ReadCondition(rill::Tensor cond, const char* slot);
}  // namespace rill::core

#endif  // RILL_CORE_OPS_CONTROL_FLOW_H_
