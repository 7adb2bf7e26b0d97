// elementwise_add: Out = X + Y with Fluid's broadcasting. The same-shape case is one Eigen
// expression over the whole buffer (vectorized); broadcasting walks [pre, n, post].
#include <Eigen/Core>

#include "broadcast.h"
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void ElementwiseAdd(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  if (x.dims() == y.dims()) {
    Tensor out = ctx.Output("Out");
    // Read X and Y before Allocate: Out may be X or Y itself.
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.Allocate<T>(x.dims());
    using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<Vec>(po, x.numel()) =
        Eigen::Map<const Vec>(px, x.numel()) + Eigen::Map<const Vec>(py, y.numel());
    return;
  }
  BinaryBroadcast<T, T>(ctx, [](T a, T b) { return a + b; });
}

}  // namespace

void RegisterElementwise(Registrar& r) {
  r.Op(OpSchema("elementwise_add")
           .Doc("Out = X + Y. Y's dims must match a contiguous run of X's starting at `axis` "
                "(Fluid's broadcasting); Out is shaped like X.")
           .Input("X", "left operand")
           .Input("Y", "right operand, broadcast to X")
           .Output("Out", "the sum")
           .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end)")
           .KernelDtypeFrom("X"));
  r.Kernel("elementwise_add", RILL_CPU, RILL_FP32, &ElementwiseAdd<float>);
  r.Kernel("elementwise_add", RILL_CPU, RILL_FP64, &ElementwiseAdd<double>);
  r.Kernel("elementwise_add", RILL_CPU, RILL_INT32, &ElementwiseAdd<int32_t>);
  r.Kernel("elementwise_add", RILL_CPU, RILL_INT64, &ElementwiseAdd<int64_t>);
}

}  // namespace rill::math
