// where (Paddle's): Out = X where Condition, else Y, elementwise over three tensors of one
// shape (Fluid's Python broadcasts them first); its gradient splits Out@GRAD between X
// and Y by the same Condition.
#include <cstring>
#include <type_traits>

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

// out[i] = c[i] ? x[i] : y[i] for i < n, as bits: each element's bits and-ed with a mask
// made from its condition. Both values are read for every element, and the condition
// widens to the values' width as an integer, so the choice vectorizes (a blend, not a
// branch on random conditions), whatever T is. out is none of the inputs (WriteOutput's
// promise), which __restrict tells the compiler.
template <class T>
void Choose(const bool* __restrict c, const T* __restrict x, const T* __restrict y, T* __restrict out, int64_t n) {
  using Bits = std::conditional_t<
      sizeof(T) == 8, uint64_t,
      std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;
  static_assert(sizeof(Bits) == sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    Bits a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    const Bits take_x = static_cast<Bits>(Bits{0} - static_cast<Bits>(c[i]));
    const Bits chosen = static_cast<Bits>((a & take_x) | (b & static_cast<Bits>(~take_x)));
    std::memcpy(out + i, &chosen, sizeof chosen);
  }
}

template <class T> void Where(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  if (y.dims() != x.dims()) throw Error("Y " + DimsString(y.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const bool* c = ConditionOf(ctx, x.dims(), "X");
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const int64_t n = x.numel();
  WriteOutput<T>(ctx, "Out", {"Condition", "X", "Y"}, x.dims(), [&](T* out) {
    ParallelFor(n, static_cast<double>(3 * sizeof(T) + 1) * n, [&](int64_t, int64_t begin, int64_t end) {
      Choose(c + begin, px + begin, py + begin, out + begin, end - begin);
    });
  });
}

template <class T> void WhereGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const bool* c = ConditionOf(ctx, g.dims(), "Out@GRAD");
  const T* pg = g.data<T>();
  for (const char* slot : {"X", "Y"}) {
    const std::string grad = std::string(slot) + "@GRAD";
    if (!ctx.HasOutput(grad.c_str())) continue;
    const bool keep = slot[0] == 'X';
    T* d = ctx.AllocateOutput<T>(grad.c_str(), g.dims());
    ParallelFor(g.numel(), static_cast<double>(2 * sizeof(T) + 1) * g.numel(),
                [&](int64_t, int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) {
                    const T v = pg[i];  // read for every element: a blend, as in Choose
                    d[i] = c[i] == keep ? v : T(0);
                  }
                });
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
