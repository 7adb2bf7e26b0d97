// plugins/math/assign.h — assign's kernels, for every device: a variable copy made by the
// host keeps the source's place, so the CPU and the CUDA plugin register these same
// functions.
#ifndef RILL_PLUGINS_MATH_ASSIGN_H_
#define RILL_PLUGINS_MATH_ASSIGN_H_

#include "rill/sdk.hpp"

namespace rill::math {

// Out = a deep copy of X (tensor or selected rows, any dtype; LoD kept). Stateful so that
// its slots are found once per op instance: loops assign in every step.
class Assign {
 public:
  explicit Assign(const OpInfo& op) : x_(op.InputSlot("X")), out_(op.OutputSlot("Out")), x_name_(op.InputName("X")) {}
  void Compute(KernelContext& ctx) {
    Variable in = ctx.InputVar(x_);
    Variable out = ctx.OutputVar(out_);
    if (in.handle() == out.handle()) return;
    if (!in.initialized()) throw Error("input X ('" + x_name_ + "') holds no value yet");
    out.CopyFrom(in);
  }

 private:
  const Slot x_, out_;
  const std::string x_name_;
};

// X@GRAD = a copy of Out@GRAD.
inline void AssignGradKernel(KernelContext& ctx) { ctx.OutputVar("X@GRAD").CopyFrom(ctx.InputVar("Out@GRAD")); }

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_ASSIGN_H_
