// core/program/backward.h — appending a backward pass to a program (Fluid's
// append_backward) and plain SGD updates after it.
//
// Contract: AppendBackward(program, registry, loss) appends to block 0, after the op that
// produces `loss`, the gradient ops of every differentiable op on a path from the
// parameters to the loss, as each op's schema declares them (RillOpSchema grad_*).
// Parameters are the block's persistable variables unless named. Gradients are named
// "v@GRAD"; a variable used by several ops gets one "v@GRAD@RENAME@k" per use, summed
// into v@GRAD; the gradient of an op output that does not reach the loss is zeros. The
// loss gradient is ones shaped like the loss. A conditional_block on the path gets a
// conditional_block_grad op and a gradient block appended to the program: the forward
// block's ops again (recomputing what the forward run's child scope held), then their
// gradient ops, seeded by the gradients of the block's outputs. A while on the path gets a
// while_grad op and a gradient block of its body's gradient ops alone, run once per step
// in that step's kept scope (the forward op gains a StepScopes output; core/ops/while_op.cc
// states what the two share). A recurrent on the path gets a recurrent_grad op and a
// gradient block of its step block's gradient ops, under the names Fluid's gives them
// (core/ops/recurrent_op.cc). Errors (no such loss, loss independent of every parameter,
// an op overwriting a variable on the gradient path, a loop carrying a tensor it overwrites
// on it) throw Error and leave the program unchanged.
#ifndef RILL_CORE_PROGRAM_BACKWARD_H_
#define RILL_CORE_PROGRAM_BACKWARD_H_

#include <string>
#include <vector>

#include "core/proto/framework.pb.h"
#include "core/registry/registry.h"
#include "rill/abi.h"

namespace rill::core {

struct ParamGrad {
  std::string param;
  std::string grad;
};

// See RILL_GRAD_SUFFIX and RILL_EMPTY_VAR_NAME in rill/abi.h.
inline constexpr const char* kGradSuffix = RILL_GRAD_SUFFIX;
inline constexpr const char* kEmptyVarName = RILL_EMPTY_VAR_NAME;

// Appends the backward pass; returns each parameter that received a gradient with it.
std::vector<ParamGrad> AppendBackward(proto::ProgramDesc& program, const Registry& registry, const std::string& loss,
                                      std::vector<std::string> parameters = {});

// Appends `param -= learning_rate * grad` (sgd ops) for each pair; the learning rate is a
// [1] tensor of each parameter's declared dtype (fp32 if undeclared).
void AppendSgd(proto::ProgramDesc& program, const std::vector<ParamGrad>& params_grads, float learning_rate);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_BACKWARD_H_
