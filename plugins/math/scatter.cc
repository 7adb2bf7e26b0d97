// scatter (and its gradient), with Paddle's contract (paddle/fluid/operators/scatter_op.*,
// scatter.h): Out = X with the rows Ids lists taken from Updates' rows. overwrite: each
// listed row takes the last update that names it; otherwise each listed row is zeroed and
// every update that names it added, in Ids' order. Ids is [N] or [N, 1], int32 or int64, each
// in [0, X's rows); Updates is [N, X's dims after the first]. The gradient: X@GRAD is
// Out@GRAD with the listed rows zeroed, Updates@GRAD Out@GRAD's rows at Ids.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "shape.h"

namespace rill::math {
namespace {

// Ids' values, checked against its shape and X's `rows`.
std::vector<int64_t> IdsOf(const Tensor& ids, int64_t rows) {
  const std::vector<int64_t> d = ids.dims();
  if (!(d.size() == 1 || (d.size() == 2 && d[1] == 1))) throw Error("Ids must be [N] or [N, 1], not " + DimsString(d));
  std::vector<int64_t> values = IntsOf(ids, "Ids");
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] >= rows) {
      throw Error("Ids[" + std::to_string(i) + "] = " + std::to_string(values[i]) + " is not a row of X's " +
                  std::to_string(rows));
    }
  }
  return values;
}

// The elements in a row of `dims` (those after the first).
int64_t RowWidth(const std::vector<int64_t>& dims) { return Product(dims, 1, dims.size()); }

template <class T> void Scatter(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), updates = ctx.Input("Updates");
  const std::vector<int64_t> xd = x.dims(), ud = updates.dims();
  if (xd.empty()) throw Error("X must have rows, not be a scalar");
  const std::vector<int64_t> ids = IdsOf(ctx.Input("Ids"), xd[0]);
  if (ud.size() != xd.size() || ud[0] != static_cast<int64_t>(ids.size()) ||
      !std::equal(ud.begin() + 1, ud.end(), xd.begin() + 1)) {
    throw Error("Updates " + DimsString(ud) + " must be [" + std::to_string(ids.size()) +
                "] + X's dims after the first, X being " + DimsString(xd));
  }
  const int64_t width = RowWidth(xd);
  const size_t row_bytes = sizeof(T) * static_cast<size_t>(width);
  // Out may be Updates: its rows are then read from a copy made before Out is written.
  const T* from = updates.data<T>();
  std::vector<T> kept;
  if (ctx.InputVar("Updates").handle() == ctx.OutputVar("Out").handle()) {
    kept.assign(from, from + updates.numel());
    from = kept.data();
  }
  const T* in = x.data<T>();
  T* out = ctx.Output("Out").Allocate<T>(xd);
  if (out != in) ParallelCopy(in, out, row_bytes * static_cast<size_t>(xd[0]));
  if (ctx.Attr<bool>("overwrite")) {
    for (size_t i = 0; i < ids.size(); ++i) std::memcpy(out + ids[i] * width, from + i * width, row_bytes);
    return;
  }
  for (const int64_t row : ids) std::fill(out + row * width, out + (row + 1) * width, T(0));
  for (size_t i = 0; i < ids.size(); ++i) {
    VecMap<T>(out + ids[i] * width, width) += ConstVecMap<T>(from + i * width, width);
  }
}

template <class T> void ScatterGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> gd = g.dims();
  if (gd.empty()) throw Error("Out@GRAD must have rows, not be a scalar");
  const std::vector<int64_t> ids = IdsOf(ctx.Input("Ids"), gd[0]);
  const int64_t width = RowWidth(gd);
  const T* dout = g.data<T>();
  if (ctx.HasOutput("Updates@GRAD")) {
    std::vector<int64_t> dims = gd;
    dims[0] = static_cast<int64_t>(ids.size());
    T* du = ctx.AllocateOutput<T>("Updates@GRAD", dims);
    for (size_t i = 0; i < ids.size(); ++i)
      std::copy(dout + ids[i] * width, dout + (ids[i] + 1) * width, du + i * width);
  }
  if (ctx.HasOutput("X@GRAD")) {
    T* dx = ctx.AllocateOutput<T>("X@GRAD", gd);
    if (dx != dout) ParallelCopy(dout, dx, sizeof(T) * static_cast<size_t>(g.numel()));
    for (const int64_t row : ids) std::fill(dx + row * width, dx + (row + 1) * width, T(0));
  }
}

}  // namespace

void RegisterScatter(Registrar& r) {
  const OpSchema schema =
      OpSchema("scatter")
          .Doc(
              "Out = X with row Ids[i] taken from Updates' row i: the last update of a row (overwrite), or the "
              "sum of its updates (the row's own value dropped). As Paddle's.")
          .Input("X", "[R, ...]")
          .Input("Ids", "[N] or [N, 1] int32/int64, rows of X")
          .Input("Updates", "[N, ...]: X's dims after the first")
          .Output("Out", "shaped like X")
          .Attr("overwrite", true, "a row takes its last update; false: the sum of its updates")
          .KernelDtypeFrom("X")
          .Grad("scatter_grad", "Ids,Updates,Out@GRAD", "X,Updates");
  r.Op(schema);
  OpSchema grad = schema.MakeGradSchema();
  r.Op(grad.KernelDtypeFrom("Out@GRAD"));
  RegisterCpu<float, double, int32_t, int64_t>(r, "scatter", [](auto t) { return &Scatter<decltype(t)>; });
  RegisterCpu<float, double>(r, "scatter_grad", [](auto t) { return &ScatterGrad<decltype(t)>; });
}

}  // namespace rill::math
