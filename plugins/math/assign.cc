// assign: Out = a copy of X (any dtype; LoD kept); its gradient copies Out@GRAD back.
#include "assign.h"
#include "ops.h"

namespace rill::math {

void RegisterAssign(Registrar& r) {
  const OpSchema assign = OpSchema("assign")
                              .Doc("Out = a deep copy of X (tensor or selected rows, any dtype).")
                              .Input("X", "the value to copy")
                              .Output("Out", "the copy")
                              .Grad("assign_grad", "Out@GRAD", "X");
  r.Op(assign);
  OpSchema grad = assign.MakeGradSchema();
  r.Op(grad.KernelDtypeFrom(""));
  r.StatefulKernel<Assign>("assign", RILL_CPU, RILL_ANY_DTYPE);
  r.Kernel("assign_grad", RILL_CPU, RILL_ANY_DTYPE, &AssignGradKernel);
}

}  // namespace rill::math
