// fill_constant: Out = a tensor of `shape` and `dtype` filled with `value`.
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void FillConstant(KernelContext& ctx) {
  const auto shape = ctx.Attr<std::vector<int64_t>>("shape");
  const double value = ctx.Attr<float>("value");
  Tensor out = ctx.Output("Out");
  T* p = out.Allocate<T>(shape);
  std::fill(p, p + out.numel(), static_cast<T>(value));
}

}  // namespace

void RegisterFillConstant(Registrar& r) {
  r.Op(OpSchema("fill_constant")
           .Doc("Out = a tensor of `shape` and `dtype` with every element `value`.")
           .Output("Out", "the filled tensor")
           .Attr("shape", std::vector<int64_t>{}, "dimensions of Out")
           .Attr("dtype", int64_t{RILL_FP32}, "element type (framework.proto VarType number)")
           .Attr("value", 0.0, "the value of every element")
           .Attr("force_cpu", false, "keep Out on the CPU")
           .KernelDtypeFrom("attr:dtype"));
  r.Kernel("fill_constant", RILL_CPU, RILL_FP32, &FillConstant<float>);
  r.Kernel("fill_constant", RILL_CPU, RILL_FP64, &FillConstant<double>);
  r.Kernel("fill_constant", RILL_CPU, RILL_INT32, &FillConstant<int32_t>);
  r.Kernel("fill_constant", RILL_CPU, RILL_INT64, &FillConstant<int64_t>);
  r.Kernel("fill_constant", RILL_CPU, RILL_BOOL, &FillConstant<bool>);
}

}  // namespace rill::math
