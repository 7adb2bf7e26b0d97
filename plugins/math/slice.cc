// slice (a box of Input: starts to ends along `axes`; a range of a tensor array's entries),
// crop (a box of X: `offsets` and Y's or `shape`'s dims) and the expand family, with
// Fluid's contracts, any dtype, and their gradients: expand (X tiled expand_times along each dim),
// tile (the same, X's dims first padded in front with 1s to repeat_times' length, or
// repeat_times to X's rank), expand_v2 and expand_as_v2 (X broadcast to a shape, its dims
// aligned at the end: each 1, or equal to the shape's; -1 in expand_v2's shape keeps X's).
// All four compute Out[i] = X[i mod dims] over X's dims padded to Out's rank.
#include <algorithm>
#include <cstring>

#include "index_map.h"
#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"
#include "reduction.h"
#include "tensor_copy.h"

namespace rill::math {
namespace {

// slice's box in Input: its corner and dims. A negative start or end counts from the end;
// both are clamped to [0, dim]; an end before its start gives an empty box.
struct Box {
  std::vector<int64_t> corner, dims;
};
Box SliceBox(KernelContext& ctx, const std::vector<int64_t>& in) {
  const std::vector<int64_t> axes = ctx.Attr<std::vector<int64_t>>("axes");
  const std::vector<int64_t> starts = IntsFromInputs(ctx, "StartsTensor", "StartsTensorList", "starts");
  const std::vector<int64_t> ends = IntsFromInputs(ctx, "EndsTensor", "EndsTensorList", "ends");
  if (starts.size() != axes.size() || ends.size() != axes.size()) {
    throw Error("axes " + DimsString(axes) + ", starts " + DimsString(starts) + " and ends " + DimsString(ends) +
                " must be as long as each other");
  }
  Box b{std::vector<int64_t>(in.size(), 0), in};
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = NormalizeAxis(axes[i], in.size(), "axes entry");
    const auto clamp = [&](int64_t v) { return std::min(std::max(v < 0 ? v + in[a] : v, int64_t{0}), in[a]); };
    const int64_t s = clamp(starts[i]), e = clamp(ends[i]);
    b.corner[a] = s;
    b.dims[a] = std::max<int64_t>(e - s, 0);
  }
  return b;
}

// Out's dims: the box's, without the decrease_axis dims (each must be 1).
std::vector<int64_t> SliceOutDims(KernelContext& ctx, const Box& b) {
  std::vector<bool> drop(b.dims.size(), false);
  for (int64_t axis : ctx.Attr<std::vector<int64_t>>("decrease_axis")) {
    const size_t a = NormalizeAxis(axis, b.dims.size(), "decrease_axis entry");
    if (b.dims[a] != 1)
      throw Error("decrease_axis " + std::to_string(axis) + ": the slice is " + std::to_string(b.dims[a]) +
                  " long there, not 1");
    drop[a] = true;
  }
  std::vector<int64_t> out;
  for (size_t k = 0; k < b.dims.size(); ++k) {
    if (!drop[k]) out.push_back(b.dims[k]);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

// slice of a tensor array, along its one axis (axes [0]): Out = the entries in the range,
// copied; Out@GRAD's entries go back there, zeros like Input's elsewhere.
void SliceArray(KernelContext& ctx, Variable in) {
  if (!ctx.Attr<std::vector<int64_t>>("decrease_axis").empty()) {
    throw Error("a slice of a tensor array keeps its axis: decrease_axis must be empty");
  }
  const Box b = SliceBox(ctx, {static_cast<int64_t>(in.TensorArraySize())});
  Variable out = ctx.OutputVar("Out");
  out.ResizeTensorArray(static_cast<size_t>(b.dims[0]));
  for (int64_t k = 0; k < b.dims[0]; ++k) {
    CopyTensor(in.TensorArrayAt(static_cast<size_t>(b.corner[0] + k)), out.TensorArrayAt(static_cast<size_t>(k)));
  }
}
void SliceArrayGrad(KernelContext& ctx, Variable in) {
  const size_t n = in.TensorArraySize();
  const Box b = SliceBox(ctx, {static_cast<int64_t>(n)});
  Variable g = ctx.InputVar("Out@GRAD");
  Variable dx = ctx.OutputVar("Input@GRAD");
  dx.ResizeTensorArray(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t o = static_cast<int64_t>(k) - b.corner[0];
    const bool inside = o >= 0 && o < b.dims[0] && g.IsTensorArray() && static_cast<size_t>(o) < g.TensorArraySize() &&
                        g.TensorArrayAt(static_cast<size_t>(o)).initialized();
    if (inside) {
      CopyTensor(g.TensorArrayAt(static_cast<size_t>(o)), dx.TensorArrayAt(k));
    } else if (in.TensorArrayAt(k).initialized()) {
      ZerosLike(in.TensorArrayAt(k), dx.TensorArrayAt(k));
    }
  }
}

// Output "Out" (out_dims: b's dims, or those without some 1s) = box b of input `in_slot`,
// any dtype, row by row.
void WriteBox(KernelContext& ctx, const char* in_slot, const Box& b, const std::vector<int64_t>& out_dims) {
  Tensor in = ctx.Input(in_slot);
  const std::vector<int64_t> d = in.dims();
  const int64_t size = static_cast<int64_t>(DataTypeSize(in.dtype()));
  const char* pin = static_cast<const char*>(in.raw_data());
  WriteOutputBytes(ctx, "Out", {in_slot}, in.dtype(), out_dims, [&](char* po) {
    ParallelForEachMappedRun(
        b.dims, d, [&b](size_t k, int64_t i) { return b.corner[k] + i; },
        2.0 * static_cast<double>(size * Product(b.dims, 0, b.dims.size())),
        [&](int64_t o, int64_t i, int64_t n) { CopyBytes(po + o * size, pin + i * size, n * size); });
  });
}

// Output `dx_slot`, shaped d: zeros, with the gradient `g` of box b in the box.
template <class T>
void WriteBoxGrad(KernelContext& ctx, Tensor g, const Box& b, const std::vector<int64_t>& d, const char* dx_slot) {
  if (g.numel() != Product(b.dims, 0, b.dims.size())) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " does not hold the " + DimsString(b.dims) + " box's elements");
  }
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>(dx_slot, d);
  ParallelFill(dx, Product(d, 0, d.size()), T(0));
  // The box's elements are distinct elements of dx: its rows may be written concurrently.
  ParallelForEachMappedRun(
      b.dims, d, [&b](size_t k, int64_t i) { return b.corner[k] + i; },
      2.0 * sizeof(T) * static_cast<double>(g.numel()),
      [&](int64_t o, int64_t i, int64_t n) { std::copy(pg + o, pg + o + n, dx + i); });
}

void Slice(KernelContext& ctx) {
  if (Variable v = ctx.InputVar("Input"); v.IsTensorArray()) return SliceArray(ctx, v);
  const Box b = SliceBox(ctx, ctx.Input("Input").dims());
  WriteBox(ctx, "Input", b, SliceOutDims(ctx, b));
}

template <class T> void SliceGrad(KernelContext& ctx) {
  if (Variable v = ctx.InputVar("Input"); v.IsTensorArray()) return SliceArrayGrad(ctx, v);
  const std::vector<int64_t> d = ctx.Input("Input").dims();
  WriteBoxGrad<T>(ctx, ctx.Input("Out@GRAD"), SliceBox(ctx, d), d, "Input@GRAD");
}

// crop's box in X, of dims `dims`: its corner from the Offsets input (1-D int32/int64) or
// the offsets attribute (one per dim of X; none: X's first element), which must keep the
// box inside X.
Box CropBox(KernelContext& ctx, const std::vector<int64_t>& x, std::vector<int64_t> dims) {
  if (ctx.HasInput("Offsets") && !ctx.Attr<std::vector<int64_t>>("offsets").empty()) {
    throw Error("offsets come from the Offsets input or the attribute, not both");
  }
  std::vector<int64_t> corner = IntsFromInputs(ctx, "Offsets", nullptr, "offsets");
  if (corner.empty()) corner.assign(x.size(), 0);
  if (corner.size() != x.size() || dims.size() != x.size()) {
    throw Error("offsets " + DimsString(corner) + " and the crop's shape " + DimsString(dims) +
                " must have one entry per dim of X " + DimsString(x));
  }
  for (size_t k = 0; k < x.size(); ++k) {
    if (corner[k] < 0 || dims[k] < 0 || corner[k] + dims[k] > x[k]) {
      throw Error("a crop of shape " + DimsString(dims) + " at offsets " + DimsString(corner) + " does not fit in X " +
                  DimsString(x));
    }
  }
  return Box{corner, dims};
}

// crop's dims: Y's, or the shape attribute's (-1 first: X's first dim).
std::vector<int64_t> CropDims(KernelContext& ctx, const std::vector<int64_t>& x) {
  if (ctx.HasInput("Y")) return ctx.Input("Y").dims();
  std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  if (!shape.empty() && shape[0] == -1 && !x.empty()) shape[0] = x[0];
  return shape;
}

void Crop(KernelContext& ctx) {
  const std::vector<int64_t> d = ctx.Input("X").dims();
  const Box b = CropBox(ctx, d, CropDims(ctx, d));
  WriteBox(ctx, "X", b, b.dims);
}

template <class T> void CropGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const std::vector<int64_t> d = ctx.Input("X").dims();
  Tensor g = ctx.Input("Out@GRAD");
  WriteBoxGrad<T>(ctx, g, CropBox(ctx, d, g.dims()), d, "X@GRAD");
}

