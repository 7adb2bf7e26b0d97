// Ops that give X's elements a new shape: reshape2, flatten2, flatten_contiguous_range,
// squeeze2, unsqueeze2 (a view of X's memory with new dims) and transpose2 (dims permuted,
// elements moved), any dtype, with Fluid's contracts; and their gradients. Each also writes
// Fluid's XShape output when the program names one: dims [0] + X's dims, no elements
// (Paddle's gradients read X's shape from it; ours read X's dims). Fluid 1.x's first forms,
// reshape, flatten, squeeze, unsqueeze and transpose, are the same ops without XShape.

#include "kernels.h"
#include "ops.h"
#include "permute.h"
#include "shape.h"

namespace rill::math {
namespace {

// Out = input `in_slot`'s elements with `dims` (same element count): a view of its memory,
// as Fluid's reshape shares its input's. Out may be that input.
void ViewWithDims(KernelContext& ctx, const char* in_slot, const char* out_slot, const std::vector<int64_t>& dims) {
  Tensor x = ctx.Input(in_slot);
  if (Product(dims, 0, dims.size()) != x.numel()) {
    throw Error("cannot give " + DimsString(x.dims()) + " (" + std::to_string(x.numel()) + " elements) the shape " +
                DimsString(dims));
  }
  ctx.Output(out_slot).ShareWith(x, dims);
}

void WriteXShape(KernelContext& ctx, const Tensor& x) {
  if (!ctx.HasOutput("XShape")) return;
  std::vector<int64_t> dims{0};
  const std::vector<int64_t> xd = x.dims();
  dims.insert(dims.end(), xd.begin(), xd.end());
  ctx.Output("XShape").Allocate(x.dtype(), dims);
}

// reshape2's target: Shape's values, else ShapeTensor's (one value each), else the
// `shape` attribute; 0 keeps X's dim at that index, one -1 takes what is left.
std::vector<int64_t> ReshapeDims(KernelContext& ctx, const Tensor& x) {
  std::vector<int64_t> shape;
  if (ctx.HasInput("Shape")) {
    shape = IntsOf(ctx.Input("Shape"), "reshape2 Shape");
  } else if (ctx.HasInput("ShapeTensor")) {
    for (size_t i = 0; i < ctx.op().InputCount("ShapeTensor"); ++i) {
      const std::vector<int64_t> one = IntsOf(ctx.Input("ShapeTensor", i), "reshape2 ShapeTensor");
      if (one.size() != 1)
        throw Error("ShapeTensor[" + std::to_string(i) + "] holds " + std::to_string(one.size()) + " values, not 1");
      shape.push_back(one[0]);
    }
  } else {
    shape = ctx.Attr<std::vector<int64_t>>("shape");
  }
  const std::vector<int64_t> xd = x.dims();
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      if (i >= xd.size())
        throw Error("shape " + DimsString(shape) + ": a 0 at index " + std::to_string(i) + " is past X's rank " +
                    std::to_string(xd.size()));
      shape[i] = xd[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) throw Error("shape " + DimsString(shape) + " has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw Error("shape " + DimsString(shape) + " has a negative dimension other than -1");
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      throw Error("cannot reshape " + DimsString(xd) + " (" + std::to_string(x.numel()) + " elements) to " +
                  DimsString(shape));
    }
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  }
  return shape;
}

void Reshape2(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> dims = ReshapeDims(ctx, x);
  WriteXShape(ctx, x);
  ViewWithDims(ctx, "X", "Out", dims);
}

// flatten2: [prod(dims[:axis]), prod(dims[axis:])].
void Flatten2(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> xd = x.dims();
  const int64_t axis = ctx.Attr<int64_t>("axis");
  if (axis < 0 || axis > static_cast<int64_t>(xd.size())) {
    throw Error("axis " + std::to_string(axis) + " is out of range [0, " + std::to_string(xd.size()) + "]");
  }
  const size_t a = static_cast<size_t>(axis);
  WriteXShape(ctx, x);
  ViewWithDims(ctx, "X", "Out", {Product(xd, 0, a), Product(xd, a, xd.size())});
}

// flatten_contiguous_range: dims start_axis..stop_axis become one.
void FlattenRange(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> xd = x.dims();
  const size_t rank = std::max<size_t>(xd.size(), 1);
  const size_t start = NormalizeAxis(ctx.Attr<int64_t>("start_axis"), rank, "start_axis");
  const size_t stop = NormalizeAxis(ctx.Attr<int64_t>("stop_axis"), rank, "stop_axis");
  if (start > stop) throw Error("start_axis " + std::to_string(start) + " is after stop_axis " + std::to_string(stop));
  std::vector<int64_t> dims(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(std::min(start, xd.size())));
  dims.push_back(xd.empty() ? 1 : Product(xd, start, stop + 1));
  if (stop + 1 < xd.size()) dims.insert(dims.end(), xd.begin() + static_cast<std::ptrdiff_t>(stop + 1), xd.end());
  WriteXShape(ctx, x);
  ViewWithDims(ctx, "X", "Out", dims);
}

// squeeze2: the listed dims (all of size 1 when none is listed) removed; a listed dim of
// another size stays, as in Fluid.
void Squeeze2(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> xd = x.dims();
  std::vector<bool> drop(xd.size(), false);
  const std::vector<int64_t> axes = ctx.Attr<std::vector<int64_t>>("axes");
  for (int64_t axis : axes) {
    const size_t a = NormalizeAxis(axis, xd.size(), "axes entry");
    drop[a] = xd[a] == 1;
  }
  if (axes.empty()) {
    for (size_t i = 0; i < xd.size(); ++i) drop[i] = xd[i] == 1;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (!drop[i]) dims.push_back(xd[i]);
  }
  WriteXShape(ctx, x);
  ViewWithDims(ctx, "X", "Out", dims);
}

// unsqueeze2: a dim of 1 inserted at each of `axes`, in order, each against the rank
// reached so far (negative counts from the end of that rank plus one).
void Unsqueeze2(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  std::vector<int64_t> dims = x.dims();
  for (int64_t axis : IntsFromInputs(ctx, "AxesTensor", "AxesTensorList", "axes")) {
    const size_t a = NormalizeAxis(axis, dims.size() + 1, "axes entry");
    dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(a), 1);
  }
  WriteXShape(ctx, x);
  ViewWithDims(ctx, "X", "Out", dims);
}

