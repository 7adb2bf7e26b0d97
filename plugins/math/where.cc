// where (Paddle's): Out = X where Condition, else Y, elementwise over three tensors of one
// shape (Fluid's Python broadcasts them first); its gradient splits Out@GRAD between X
// and Y by the same Condition.
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// Condition, checked to be bool and shaped like `dims`.
const bool* ConditionOf(KernelContext& ctx, const std::vector<int64_t>& dims, const char* like) {
  Tensor c = ctx.Input("Condition");
  if (c.dtype() != RILL_BOOL) throw Error(std::string("Condition must be bool, not ") + DataTypeName(c.dtype()));
  if (c.dims() != dims) {
    throw Error("Condition " + DimsString(c.dims()) + " is not shaped like " + like + " " + DimsString(dims));
  }
  return c.data<bool>();
}

template <class T>
void Where(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  if (y.dims() != x.dims()) throw Error("Y " + DimsString(y.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const bool* c = ConditionOf(ctx, x.dims(), "X");
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  WriteOutput<T>(ctx, "Out", {"Condition", "X", "Y"}, x.dims(), [&](T* out) {
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = c[i] ? px[i] : py[i];
  });
}

template <class T>
void WhereGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const bool* c = ConditionOf(ctx, g.dims(), "Out@GRAD");
  const T* pg = g.data<T>();
  for (const char* slot : {"X", "Y"}) {
    const std::string grad = std::string(slot) + "@GRAD";
    if (!ctx.HasOutput(grad.c_str())) continue;
    const bool keep = slot[0] == 'X';
    T* d = ctx.AllocateOutput<T>(grad.c_str(), g.dims());
    for (int64_t i = 0; i < g.numel(); ++i) d[i] = c[i] == keep ? pg[i] : T(0);
  }
}

}  // namespace

void RegisterWhere(Registrar& r) {
  const OpSchema where = OpSchema("where")
      .Doc("Out = X where Condition, else Y, elementwise (all three of one shape).")
      .Input("Condition", "bool")
      .Input("X", "the values where Condition holds")
      .Input("Y", "the values elsewhere")
      .Output("Out", "the chosen values")
      .KernelDtypeFrom("X")
      .Grad("where_grad", "X,Y,Condition,Out@GRAD", "X,Y");
  r.Op(where);
  r.Op(where.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "where", [](auto t) { return &Where<decltype(t)>; });
  RegisterCpu<float, double>(r, "where_grad", [](auto t) { return &WhereGrad<decltype(t)>; });
}

}  // namespace rill::math