// expand's tiles per dim: the ExpandTimes input's values, or expand_times.
std::vector<int64_t> ExpandTimes(KernelContext& ctx, size_t rank) {
  std::vector<int64_t> times = IntsFromInputs(ctx, "ExpandTimes", "expand_times_tensor", "expand_times");
  if (times.size() != rank) {
    throw Error("expand_times " + DimsString(times) + " must have one entry per dim of X (rank " +
                std::to_string(rank) + ")");
  }
  for (int64_t t : times) {
    if (t < 1) throw Error("expand_times " + DimsString(times) + " must be positive");
  }
  return times;
}

// Out (of out_dims) = X (of dims, padded in front with 1s to Out's rank) at i mod dims.
void ExpandTo(KernelContext& ctx, const std::vector<int64_t>& out_dims) {
  Tensor x = ctx.Input("X");
  std::vector<int64_t> d = x.dims();
  d.insert(d.begin(), out_dims.size() - d.size(), 1);
  const int64_t size = static_cast<int64_t>(DataTypeSize(x.dtype()));
  if (CheckedCount(out_dims, static_cast<size_t>(size), "Out") == 0) {  // nothing to copy
    ctx.Output("Out").Allocate(x.dtype(), out_dims);
    return;
  }
  const char* px = static_cast<const char*>(x.raw_data());
  WriteOutputBytes(ctx, "Out", {"X"}, x.dtype(), out_dims, [&](char* po) {
    if (out_dims.empty()) {  // a scalar X, expanded by nothing
      std::memcpy(po, px, static_cast<size_t>(size));
      return;
    }
    // Out's rows split across the passes' team, each from X's row at its index mod X's
    // dims: that row copied to the row's front, then the front copied after itself until
    // the row is full (blocks moved, not elements; the row stays in cache).
    const size_t x_row = static_cast<size_t>(d.back() * size), o_row = static_cast<size_t>(out_dims.back() * size);
    // The row dims with a trailing 1 (one run per row), so that the team splits Out's rows:
    // without it the last row dim would be walked as runs of one "row" on one thread.
    std::vector<int64_t> out_rows(out_dims.begin(), out_dims.end() - 1), x_rows(d.begin(), d.end() - 1);
    out_rows.push_back(1), x_rows.push_back(1);
    const double bytes = static_cast<double>(o_row) * static_cast<double>(Product(out_rows, 0, out_rows.size()));
    ParallelForEachMappedRun(
        out_rows, x_rows, [&x_rows](size_t k, int64_t i) { return i % x_rows[k]; }, bytes,
        [&](int64_t o, int64_t from, int64_t n) {
          for (int64_t r = 0; r < n; ++r) {
            char* row = po + static_cast<size_t>(o + r) * o_row;
            CopyBytes(row, px + static_cast<size_t>(from + r) * x_row, x_row);
            for (size_t done = x_row; done < o_row;) {
              const size_t more = std::min(done, o_row - done);
              CopyBytes(row + done, row, more);
              done += more;
            }
          }
        });
  });
}