// X@GRAD = Out@GRAD with X's dims.
void ReshapeGrad(KernelContext& ctx) { ViewWithDims(ctx, "Out@GRAD", "X@GRAD", ctx.Input("X").dims()); }

// `axis` checked to be a permutation of [0, rank).
std::vector<size_t> Permutation(const std::vector<int64_t>& axis, size_t rank) {
  if (axis.size() != rank) {
    throw Error("axis " + DimsString(axis) + " has " + std::to_string(axis.size()) + " entries for X of rank " +
                std::to_string(rank));
  }
  std::vector<size_t> perm(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    const size_t a = NormalizeAxis(axis[i], rank, "axis entry");
    if (seen[a]) throw Error("axis " + DimsString(axis) + " is not a permutation: " + std::to_string(a) + " repeats");
    seen[a] = true;
    perm[i] = a;
  }
  return perm;
}

// Out = input `in_slot` with its dims permuted. Out may be that input.
void TransposeInto(KernelContext& ctx, const char* in_slot, const char* out_slot, const std::vector<size_t>& perm) {
  Tensor x = ctx.Input(in_slot);
  const std::vector<int64_t> xd = x.dims();
  std::vector<int64_t> dims(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) dims[k] = xd[perm[k]];
  const size_t size = DataTypeSize(x.dtype());
  const auto* in = static_cast<const char*>(x.raw_data());
  WriteOutputBytes(ctx, out_slot, {in_slot}, x.dtype(), dims, [&](char* out) {
    if (x.numel() > 0) Permute(in, out, xd, perm, size);
  });
}

void Transpose2(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<size_t> perm = Permutation(ctx.Attr<std::vector<int64_t>>("axis"), x.ndim());
  WriteXShape(ctx, x);
  TransposeInto(ctx, "X", "Out", perm);
}

