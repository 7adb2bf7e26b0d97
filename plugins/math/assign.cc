// assign: Out = a copy of X (any dtype; LoD kept); its gradient copies Out@GRAD back.
#include "ops.h"

namespace rill::math {
namespace {

void Assign(KernelContext& ctx) {
  Variable in = ctx.InputVar("X");
  Variable out = ctx.OutputVar("Out");
  if (in.handle() == out.handle()) return;
  if (!in.initialized()) throw Error("input X ('" + ctx.op().InputName("X") + "') holds no value yet");
  out.CopyFrom(in);
}

void AssignGrad(KernelContext& ctx) { ctx.OutputVar("X@GRAD").CopyFrom(ctx.InputVar("Out@GRAD")); }

}  // namespace

void RegisterAssign(Registrar& r) {
  const OpSchema assign = OpSchema("assign")
      .Doc("Out = a deep copy of X (tensor or selected rows, any dtype).")
      .Input("X", "the value to copy")
      .Output("Out", "the copy")
      .Grad("assign_grad", "Out@GRAD", "X");
  r.Op(assign);
  OpSchema grad = assign.MakeGradSchema();
  r.Op(grad.KernelDtypeFrom(""));
  r.Kernel("assign", RILL_CPU, RILL_ANY_DTYPE, &Assign);
  r.Kernel("assign_grad", RILL_CPU, RILL_ANY_DTYPE, &AssignGrad);
}

}  // namespace rill::math