// X@GRAD[i] = the sum of Out@GRAD over every copy of i.
template <class T> void ExpandGradFrom(KernelContext& ctx) {
  const std::vector<int64_t> x_dims = ctx.Input("X").dims();
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> gd = g.dims();
  if (gd.size() < x_dims.size()) {
    throw Error("Out@GRAD " + DimsString(gd) + " has a lower rank than X " + DimsString(x_dims));
  }
  std::vector<int64_t> d = x_dims;
  d.insert(d.begin(), gd.size() - d.size(), 1);
  for (size_t k = 0; k < d.size(); ++k) {
    if (d[k] == 0 ? gd[k] != 0 : gd[k] % d[k] != 0) {
      throw Error("Out@GRAD " + DimsString(gd) + " is no expansion of X " + DimsString(x_dims));
    }
  }
  // Out@GRAD seen with each dim k of Out split into (copies, X's dim k): the sum over the
  // copies, a reduction with X's layout.
  std::vector<int64_t> split;
  std::vector<bool> reduced;
  for (size_t k = 0; k < d.size(); ++k) {
    if (d[k] != gd[k]) split.push_back(gd[k] / d[k]), reduced.push_back(true);
    split.push_back(d[k]), reduced.push_back(false);
  }
  const T* pg = g.data<T>();
  ReduceInto<Reduction::kSum>(pg, PlanReduction(split, reduced, false), ctx.AllocateOutput<T>("X@GRAD", x_dims));
}

