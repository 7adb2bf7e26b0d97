// assign: Out = a copy of X (any dtype; LoD kept); its gradient copies Out@GRAD back. On
// the CPU a tensor's bytes are copied by the passes' team; every other value (selected
// rows, a tensor array, a custom value, memory on a device) by the host (assign.h).
#include "assign.h"
#include "ops.h"
#include "tensor_copy.h"

namespace rill::math {
namespace {

// Copies `in` into `out` as CopyTensor does when both hold tensors (or `out` nothing yet)
// and `in` holds a CPU tensor with a value; otherwise leaves both alone and says so.
bool CopyCpuTensor(Variable in, Variable out) {
  if (!in.IsTensor() || !out.IsTensor() || !in.initialized()) return false;
  Tensor x = in.tensor();
  if (x.device_type() != RILL_CPU) return false;
  CopyTensor(x, out.tensor());
  return true;
}

class CpuAssign {
 public:
  explicit CpuAssign(const OpInfo& op) : host_copy_(op), x_(op.InputSlot("X")), out_(op.OutputSlot("Out")) {}
  void Compute(KernelContext& ctx) {
    Variable in = ctx.InputVar(x_);
    Variable out = ctx.OutputVar(out_);
    if (in.handle() == out.handle() || !CopyCpuTensor(in, out)) host_copy_.Compute(ctx);
  }

 private:
  Assign host_copy_;
  const Slot x_, out_;
};

void CpuAssignGrad(KernelContext& ctx) {
  if (!CopyCpuTensor(ctx.InputVar("Out@GRAD"), ctx.OutputVar("X@GRAD"))) AssignGradKernel(ctx);
}

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
  r.StatefulKernel<CpuAssign>("assign", RILL_CPU, RILL_ANY_DTYPE);
  r.Kernel("assign_grad", RILL_CPU, RILL_ANY_DTYPE, &CpuAssignGrad);
}

}  // namespace rill::math
