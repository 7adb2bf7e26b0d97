// increment: Out = X + step, for a one-element X (Fluid's loop counter op).
#include "ops.h"

namespace rill::math {
namespace {

// Stateful so that `step` and the slots are found once per op instance, not on every run.
template <class T> class Increment {
 public:
  explicit Increment(const OpInfo& op)
      : step_(static_cast<T>(op.Attr<float>("step"))), x_(op.InputSlot("X")), out_(op.OutputSlot("Out")) {}

  void Compute(KernelContext& ctx) {
    Tensor x = ctx.Input(x_);
    if (x.numel() != 1) {
      throw Error("X must have exactly one element, it has " + std::to_string(x.numel()));
    }
    const T value = *x.data<T>() + step_;
    *ctx.AllocateOutput<T>(out_, x.dims_data(), x.ndim()) = value;
  }
  bool Scalar(const RillScalar* in, RillScalar* out) const {  // a loop's counter
    T x;
    if (!ReadScalar(in[0], &x)) return false;
    WriteScalar<T>(out[0], static_cast<T>(x + step_));
    return true;
  }

 private:
  const T step_;
  const Slot x_, out_;
};

}  // namespace

void RegisterIncrement(Registrar& r) {
  r.Op(OpSchema("increment")
           .Doc("Out = X + step. X must hold exactly one element; Out may be X itself.")
           .Input("X", "a one-element tensor")
           .Output("Out", "X + step, same dtype and shape")
           .Attr("step", 1.0, "the amount added")
           .KernelDtypeFrom("X"));
  r.StatefulKernel<Increment<float>>("increment", RILL_CPU, RILL_FP32);
  r.StatefulKernel<Increment<double>>("increment", RILL_CPU, RILL_FP64);
  r.StatefulKernel<Increment<int32_t>>("increment", RILL_CPU, RILL_INT32);
  r.StatefulKernel<Increment<int64_t>>("increment", RILL_CPU, RILL_INT64);
}

}  // namespace rill::math