void Expand(KernelContext& ctx) {
  const std::vector<int64_t> d = ctx.Input("X").dims();
  const std::vector<int64_t> times = ExpandTimes(ctx, d.size());
  std::vector<int64_t> out_dims(d.size());
  for (size_t k = 0; k < d.size(); ++k) out_dims[k] = CheckedProduct(d[k], times[k], "expand_times");
  ExpandTo(ctx, out_dims);
}

void Tile(KernelContext& ctx) {
  std::vector<int64_t> d = ctx.Input("X").dims();
  std::vector<int64_t> times = IntsFromInputs(ctx, "RepeatTimes", "repeat_times_tensor", "repeat_times");
  for (int64_t t : times) {
    if (t < 1) throw Error("repeat_times " + DimsString(times) + " must be positive");
  }
  if (times.size() < d.size()) times.insert(times.begin(), d.size() - times.size(), 1);
  d.insert(d.begin(), times.size() - d.size(), 1);
  for (size_t k = 0; k < d.size(); ++k) d[k] = CheckedProduct(d[k], times[k], "repeat_times");
  ExpandTo(ctx, d);
}

// X's dims broadcast to `shape` (aligned at the end; -1 keeps X's dim where X has one).
std::vector<int64_t> BroadcastTo(const std::vector<int64_t>& x, std::vector<int64_t> shape, const char* what) {
  if (shape.size() < x.size()) {
    throw Error(std::string(what) + " " + DimsString(shape) + " has fewer dims than X " + DimsString(x));
  }
  const size_t lead = shape.size() - x.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    const int64_t have = k < lead ? 1 : x[k - lead];
    if (shape[k] == -1 && k >= lead) shape[k] = have;
    if (shape[k] < 0 || (have != 1 && have != shape[k])) {
      throw Error(std::string(what) + " " + DimsString(shape) + " is no broadcast of X " + DimsString(x) +
                  " (each of X's dims, aligned at the end, must be 1 or equal)");
    }
  }
  return shape;
}

void ExpandV2(KernelContext& ctx) {
  const std::vector<int64_t> shape = IntsFromInputs(ctx, "Shape", "expand_shapes_tensor", "shape");
  ExpandTo(ctx, BroadcastTo(ctx.Input("X").dims(), shape, "shape"));
}

void ExpandAsV2(KernelContext& ctx) {
  const std::vector<int64_t> target =
      ctx.HasInput("Y") ? ctx.Input("Y").dims() : ctx.Attr<std::vector<int64_t>>("target_shape");
  ExpandTo(ctx, BroadcastTo(ctx.Input("X").dims(), target, "target_shape"));
}

}  // namespace

