// assign: Out = a copy of X (any dtype; LoD kept).
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

}  // namespace

void RegisterAssign(Registrar& r) {
  r.Op(OpSchema("assign")
           .Doc("Out = a deep copy of X (tensor or selected rows, any dtype).")
           .Input("X", "the value to copy")
           .Output("Out", "the copy"));
  r.Kernel("assign", RILL_CPU, RILL_ANY_DTYPE, &Assign);
}

}  // namespace rill::math
