// Fluid's `while`: runs sub_block in a child scope for as long as Condition (a bool tensor
// of one element, re-read before each step) is true. It is an op like any plugin's: the
// host runs the loop (ctx_run_loop), reusing a step's scope for the next while nothing
// else holds it, so a step costs its body's ops.
#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

// The host reads Condition while it is one element of bool; the lambda gives the clear
// error for anything else.
void While(rill::KernelContext& ctx) {
  ctx.RunLoop(ctx.op().BlockAttr("sub_block"), ctx.InputVarOrNull("Condition"),
              [&] { return ReadCondition(ctx.Input("Condition"), "Condition"); });
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
