// Fluid's `while`: runs sub_block in a child scope for as long as Condition (a bool tensor
// of one element, re-read before each step) is true. A step runs in the previous step's
// scope when that one is reusable (no go block started in it holds it), so a loop makes
// no scope and resolves no names per step. The steps run in Executor::RunLoop, the
// host's own loop: `while` is a host op, and a step then costs its body's ops and no
// host calls.
#include "core/ops/control_flow.h"
#include "core/runtime/executor.h"
#include "core/runtime/kernel_context.h"

namespace rill::core {
namespace {

struct Condition {
  rill::KernelContext& ctx;
  Variable* var;  // the op's resolved Condition variable; nullptr if it does not exist yet
};

bool Proceed(void* arg) {
  auto& c = *static_cast<Condition*>(arg);
  const Tensor* t = c.var != nullptr ? c.var->GetTensor() : nullptr;
  if (t != nullptr && t->initialized()) return ReadCondition(*t, "Condition");
  return ReadCondition(c.ctx.Input("Condition"), "Condition");  // it throws the clear error
}

void While(rill::KernelContext& ctx) {
  const int32_t body = ctx.op().BlockAttr("sub_block");
  RillKernelContext* raw = ctx.handle();
  Condition cond{ctx, raw->Input("Condition", 0)};
  raw->executor->RunLoop(body, raw->scope->scope, {raw->op->serial, body}, &Proceed, &cond);
}

}  // namespace

void RegisterWhile(rill::Registrar& r) {
  r.Op(rill::OpSchema("while")
           .Doc("Runs sub_block repeatedly while Condition is true, in a child scope of the op's "
                "scope. A step reuses the previous step's scope (its variables keep their "
                "values) unless a go block started in it still holds it.")
           .Input("X", "variables the body reads", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Input("Condition", "bool tensor [1], re-read before every step")
           .Output("Out", "variables the body writes", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Output("StepScopes", "Fluid's step scopes (unused)", RILL_SLOT_OPTIONAL)
           .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the loop body")
           .Attr("is_test", false, "Fluid's inference flag (no effect)"));
  r.Kernel("while", RILL_CPU, RILL_ANY_DTYPE, &While);
}

}  // namespace rill::core
