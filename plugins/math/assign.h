// plugins/math/assign.h — assign's kernels, for every device: a variable copy made by the
// host keeps the source's place, so the CPU and the CUDA plugin register these same
// functions.
#ifndef RILL_PLUGINS_MATH_ASSIGN_H_
#define RILL_PLUGINS_MATH_ASSIGN_H_

#include "rill/sdk.hpp"

namespace rill::math {

// Out = a deep copy of X (tensor or selected rows, any dtype; LoD kept).
inline void AssignKernel(KernelContext& ctx) {
  Variable in = ctx.InputVar("X");
  Variable out = ctx.OutputVar("Out");
  if (in.handle() == out.handle()) return;
  if (!in.initialized()) throw Error("input X ('" + ctx.op().InputName("X") + "') holds no value yet");
  out.CopyFrom(in);
}

// X@GRAD = a copy of Out@GRAD.
inline void AssignGradKernel(KernelContext& ctx) { ctx.OutputVar("X@GRAD").CopyFrom(ctx.InputVar("Out@GRAD")); }

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_ASSIGN_H_
