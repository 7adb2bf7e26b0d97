// The ops that turn a sparse gradient (SelectedRows) into what dense ops read, as Paddle's
// global-norm gradient clip emits them: merge_selected_rows (each row once, ascending, its
// value rows summed: the dense gradient's rows) and get_tensor_from_selected_rows (the
// value tensor, [rows, width...]).
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

Variable::SelectedRows RowsOf(KernelContext& ctx) {
  Variable xv = ctx.InputVar("X");
  if (!xv.IsSelectedRows()) throw Error("X must hold SelectedRows (a sparse gradient), it holds a tensor");
  return xv.selected_rows();
}

template <class T> void MergeSelectedRows(KernelContext& ctx) {
  const Variable::SelectedRows sr = RowsOf(ctx);
  const int64_t width = sr.count > 0 ? sr.value.numel() / static_cast<int64_t>(sr.count) : 0;
  const RowGroups groups = GroupRows(sr.rows, sr.count);
  std::vector<int64_t> dims = sr.value.dims();
  if (dims.empty()) dims = {0};
  dims[0] = static_cast<int64_t>(groups.rows.size());
  // Out may be X, whose value rows making Out's rows would release: summed from a copy then.
  const T* values = sr.value.data<T>();
  std::vector<T> kept;
  if (ctx.InputVar("X").handle() == ctx.OutputVar("Out").handle()) {
    kept.assign(values, values + sr.value.numel());
    values = kept.data();
  }
  Tensor out = ctx.OutputVar("Out").SetSelectedRows(groups.rows.data(), groups.rows.size(), sr.height);
  SumGroups(groups, values, width, out.Allocate<T>(dims));
}

template <class T> void GetTensorFromSelectedRows(KernelContext& ctx) {
  const Variable::SelectedRows sr = RowsOf(ctx);
  const T* values = sr.value.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", sr.value.dims_data(), sr.value.ndim());
  std::copy(values, values + sr.value.numel(), out);
}

}  // namespace

void RegisterSelectedRowsOps(Registrar& r) {
  r.Op(OpSchema("merge_selected_rows")
           .Doc("Out = X's rows, each once, ascending, the value rows of a repeated row summed.")
           .Input("X", "SelectedRows")
           .Output("Out", "SelectedRows of X's height")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double>(r, "merge_selected_rows", [](auto t) { return &MergeSelectedRows<decltype(t)>; });
  r.Op(OpSchema("get_tensor_from_selected_rows")
           .Doc("Out = the value tensor of SelectedRows X, [number of rows, width...] (the row numbers dropped).")
           .Input("X", "SelectedRows")
           .Output("Out", "a tensor")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double, int32_t, int64_t>(r, "get_tensor_from_selected_rows",
                                               [](auto t) { return &GetTensorFromSelectedRows<decltype(t)>; });
}

}  // namespace rill::math
