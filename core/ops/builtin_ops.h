// core/ops/builtin_ops.h — the host's own ops, a plugin named "core" built into the host.
//
// `while`, `recurrent`, `conditional_block`, Fluid's feed and fetch, and Fluid's save and load ops,
// written against rill/sdk.hpp alone and registered through the ABI table as every
// loaded plugin's ops are (builtin_plugin.cc), so the ABI is exercised even with no plugin
// on disk. They reach variables and tensors only through the SDK's handles; save and load
// call core's LoDTensor format (core/io/lod_tensor_file.h) with plain values, never core
// types, and HostCall turns the host's errors into the SDK's.
#ifndef RILL_CORE_OPS_BUILTIN_OPS_H_
#define RILL_CORE_OPS_BUILTIN_OPS_H_

#include <cstring>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::core {

void RegisterStepScopes(rill::Registrar& r);        // step_scopes.cc
void RegisterWhile(rill::Registrar& r);             // while_op.cc
void RegisterRecurrent(rill::Registrar& r);         // recurrent_op.cc
void RegisterConditionalBlock(rill::Registrar& r);  // conditional_block_op.cc
void RegisterSaveLoad(rill::Registrar& r);          // save_load_ops.cc
void RegisterFeedFetch(rill::Registrar& r);         // feed_fetch_ops.cc

// What a loop op run for training keeps for its gradient: the scope of each step, in the
// order the steps ran, each handle keeping its scope (and what the step computed) alive.
// A variable holds it as the type StepScopesType(), which is not copyable: a step's scope
// belongs to one run of one loop. Hidden, as the SDK's own types it holds are.
struct __attribute__((visibility("hidden"))) StepScopeList {
  std::vector<rill::Scope> scopes;
};
const rill::VarType& StepScopesType();

// `out` shaped and typed like `like`, all zeros (the gradient nothing flowed into).
inline void ZerosLike(rill::Tensor out, const rill::Tensor& like) {
  void* p = out.Allocate(like.dtype(), like.dims());
  std::memset(p, 0, static_cast<size_t>(like.numel()) * rill::DataTypeSize(like.dtype()));
}

// The value of a one-element bool tensor on the host, the condition of a loop or branch
// in `slot`; throws naming `slot` for any other tensor.
inline bool ReadCondition(const rill::Tensor& cond, const char* slot) {
  if (cond.dtype() != RILL_BOOL || cond.numel() != 1 || cond.device_type() != RILL_CPU) {
    throw rill::Error(std::string(slot) + " must be a bool tensor of one element on the host, got " +
                      (cond.initialized() ? rill::DataTypeName(cond.dtype()) + std::string(" with ") +
                                                std::to_string(cond.numel()) + " elements"
                                          : std::string("no value")) +
                      (cond.initialized() && cond.device_type() != RILL_CPU ? " on a device" : ""));
  }
  return *cond.data<bool>();
}

}  // namespace rill::core

#endif  // RILL_CORE_OPS_BUILTIN_OPS_H_
