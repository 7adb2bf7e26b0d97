// gather: Out = X's slices at Index along an axis (attribute `axis`, or the Axis input),
// and index_select (the same along attribute `dim`), with Fluid's contracts; and their
// gradients, which add each slice of Out@GRAD back at its index (Fluid 1.x's gather
// `overwrite`, when a program sets it, keeps the last slice of a repeated index instead,
// as its kernel assigned them).
#include <cstring>

#include "gather_rows.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// The indices as int64, checked against the axis' size, and the geometry around the axis.
struct GatherPlan {
  std::vector<int64_t> index;
  int64_t pre = 0, n = 0, post = 0;  // X is [pre, n, post] around the axis
  std::vector<int64_t> out_dims;
};

// kIndexSelect: index_select's contract (attribute `dim`; no Axis input, no overwrite).
template <bool kIndexSelect> GatherPlan PlanGather(KernelContext& ctx, const std::vector<int64_t>& x_dims) {
  Tensor index = ctx.Input("Index");
  const std::vector<int64_t> id = index.dims();
  if (!(id.size() == 1 || (id.size() == 2 && id[1] == 1))) {
    throw Error("Index must be [N] or [N, 1], not " + DimsString(id));
  }
  int64_t axis = ctx.Attr<int64_t>(kIndexSelect ? "dim" : "axis");
  if (!kIndexSelect && ctx.HasInput("Axis")) axis = IntsOf(ctx.Input("Axis"), "Axis").at(0);
  const size_t a = NormalizeAxis(axis, x_dims.size());
  GatherPlan p;
  p.index = IntsOf(index, "Index");
  p.pre = Product(x_dims, 0, a);
  p.n = x_dims[a];
  p.post = Product(x_dims, a + 1, x_dims.size());
  for (size_t i = 0; i < p.index.size(); ++i) {
    if (p.index[i] < 0 || p.index[i] >= p.n) {
      throw Error("Index[" + std::to_string(i) + "] = " + std::to_string(p.index[i]) + " is out of range for axis " +
                  std::to_string(a) + " of size " + std::to_string(p.n));
    }
  }
  p.out_dims = x_dims;
  p.out_dims[a] = static_cast<int64_t>(p.index.size());
  return p;
}

template <bool kIndexSelect> void Gather(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const GatherPlan p = PlanGather<kIndexSelect>(ctx, x.dims());
  const size_t elem = DataTypeSize(x.dtype());
  const size_t slice = static_cast<size_t>(p.post) * elem;
  const auto k = static_cast<int64_t>(p.index.size());
  const char* px = static_cast<const char*>(x.raw_data());
  WriteOutputBytes(ctx, "Out", {"X", "Index"}, x.dtype(), p.out_dims, [&](char* out) {
    // Slice (i, j) of Out: X's slice (i, Index[j]); slice j itself when the axis is X's
    // first (i only 0), without a division per slice.
    if (p.pre == 1) {
      return GatherRows(out, k, slice,
                        [&](int64_t s) { return px + static_cast<size_t>(p.index[static_cast<size_t>(s)]) * slice; });
    }
    GatherRows(out, p.pre * k, slice, [&](int64_t s) {
      return px + static_cast<size_t>((s / k) * p.n + p.index[static_cast<size_t>(s % k)]) * slice;
    });
  });
}

template <class T, bool kIndexSelect> void GatherGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  const GatherPlan p = PlanGather<kIndexSelect>(ctx, x.dims());
  if (g.dims() != p.out_dims) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(p.out_dims));
  }
  const bool overwrite = !kIndexSelect && ctx.Attr<bool>("overwrite");
  const auto k = static_cast<int64_t>(p.index.size());
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  for (int64_t i = 0; i < p.pre; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      T* to = dx + (i * p.n + p.index[static_cast<size_t>(j)]) * p.post;
      const T* from = pg + (i * k + j) * p.post;
      for (int64_t c = 0; c < p.post; ++c) to[c] = overwrite ? from[c] : to[c] + from[c];
    }
  }
}

}  // namespace

void RegisterGather(Registrar& r) {
  const OpSchema gather =
      OpSchema("gather")
          .Doc("Out = the slices of X at Index along axis: Out's dims are X's with dims[axis] = len(Index).")
          .Input("X", "the tensor gathered from (any dtype)")
          .Input("Index", "int32 or int64 [N] or [N, 1], each in [0, X.dims[axis])")
          .Input("Axis", "the axis, one int32 or int64; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the gathered slices")
          .Attr("axis", int64_t{0}, "the axis")
          .Attr("overwrite", false,
                "gradient: a repeated index keeps its last slice of Out@GRAD (Fluid 1.x) instead of their sum")
          .KernelDtypeFrom("X")
          .Grad("gather_grad", "X,Index,Axis,Out@GRAD", "X");
  const OpSchema index_select =
      OpSchema("index_select")
          .Doc("Out = the slices of X at Index along dim: Out's dims are X's with dims[dim] = len(Index).")
          .Input("X", "the tensor selected from (any dtype)")
          .Input("Index", "int32 or int64 [N], each in [0, X.dims[dim])")
          .Output("Out", "the selected slices")
          .Attr("dim", int64_t{0}, "the axis")
          .KernelDtypeFrom("X")
          .Grad("index_select_grad", "X,Index,Out@GRAD", "X");
  for (const OpSchema* s : {&gather, &index_select}) {
    r.Op(*s);
    r.Op(s->MakeGradSchema());
  }
  r.Kernel("gather", RILL_CPU, RILL_ANY_DTYPE, &Gather<false>);
  r.Kernel("index_select", RILL_CPU, RILL_ANY_DTYPE, &Gather<true>);
  RegisterCpu<float, double>(r, "gather_grad", [](auto t) { return &GatherGrad<decltype(t), false>; });
  RegisterCpu<float, double>(r, "index_select_grad", [](auto t) { return &GatherGrad<decltype(t), true>; });
}

}  // namespace rill::math