// X@GRAD = Out@GRAD under the inverse permutation.
void Transpose2Grad(KernelContext& ctx) {
  const std::vector<size_t> perm = Permutation(ctx.Attr<std::vector<int64_t>>("axis"), ctx.Input("X").ndim());
  std::vector<size_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = k;
  TransposeInto(ctx, "Out@GRAD", "X@GRAD", inverse);
}

// Registers `type` (X -> Out, XShape) and `type`_grad, both for every dtype.
void AddShapeOp(Registrar& r, const std::string& type, OpSchema schema, KernelFn forward, KernelFn backward) {
  schema.Input("X", "input")
      .Output("Out", "X's elements in the new shape")
      .Output("XShape", "[0] + X's dims, no elements (Fluid's, for its gradient)", RILL_SLOT_OPTIONAL)
      .Grad(type + "_grad", "X,Out@GRAD", "X");
  r.Op(schema);
  OpSchema grad = schema.MakeGradSchema();
  r.Op(grad.KernelDtypeFrom(""));
  r.Kernel(type.c_str(), RILL_CPU, RILL_ANY_DTYPE, forward);
  r.Kernel((type + "_grad").c_str(), RILL_CPU, RILL_ANY_DTYPE, backward);
}

}  // namespace

void RegisterReshape(Registrar& r) {
  // Each op in its first form (Fluid 1.x's, which programs saved then hold) and its second.
  for (const std::string version : {"", "2"}) {
    AddShapeOp(r, "reshape" + version,
               OpSchema("reshape" + version)
                   .Doc("Out = X's elements in the shape Shape, ShapeTensor or `shape` gives (first present wins); "
                        "a 0 keeps X's dim there, one -1 takes what is left.")
                   .Input("Shape", "the shape, a 1-D int32/int64 tensor", RILL_SLOT_OPTIONAL)
                   .Input("ShapeTensor", "the shape, one 1-element int32/int64 tensor per dim",
                          RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
                   .Attr("shape", std::vector<int64_t>{}, "the shape"),
               &Reshape2, &ReshapeGrad);
    AddShapeOp(r, "flatten" + version,
               OpSchema("flatten" + version)
                   .Doc("Out = X as a matrix: [prod(dims[:axis]), prod(dims[axis:])].")
                   .Attr("axis", int64_t{1}, "where the columns' dims begin (0 to rank)"),
               &Flatten2, &ReshapeGrad);
    AddShapeOp(r, "squeeze" + version,
               OpSchema("squeeze" + version)
                   .Doc("Out = X without the dims of size 1 that `axes` lists (every one when empty).")
                   .Attr("axes", std::vector<int64_t>{}, "the dims to remove (negative from the end)"),
               &Squeeze2, &ReshapeGrad);
    AddShapeOp(r, "unsqueeze" + version,
               OpSchema("unsqueeze" + version)
                   .Doc("Out = X with a dim of 1 inserted at each of `axes` (or AxesTensor's, or AxesTensorList's), "
                        "in order.")
                   .Input("AxesTensor", "the axes, a 1-D int32/int64 tensor", RILL_SLOT_OPTIONAL)
                   .Input("AxesTensorList", "the axes, one 1-element int32/int64 tensor each",
                          RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
                   .Attr("axes", std::vector<int64_t>{}, "where to insert (negative from the end)"),
               &Unsqueeze2, &ReshapeGrad);
    AddShapeOp(r, "transpose" + version,
               OpSchema("transpose" + version)
                   .Doc("Out = X with its dims permuted: Out's dim k is X's dim axis[k].")
                   .Attr("axis", std::vector<int64_t>{}, "the permutation"),
               &Transpose2, &Transpose2Grad);
  }
  AddShapeOp(r, "flatten_contiguous_range",
             OpSchema("flatten_contiguous_range")
                 .Doc("Out = X with dims start_axis..stop_axis (negative from the end) made one.")
                 .Attr("start_axis", int64_t{1}, "the first dim flattened")
                 .Attr("stop_axis", int64_t{1}, "the last dim flattened"),
             &FlattenRange, &ReshapeGrad);
}

}  // namespace rill::math
