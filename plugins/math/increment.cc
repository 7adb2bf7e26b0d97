// increment: Out = X + step, for a one-element X (Fluid's loop counter op).
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void Increment(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  if (x.numel() != 1) {
    throw Error("X must have exactly one element, it has " + std::to_string(x.numel()));
  }
  const T value = *x.data<T>() + static_cast<T>(ctx.Attr<float>("step"));
  Tensor out = ctx.Output("Out");
  *out.Allocate<T>(x.dims_data(), x.ndim()) = value;
}

}  // namespace

void RegisterIncrement(Registrar& r) {
  r.Op(OpSchema("increment")
           .Doc("Out = X + step. X must hold exactly one element; Out may be X itself.")
           .Input("X", "a one-element tensor")
           .Output("Out", "X + step, same dtype and shape")
           .Attr("step", 1.0, "the amount added")
           .KernelDtypeFrom("X"));
  r.Kernel("increment", RILL_CPU, RILL_FP32, &Increment<float>);
  r.Kernel("increment", RILL_CPU, RILL_FP64, &Increment<double>);
  r.Kernel("increment", RILL_CPU, RILL_INT32, &Increment<int32_t>);
  r.Kernel("increment", RILL_CPU, RILL_INT64, &Increment<int64_t>);
}

}  // namespace rill::math
