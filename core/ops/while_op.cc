// Fluid's `while` and its gradient.
//
// `while` runs sub_block in a child scope of the op's scope for as long as Condition (a
// bool tensor of one element, re-read before each step) is true. For inference (is_test,
// or no StepScopes output) the host runs the loop (ctx_run_loop), reusing a step's scope
// for the next while nothing else holds it, so a step costs its body's ops. For training
// (StepScopes given and is_test false, as the backward pass leaves a while it
// differentiates) every step runs in a new child scope, kept in StepScopes until
// while_grad has used it or the next run replaces it: what the body computed at each step
// stays there for the gradient.
//
// `while_grad` runs its sub_block, the gradient block the backward pass writes
// (core/program/backward.cc), once per kept step, last step first, each time in a new
// child of that step's scope, so a gradient op reads the forward values of its own step.
// Invariants the pass and this kernel share:
//  - The gradient of each input X[k] that gets one is accumulated across the steps in a
//    variable of the op's scope named accumulators[k]: the block ends by adding its step's
//    contribution into it. It starts as zeros like X[k] (an empty array for a tensor
//    array), or, for an array the body also writes (Out), as a copy of that array's
//    gradient from after the loop; after the last step it moves into X@GRAD[k].
//  - Everything else the block writes is declared in it, so it lives in the step's child
//    scope and one step never sees another's. The accumulators and the gradients from
//    after the loop are lent to that child scope for the step (swapped in and back).
//  - A body carries state from step to step in tensor arrays, written once per entry
//    (as DynamicRNN's ops do); the pass refuses a tensor the body overwrites on the
//    gradient path.
#include <vector>

#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

bool KeepsSteps(const rill::OpInfo& op) { return op.OutputCount("StepScopes") > 0 && !op.Attr<bool>("is_test"); }

void While(rill::KernelContext& ctx) {
  const int32_t body = ctx.op().BlockAttr("sub_block");
  if (!KeepsSteps(ctx.op())) {
    // The host reads Condition while it is one element of bool; the lambda gives the clear
    // error for anything else.
    ctx.RunLoop(body, ctx.InputVarOrNull("Condition"),
                [&] { return ReadCondition(ctx.Input("Condition"), "Condition"); });
    return;
  }
  auto* kept = new StepScopeList;
  ctx.OutputVar("StepScopes").SetCustom(StepScopesType(), kept);  // frees the last run's steps
  const rill::Scope scope = ctx.scope();
  while (ReadCondition(ctx.Input("Condition"), "Condition")) {
    kept->scopes.push_back(scope.NewChild());
    ctx.RunBlock(body, kept->scopes.back());
  }
}

// Sets accumulator `acc` of X[k] to its starting value (see the file comment).
void StartAccumulator(rill::KernelContext& ctx, size_t k, rill::Variable acc) {
  const rill::OpInfo& op = ctx.op();
  const std::string name = op.InputName("X", k);
  const size_t out_grads = op.InputCount("Out@GRAD");
  for (size_t j = 0; j < op.InputCount("Out") && j < out_grads; ++j) {
    if (op.InputName("Out", j) == name && op.InputName("Out@GRAD", j) != RILL_EMPTY_VAR_NAME) {
      acc.CopyFrom(ctx.InputVar("Out@GRAD", j));
      return;
    }
  }
  rill::Variable x = ctx.InputVar("X", k);
  if (x.IsTensorArray()) {
    acc.ResizeTensorArray(0);
    return;
  }
  ZerosLike(acc.tensor(), x.tensor());
}

