// fill_constant: Out = a tensor of `shape` and `dtype` filled with `value`; fill_any_like
// and fill_zeros_like: the same, shaped like X (the backward pass's seeds).
#include "ops.h"

namespace rill::math {
namespace {

// Reads its attributes once per op instance: fills run in every loop step.
template <class T>
class FillConstant {
 public:
  explicit FillConstant(const OpInfo& op)
      : out_(op.OutputSlot("Out")),
        shape_(op.Attr<std::vector<int64_t>>("shape")),
        value_(static_cast<T>(static_cast<double>(op.Attr<float>("value")))) {}
  // A loop's or a go block's constant one.
  bool Scalar(const RillScalar*, RillScalar* out) const {
    if (!scalar_) return false;
    WriteScalar<T>(out[0], value_);
    return true;
  }
  void Compute(KernelContext& ctx) {
    Tensor out = ctx.AllocateOutput(out_, DataTypeOf<T>::value, shape_.data(), shape_.size());
    T* p = out.mutable_data<T>();
    std::fill(p, p + out.numel(), value_);
  }

 private:
  const Slot out_;
  const std::vector<int64_t> shape_;
  const T value_;
  const bool scalar_ = shape_.size() == 1 && shape_[0] == 1;
};

// Out = a tensor shaped like X filled with `value`, of `dtype` (-1: X's dtype).
template <class T>
void FillLike(KernelContext& ctx, double value) {
  Tensor x = ctx.Input("X");
  T* p = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  std::fill(p, p + x.numel(), static_cast<T>(value));
}

template <bool kZeros>
void FillAnyLike(KernelContext& ctx) {
  const int32_t x_dtype = ctx.Input("X").dtype();
  const int64_t want = kZeros ? -1 : ctx.Attr<int64_t>("dtype");
  const double value = kZeros ? 0.0 : ctx.Attr<float>("value");
  VisitDataType<bool, int32_t, int64_t, float, double>(want < 0 ? x_dtype : static_cast<int32_t>(want),
                                                        ctx.op().type().c_str(),
                                                        [&](auto t) { FillLike<decltype(t)>(ctx, value); });
}

}  // namespace

void RegisterFillConstant(Registrar& r) {
  r.Op(OpSchema("fill_any_like")
           .Doc("Out = a tensor shaped like X with every element `value`, of `dtype` (-1: X's dtype).")
           .Input("X", "the tensor whose shape Out takes")
           .Output("Out", "the filled tensor")
           .Attr("value", 0.0, "the value of every element")
           .Attr("dtype", int64_t{-1}, "element type of Out (-1: X's)")
           .KernelDtypeFrom("X"));
  r.Kernel("fill_any_like", RILL_CPU, RILL_ANY_DTYPE, &FillAnyLike<false>);
  r.Op(OpSchema("fill_zeros_like")
           .Doc("Out = zeros shaped like X, of X's dtype.")
           .Input("X", "the tensor whose shape and dtype Out takes")
           .Output("Out", "zeros")
           .KernelDtypeFrom("X"));
  r.Kernel("fill_zeros_like", RILL_CPU, RILL_ANY_DTYPE, &FillAnyLike<true>);

  r.Op(OpSchema("fill_constant")
           .Doc("Out = a tensor of `shape` and `dtype` with every element `value`.")
           .Output("Out", "the filled tensor")
           .Attr("shape", std::vector<int64_t>{}, "dimensions of Out")
           .Attr("dtype", int64_t{RILL_FP32}, "element type (framework.proto VarType number)")
           .Attr("value", 0.0, "the value of every element")
           .Attr("force_cpu", false, "keep Out on the CPU")
           .KernelDtypeFrom("attr:dtype"));
  r.StatefulKernel<FillConstant<float>>("fill_constant", RILL_CPU, RILL_FP32);
  r.StatefulKernel<FillConstant<double>>("fill_constant", RILL_CPU, RILL_FP64);
  r.StatefulKernel<FillConstant<int32_t>>("fill_constant", RILL_CPU, RILL_INT32);
  r.StatefulKernel<FillConstant<int64_t>>("fill_constant", RILL_CPU, RILL_INT64);
  r.StatefulKernel<FillConstant<bool>>("fill_constant", RILL_CPU, RILL_BOOL);
}

}  // namespace rill::math
