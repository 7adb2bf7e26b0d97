// gather_nd and scatter_nd_add (and their gradients), with Paddle's contracts
// (paddle/fluid/operators/gather_nd_op.*, scatter_nd_add_op.*): Index [..., k], int32 or
// int64, with k at most X's rank, names a slice of X by each of its rows (its last
// dimension): row (i0, .., ik-1) the slice X[i0, .., ik-1, ...] of X's dims after the k-th
// (k = 0: X whole). gather_nd: Out = those slices, [Index's dims but the last] + X's dims
// from the k-th. scatter_nd_add: Out = X with each Updates slice added to the slice its
// Index row names, in Index's order (a slice named twice gets both); Updates is shaped as
// gather_nd's Out. Gradients: gather_nd's adds each Out@GRAD slice back at its place;
// scatter_nd_add's X@GRAD is Out@GRAD and its Updates@GRAD gather_nd of Out@GRAD.
#include <string>
#include <vector>

#include "gather_rows.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "shape.h"

namespace rill::math {
namespace {

// Where the slices Index names lie in a tensor of dims x_dims.
struct NdSlices {
  std::vector<int64_t> starts;    // each Index row's slice, its first element's offset
  int64_t width = 1;              // elements in a slice
  std::vector<int64_t> out_dims;  // Index's dims but the last, then x_dims from the k-th
};

NdSlices PlanNd(const Tensor& index, const std::vector<int64_t>& x_dims) {
  const std::vector<int64_t> id = index.dims();
  if (id.empty()) throw Error("Index must have at least one dimension, its last the length of each index");
  const auto k = static_cast<size_t>(id.back());
  if (k > x_dims.size()) {
    throw Error("Index " + DimsString(id) + ": its last dimension (" + std::to_string(k) +
                ") must be at most X's rank (" + std::to_string(x_dims.size()) + ", X being " + DimsString(x_dims) +
                ")");
  }
  NdSlices p;
  p.width = Product(x_dims, k, x_dims.size());
  p.out_dims.assign(id.begin(), id.end() - 1);
  p.out_dims.insert(p.out_dims.end(), x_dims.begin() + static_cast<std::ptrdiff_t>(k), x_dims.end());
  const std::vector<int64_t> values = IntsOf(index, "Index");
  const int64_t rows = Product(id, 0, id.size() - 1);
  p.starts.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t start = 0;
    for (size_t d = 0; d < k; ++d) {
      const int64_t i = values[static_cast<size_t>(r) * k + d];
      if (i < 0 || i >= x_dims[d]) {
        throw Error("Index[" + std::to_string(r) + "][" + std::to_string(d) + "] = " + std::to_string(i) +
                    " is outside dimension " + std::to_string(d) + " of X " + DimsString(x_dims));
      }
      start = start * x_dims[d] + i;
    }
    p.starts[static_cast<size_t>(r)] = start * p.width;
  }
  return p;
}

void GatherNd(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const NdSlices p = PlanNd(ctx.Input("Index"), x.dims());
  const size_t elem = DataTypeSize(x.dtype());
  const char* px = static_cast<const char*>(x.raw_data());
  WriteOutputBytes(ctx, "Out", {"X", "Index"}, x.dtype(), p.out_dims, [&](char* out) {
    GatherRows(out, static_cast<int64_t>(p.starts.size()), static_cast<size_t>(p.width) * elem,
               [&](int64_t r) { return px + static_cast<size_t>(p.starts[static_cast<size_t>(r)]) * elem; });
  });
}

// Adds slice r of `slices` to `to` at p.starts[r], in Index's order.
template <class T> void AddSlices(const NdSlices& p, const T* slices, T* to) {
  for (size_t r = 0; r < p.starts.size(); ++r) {
    VecMap<T>(to + p.starts[r], p.width) += ConstVecMap<T>(slices + static_cast<int64_t>(r) * p.width, p.width);
  }
}

template <class T> void GatherNdGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const NdSlices p = PlanNd(ctx.Input("Index"), x.dims());
  if (g.dims() != p.out_dims) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(p.out_dims));
  }
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFill(dx, x.numel(), T(0));
  AddSlices(p, g.data<T>(), dx);
}