void WhileGrad(rill::KernelContext& ctx) {
  const rill::OpInfo& op = ctx.op();
  auto* steps = ctx.InputVar("StepScopes").Custom<StepScopeList>(StepScopesType());
  if (steps == nullptr) {
    throw rill::Error("StepScopes ('" + op.InputName("StepScopes") +
                      "') holds no steps: run the forward while in this scope first, without is_test");
  }
  const auto accumulators = op.Attr<std::vector<std::string>>("accumulators");
  const size_t inputs = op.InputCount("X");
  if (accumulators.size() != inputs) {
    throw rill::Error("accumulators names " + std::to_string(accumulators.size()) + " variables, X has " +
                      std::to_string(inputs));
  }
  const rill::Scope scope = ctx.scope();
  for (size_t k = 0; k < inputs; ++k) {
    if (!accumulators[k].empty()) StartAccumulator(ctx, k, scope.Var(accumulators[k]));
  }
  // What the gradient block reads from this op's scope, the gradients from after the loop and
  // the accumulators, is lent to each step's scope, which need not descend from this one (a
  // loop nested in a loop's body ran in that body's step scope).
  std::vector<std::pair<std::string, rill::Variable>> lent;
  const auto lend = [&](const std::string& name, rill::Variable var) {
    for (const auto& [n, v] : lent) {
      if (n == name) return;
    }
    lent.emplace_back(name, var);
  };
  for (size_t j = 0; j < op.InputCount("Out@GRAD"); ++j) {
    const std::string name = op.InputName("Out@GRAD", j);
    if (name != RILL_EMPTY_VAR_NAME) lend(name, ctx.InputVar("Out@GRAD", j));
  }
  for (const auto& name : accumulators) {
    if (!name.empty()) lend(name, scope.Var(name));
  }
  const int32_t grad_block = op.BlockAttr("sub_block");
  for (auto step = steps->scopes.rbegin(); step != steps->scopes.rend(); ++step) {
    const rill::Scope grad_scope = step->NewChild();
    const auto swap = [&] {
      for (auto& [name, var] : lent) grad_scope.Var(name).SwapWith(var);
    };
    swap();
    try {
      ctx.RunBlock(grad_block, grad_scope);
    } catch (...) {
      swap();  // the accumulators stay this op's
      throw;
    }
    swap();
  }
  steps->scopes.clear();  // the forward values are spent
  const size_t grads = op.OutputCount("X@GRAD");
  for (size_t k = 0; k < inputs && k < grads; ++k) {
    if (accumulators[k].empty() || op.OutputName("X@GRAD", k) == RILL_EMPTY_VAR_NAME) continue;
    ctx.OutputVar("X@GRAD", k).MoveFrom(scope.Var(accumulators[k]));
  }
}

}  // namespace

void RegisterWhile(rill::Registrar& r) {
  const rill::OpSchema forward =
      rill::OpSchema("while")
          .Doc(
              "Runs sub_block repeatedly while Condition is true, in a child scope of the op's scope. For "
              "inference (is_test, or no StepScopes) a step reuses the previous step's scope (its variables "
              "keep their values) unless a go block started in it still holds it; for training every step "
              "gets a new scope, kept in StepScopes for while_grad.")
          .Input("X", "variables the body reads", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("Condition", "bool tensor [1], re-read before every step")
          .Output("Out", "variables the body writes", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("StepScopes", "each step's scope, kept for while_grad unless is_test", RILL_SLOT_OPTIONAL)
          .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the loop body")
          .Attr("is_test", false, "inference: keep no step scopes")
          .Grad("while_grad", "X,Out,Out@GRAD,StepScopes", "X");
  r.Op(forward);
  // The backward pass writes this op itself (core/program/backward.cc): its sub_block is the
  // gradient block, not the forward one.
  r.Op(forward.MakeGradSchema()
           .Doc("Gradient of while: runs sub_block (the body's gradient ops) once per step the forward while "
                "kept, last first, each in a child of that step's scope; X@GRAD[k] is what the steps added "
                "into accumulators[k].")
           .Attr("accumulators", std::vector<std::string>{},
                 "per X: the variable the steps add X's gradient into (empty: none)")
           .KernelDtypeFrom(""));  // any dtype: X may hold arrays, or nothing for an unused input
  r.Kernel("while", RILL_CPU, RILL_ANY_DTYPE, &While);
  r.Kernel("while_grad", RILL_CPU, RILL_ANY_DTYPE, &WhileGrad);
}

}  // namespace rill::core
