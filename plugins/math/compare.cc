// less_than, equal: Out (bool) = X op Y elementwise, with Fluid's broadcasting.
#include "broadcast.h"
#include "ops.h"

namespace rill::math {
namespace {

template <class T> void LessThan(KernelContext& ctx) {
  BinaryBroadcast<T, bool>(ctx, [](T a, T b) { return a < b; });
}
template <class T> void Equal(KernelContext& ctx) {
  BinaryBroadcast<T, bool>(ctx, [](T a, T b) { return a == b; });
}

OpSchema CompareSchema(const char* type, const char* what) {
  return OpSchema(type)
      .Doc(std::string("Out = X ") + what + " Y, elementwise; Out is bool, shaped like X.")
      .Input("X", "left operand")
      .Input("Y", "right operand, broadcast to X")
      .Output("Out", "bool result")
      .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end)")
      .Attr("force_cpu", false, "keep Out on the CPU")
      .KernelDtypeFrom("X");
}

}  // namespace

void RegisterCompare(Registrar& r) {
  r.Op(CompareSchema("less_than", "<"));
  r.Op(CompareSchema("equal", "=="));
  r.Kernel("less_than", RILL_CPU, RILL_FP32, &LessThan<float>);
  r.Kernel("less_than", RILL_CPU, RILL_FP64, &LessThan<double>);
  r.Kernel("less_than", RILL_CPU, RILL_INT32, &LessThan<int32_t>);
  r.Kernel("less_than", RILL_CPU, RILL_INT64, &LessThan<int64_t>);
  r.Kernel("equal", RILL_CPU, RILL_FP32, &Equal<float>);
  r.Kernel("equal", RILL_CPU, RILL_FP64, &Equal<double>);
  r.Kernel("equal", RILL_CPU, RILL_INT32, &Equal<int32_t>);
  r.Kernel("equal", RILL_CPU, RILL_INT64, &Equal<int64_t>);
  r.Kernel("equal", RILL_CPU, RILL_BOOL, &Equal<bool>);
}

}  // namespace rill::math