template <class T> void ScatterNdAdd(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), updates = ctx.Input("Updates");
  const NdSlices p = PlanNd(ctx.Input("Index"), x.dims());
  if (updates.dims() != p.out_dims) {
    throw Error("Updates " + DimsString(updates.dims()) + " must be " + DimsString(p.out_dims) +
                ": Index's dims but the last, then X's from the last one's length");
  }
  // Out may be Updates: its slices are then read from a copy made before Out is written.
  const T* from = updates.data<T>();
  std::vector<T> kept;
  if (ctx.InputVar("Updates").handle() == ctx.OutputVar("Out").handle()) {
    kept.assign(from, from + updates.numel());
    from = kept.data();
  }
  const T* in = x.data<T>();
  T* out = ctx.Output("Out").Allocate<T>(x.dims());
  if (out != in) ParallelCopy(in, out, sizeof(T) * static_cast<size_t>(x.numel()));
  AddSlices(p, from, out);
}

template <class T> void ScatterNdAddGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const T* dout = g.data<T>();
  if (ctx.HasOutput("Updates@GRAD")) {
    const NdSlices p = PlanNd(ctx.Input("Index"), g.dims());
    T* du = ctx.AllocateOutput<T>("Updates@GRAD", p.out_dims);
    GatherRows(reinterpret_cast<char*>(du), static_cast<int64_t>(p.starts.size()),
               sizeof(T) * static_cast<size_t>(p.width),
               [&](int64_t r) { return reinterpret_cast<const char*>(dout + p.starts[static_cast<size_t>(r)]); });
  }
  if (ctx.HasOutput("X@GRAD")) ctx.Output("X@GRAD").ShareWith(g, g.dims());  // Out@GRAD's values, not a copy
}

}  // namespace

void RegisterGatherScatterNd(Registrar& r) {
  const OpSchema gather =
      OpSchema("gather_nd")
          .Doc(
              "Out = the slices of X that Index's rows name (row (i0, .., ik-1): X[i0, .., ik-1, ...]): Index's "
              "dims but the last, then X's from the k-th. As Paddle's.")
          .Input("X", "the tensor gathered from (any dtype)")
          .Input("Index", "int32/int64 [..., k], k at most X's rank")
          .Output("Out", "[Index's dims but the last] + X's dims from the k-th")
          .KernelDtypeFrom("X")
          .Grad("gather_nd_grad", "X,Index,Out@GRAD", "X");
  const OpSchema scatter =
      OpSchema("scatter_nd_add")
          .Doc(
              "Out = X with each slice of Updates added to the slice of X its Index row names, in Index's order. "
              "As Paddle's.")
          .Input("X", "the tensor added to")
          .Input("Index", "int32/int64 [..., k], k at most X's rank")
          .Input("Updates", "[Index's dims but the last] + X's dims from the k-th")
          .Output("Out", "shaped like X")
          .KernelDtypeFrom("X")
          .Grad("scatter_nd_add_grad", "Index,Updates,Out@GRAD", "X,Updates");
  r.Op(gather);
  r.Op(gather.MakeGradSchema().KernelDtypeFrom("Out@GRAD"));
  r.Op(scatter);
  r.Op(scatter.MakeGradSchema().KernelDtypeFrom("Out@GRAD"));
  r.Kernel("gather_nd", RILL_CPU, RILL_ANY_DTYPE, &GatherNd);
  RegisterCpu<float, double>(r, "gather_nd_grad", [](auto t) { return &GatherNdGrad<decltype(t)>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "scatter_nd_add", [](auto t) { return &ScatterNdAdd<decltype(t)>; });
  RegisterCpu<float, double>(r, "scatter_nd_add_grad", [](auto t) { return &ScatterNdAddGrad<decltype(t)>; });
}

}  // namespace rill::math