void RegisterSlice(Registrar& r) {
  const OpSchema slice =
      OpSchema("slice")
          .Doc(
              "Out = Input[starts:ends] along `axes` (negative counts from the end; clamped to the dim), the "
              "decrease_axis dims (each of length 1) removed. starts and ends may come as tensors instead. A tensor "
              "array Input is sliced along its entries (axes [0]), into a tensor array.")
          .Input("Input", "the tensor, or a tensor array")
          .Input("StartsTensor", "starts, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("EndsTensor", "ends, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("StartsTensorList", "starts, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("EndsTensorList", "ends, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("Out", "the slice")
          .Attr("axes", std::vector<int64_t>{}, "the dims sliced")
          .Attr("starts", std::vector<int64_t>{}, "where each slice starts")
          .Attr("ends", std::vector<int64_t>{}, "where each slice ends (exclusive)")
          .Attr("decrease_axis", std::vector<int64_t>{}, "dims of length 1 to remove from Out")
          .Attr("infer_flags", std::vector<int64_t>{}, "informational (Fluid's shape inference)")
          .KernelDtypeFrom("Input")
          .Grad("slice_grad", "Input,StartsTensor,EndsTensor,StartsTensorList,EndsTensorList,Out@GRAD", "Input");
  r.Op(slice);
  r.Op(slice.MakeGradSchema());
  r.Kernel("slice", RILL_CPU, RILL_ANY_DTYPE, &Slice);
  RegisterCpu<float, double>(r, "slice_grad", [](auto t) { return &SliceGrad<decltype(t)>; });

  const OpSchema crop =
      OpSchema("crop")
          .Doc(
              "Out = the box of X at `offsets` (or the Offsets input) with Y's dims (or `shape`'s, a first -1 taking "
              "X's first dim); the box must lie inside X.")
          .Input("X", "the tensor")
          .Input("Y", "the tensor whose dims Out takes", RILL_SLOT_OPTIONAL)
          .Input("Offsets", "the offsets, 1-D int32/int64 with one per dim of X", RILL_SLOT_OPTIONAL)
          .Output("Out", "the crop")
          .Attr("offsets", std::vector<int64_t>{}, "the box's corner, one per dim of X (empty: all 0, or the input's)")
          .Attr("shape", std::vector<int64_t>{}, "Out's dims, without Y")
          .KernelDtypeFrom("X")
          .Grad("crop_grad", "X,Y,Offsets,Out@GRAD", "X");
  r.Op(crop);
  r.Op(crop.MakeGradSchema());
  r.Kernel("crop", RILL_CPU, RILL_ANY_DTYPE, &Crop);
  RegisterCpu<float, double>(r, "crop_grad", [](auto t) { return &CropGrad<decltype(t)>; });

  const OpSchema expand = OpSchema("expand")
                              .Doc("Out = X tiled expand_times[k] times along each dim k.")
                              .Input("X", "the tensor")
                              .Input("ExpandTimes", "expand_times, 1-D int32/int64", RILL_SLOT_OPTIONAL)
                              .Input("expand_times_tensor", "expand_times, one 1-element tensor each",
                                     RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
                              .Output("Out", "the tiled tensor")
                              .Attr("expand_times", std::vector<int64_t>{}, "tiles per dim")
                              .KernelDtypeFrom("X")
                              .Grad("expand_grad", "X,Out@GRAD", "X");
  const OpSchema tile =
      OpSchema("tile")
          .Doc(
              "Out = X tiled repeat_times[k] times along each dim k, X's dims padded in front with 1s to "
              "repeat_times' length (or repeat_times to X's rank).")
          .Input("X", "the tensor")
          .Input("RepeatTimes", "repeat_times, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("repeat_times_tensor", "repeat_times, one 1-element tensor each",
                 RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("Out", "the tiled tensor")
          .Attr("repeat_times", std::vector<int64_t>{}, "tiles per dim (positive)")
          .KernelDtypeFrom("X")
          .Grad("tile_grad", "X,Out@GRAD", "X");
  const OpSchema expand_v2 =
      OpSchema("expand_v2")
          .Doc("Out = X broadcast to `shape`: X's dims, aligned at the end, each 1 or equal to shape's; -1 keeps X's.")
          .Input("X", "the tensor")
          .Input("Shape", "shape, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("expand_shapes_tensor", "shape, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("Out", "the broadcast tensor")
          .Attr("shape", std::vector<int64_t>{}, "Out's dims")
          .KernelDtypeFrom("X")
          .Grad("expand_v2_grad", "X,Out@GRAD", "X");
  const OpSchema expand_as_v2 = OpSchema("expand_as_v2")
                                    .Doc("Out = X broadcast to target_shape (or to Y's dims, when given).")
                                    .Input("X", "the tensor")
                                    .Input("Y", "the tensor whose dims Out takes", RILL_SLOT_OPTIONAL)
                                    .Output("Out", "the broadcast tensor")
                                    .Attr("target_shape", std::vector<int64_t>{}, "Out's dims")
                                    .KernelDtypeFrom("X")
                                    .Grad("expand_as_v2_grad", "X,Out@GRAD", "X");
  const struct {
    const char* type;
    const OpSchema& schema;
    void (*kernel)(KernelContext&);
  } family[] = {{"expand", expand, &Expand},
                {"tile", tile, &Tile},
                {"expand_v2", expand_v2, &ExpandV2},
                {"expand_as_v2", expand_as_v2, &ExpandAsV2}};
  for (const auto& op : family) {
    r.Op(op.schema);
    r.Op(op.schema.MakeGradSchema());
    r.Kernel(op.type, RILL_CPU, RILL_ANY_DTYPE, op.kernel);
    RegisterCpu<float, double>(r, (std::string(op.type) + "_grad").c_str(),
                               [](auto t) { return &ExpandGradFrom<decltype(t)>; });
  }
}

}  // namespace rill::math
