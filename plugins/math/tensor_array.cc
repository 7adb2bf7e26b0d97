// Fluid's LoDTensorArray ops: write_to_array (Out[I] = X, the array growing to hold it),
// read_from_array (Out = X[I]), lod_array_length, and tensor_array_to_tensor (the entries
// joined along an axis, or stacked on a new one), with their gradients.
//
// The entries are copied whole, bytes and LoD, whatever their dtype: these kernels are
// registered for any dtype and choose none. Gradients keep the array's shape: the
// gradient of an array is an array whose entry i is the gradient of entry i, and an entry
// no gradient reached reads as zeros shaped like the forward entry.
#include "memory_loops.h"
#include "ops.h"
#include "shape.h"
#include "tensor_copy.h"

namespace rill::math {
namespace {

// The index I, a one-element integer tensor, checked non-negative.
size_t IndexOf(KernelContext& ctx) {
  const double i = ScalarOf(ctx.Input("I"), "I");
  if (i < 0 || i != static_cast<double>(static_cast<int64_t>(i))) {
    throw Error("I must be a non-negative integer, got " + std::to_string(i));
  }
  return static_cast<size_t>(i);
}

// The array held by input `slot`, checked to be one.
Variable ArrayInput(KernelContext& ctx, const char* slot) {
  Variable v = ctx.InputVar(slot);
  if (!v.IsTensorArray()) {
    throw Error(std::string("input ") + slot + " ('" + ctx.op().InputName(slot) + "') holds " +
                (v.initialized() ? "a value that is not a tensor array" : "nothing yet") + ", not a tensor array");
  }
  return v;
}

void WriteToArray(KernelContext& ctx) {
  const size_t i = IndexOf(ctx);
  Tensor x = ctx.Input("X");
  Variable out = ctx.OutputVar("Out");
  if (out.TensorArraySize() <= i) out.ResizeTensorArray(i + 1);
  CopyTensor(x, out.TensorArrayAt(i));
}

// X@GRAD = Out@GRAD[I], or zeros like X where no gradient reached that entry.
void WriteToArrayGrad(KernelContext& ctx) {
  const size_t i = IndexOf(ctx);
  Tensor x_grad = ctx.Output("X@GRAD");
  if (ctx.HasInput("Out@GRAD")) {
    Variable g = ctx.InputVar("Out@GRAD");
    if (g.IsTensorArray() && i < g.TensorArraySize()) {
      Tensor entry = g.TensorArrayAt(i);
      if (entry.initialized()) return CopyTensor(entry, x_grad);
    }
  }
  ZerosLike(ctx.Input("X"), x_grad);
}

void ReadFromArray(KernelContext& ctx) {
  const size_t i = IndexOf(ctx);
  Variable x = ArrayInput(ctx, "X");
  const size_t size = x.TensorArraySize();
  if (i >= size) {
    throw Error("I is " + std::to_string(i) + ", but X ('" + ctx.op().InputName("X") + "') holds " +
                std::to_string(size) + " entries");
  }
  Tensor entry = x.TensorArrayAt(i);
  if (!entry.initialized()) throw Error("entry " + std::to_string(i) + " of X was never written");
  CopyTensor(entry, ctx.Output("Out"));
}

// X@GRAD: an array as long as X, entry I = Out@GRAD, the others empty (no gradient reached
// them: a loop's steps each read one entry, and their gradients are summed entry by entry).
void ReadFromArrayGrad(KernelContext& ctx) {
  const size_t i = IndexOf(ctx);
  Variable x = ArrayInput(ctx, "X");
  Variable x_grad = ctx.OutputVar("X@GRAD");
  x_grad.ResizeTensorArray(0);
  x_grad.ResizeTensorArray(x.TensorArraySize());
  CopyTensor(ctx.Input("Out@GRAD"), x_grad.TensorArrayAt(i));
}

// An array never written (its variable still empty) has length 0.
void LodArrayLength(KernelContext& ctx) {
  Variable x = ctx.InputVar("X");
  const int64_t size = x.initialized() ? static_cast<int64_t>(ArrayInput(ctx, "X").TensorArraySize()) : 0;
  *ctx.Output("Out").Allocate<int64_t>({1}) = size;
}

// The entries of X, all written, of one dtype, and of one shape but along `axis` (stacked:
// of one shape).
std::vector<Tensor> JoinedEntries(KernelContext& ctx, bool stack, size_t* axis) {
  Variable x = ArrayInput(ctx, "X");
  std::vector<Tensor> entries;
  for (size_t k = 0; k < x.TensorArraySize(); ++k) {
    entries.push_back(x.TensorArrayAt(k));
    if (!entries.back().initialized()) throw Error("entry " + std::to_string(k) + " of X was never written");
  }
  if (entries.empty()) throw Error("X ('" + ctx.op().InputName("X") + "') holds no entries to join");
  const std::vector<int64_t> first = entries[0].dims();
  *axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), first.size() + (stack ? 1 : 0));
  for (size_t k = 1; k < entries.size(); ++k) {
    std::vector<int64_t> dims = entries[k].dims();
    bool same = entries[k].dtype() == entries[0].dtype() && dims.size() == first.size();
    for (size_t d = 0; same && d < dims.size(); ++d) same = dims[d] == first[d] || (!stack && d == *axis);
    if (!same) {
      throw Error("entry " + std::to_string(k) + " of X is " + DataTypeName(entries[k].dtype()) + " " +
                  DimsString(dims) + ", entry 0 " + DataTypeName(entries[0].dtype()) + " " + DimsString(first) +
                  (stack ? " (stacked entries must have one shape)" : " (joined entries differ only along axis)"));
    }
  }
  return entries;
}

// Bytes of each entry before `axis` (the outer count) and from it on (one outer slice).
void Split(const std::vector<int64_t>& dims, size_t axis, size_t elem, size_t* outer, size_t* inner) {
  *outer = 1;
  for (size_t d = 0; d < axis && d < dims.size(); ++d) *outer *= static_cast<size_t>(dims[d]);
  *inner = elem;
  for (size_t d = axis; d < dims.size(); ++d) *inner *= static_cast<size_t>(dims[d]);
}

// Out = the entries joined along axis (use_stack: stacked on a new axis); OutIndex = each
// entry's size along it (1 each when stacked).
void TensorArrayToTensor(KernelContext& ctx) {
  const bool stack = ctx.Attr<bool>("use_stack");
  size_t axis = 0;
  const std::vector<Tensor> entries = JoinedEntries(ctx, stack, &axis);
  std::vector<int64_t> out_dims = entries[0].dims();
  std::vector<int32_t> sizes;
  if (stack) {
    out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(entries.size()));
    sizes.assign(entries.size(), 1);
  } else {
    out_dims[axis] = 0;
    for (const Tensor& e : entries) {
      out_dims[axis] += e.dims()[axis];
      sizes.push_back(static_cast<int32_t>(e.dims()[axis]));
    }
  }
  const size_t elem = DataTypeSize(entries[0].dtype());
  Tensor out = ctx.Output("Out");
  char* po = static_cast<char*>(out.Allocate(entries[0].dtype(), out_dims));
  size_t outer = 0, row = 0;  // one outer slice of Out, in bytes
  Split(out_dims, axis, elem, &outer, &row);
  size_t offset = 0;  // where the current entry's slice starts within Out's slice
  for (Tensor e : entries) {
    size_t e_outer = 0, e_inner = 0;
    Split(e.dims(), axis, elem, &e_outer, &e_inner);
    const char* pe = static_cast<const char*>(e.raw_data());
    for (size_t o = 0; o < outer; ++o) CopyBytes(po + o * row + offset, pe + o * e_inner, e_inner);
    offset += e_inner;
  }
  if (ctx.HasOutput("OutIndex")) {
    int32_t* pi = ctx.Output("OutIndex").Allocate<int32_t>({static_cast<int64_t>(sizes.size())});
    std::copy(sizes.begin(), sizes.end(), pi);
  }
}

// X@GRAD: entry k = Out@GRAD's part that came from entry k.
void TensorArrayToTensorGrad(KernelContext& ctx) {
  const bool stack = ctx.Attr<bool>("use_stack");
  size_t axis = 0;
  const std::vector<Tensor> entries = JoinedEntries(ctx, stack, &axis);
  Tensor g = ctx.Input("Out@GRAD");
  const size_t elem = DataTypeSize(g.dtype());
  size_t outer = 0, row = 0;
  Split(g.dims(), axis, elem, &outer, &row);
  Variable x_grad = ctx.OutputVar("X@GRAD");
  x_grad.ResizeTensorArray(entries.size());
  const char* pg = static_cast<const char*>(g.raw_data());
  size_t offset = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    size_t e_outer = 0, e_inner = 0;
    Split(entries[k].dims(), axis, elem, &e_outer, &e_inner);
    char* pe = static_cast<char*>(x_grad.TensorArrayAt(k).Allocate(g.dtype(), entries[k].dims()));
    for (size_t o = 0; o < outer; ++o) CopyBytes(pe + o * e_inner, pg + o * row + offset, e_inner);
    offset += e_inner;
  }
}

}  // namespace

void RegisterTensorArray(Registrar& r) {
  // write_to_array and read_from_array: X, I -> Out, each with its gradient.
  const auto indexed = [&r](const char* type, const char* doc, const char* x, const char* out, KernelFn forward,
                            KernelFn backward) {
    const OpSchema op = OpSchema(type)
                            .Doc(doc)
                            .Input("X", x)
                            .Input("I", "[1] integer: the entry")
                            .Output("Out", out)
                            .KernelDtypeFrom("")
                            .Grad(std::string(type) + "_grad", "X,I,Out@GRAD", "X");
    r.Op(op);
    r.Op(op.MakeGradSchema().KernelDtypeFrom(""));
    r.Kernel(type, RILL_CPU, RILL_ANY_DTYPE, forward);
    r.Kernel((std::string(type) + "_grad").c_str(), RILL_CPU, RILL_ANY_DTYPE, backward);
  };
  indexed("write_to_array", "Out[I] = a copy of X (dtype, shape, LoD); Out, a tensor array, grows to hold entry I.",
          "the tensor written", "the tensor array", &WriteToArray, &WriteToArrayGrad);
  indexed("read_from_array",
          "Out = a copy of entry I of the tensor array X; an error past X's end or for an entry never written.",
          "the tensor array", "the entry's copy", &ReadFromArray, &ReadFromArrayGrad);

  r.Op(OpSchema("lod_array_length")
           .Doc("Out = [1] int64: the number of entries of the tensor array X.")
           .Input("X", "the tensor array")
           .Output("Out", "its length")
           .KernelDtypeFrom(""));
  r.Kernel("lod_array_length", RILL_CPU, RILL_ANY_DTYPE, &LodArrayLength);

  const OpSchema to_tensor =
      OpSchema("tensor_array_to_tensor")
          .Doc(
              "Out = the entries of the tensor array X joined along axis (use_stack: stacked on a new axis there); "
              "OutIndex = each entry's size along axis.")
          .Input("X", "the tensor array")
          .Output("Out", "the joined tensor")
          .Output("OutIndex", "int32 [entries]: each entry's size along axis", RILL_SLOT_OPTIONAL)
          .Attr("axis", int64_t{0}, "the axis joined along (stacked at)")
          .Attr("use_stack", false, "stack the entries (one shape) instead of joining them")
          .KernelDtypeFrom("")
          .Grad("tensor_array_to_tensor_grad", "X,Out@GRAD", "X");
  r.Op(to_tensor);
  r.Op(to_tensor.MakeGradSchema().KernelDtypeFrom(""));
  r.Kernel("tensor_array_to_tensor", RILL_CPU, RILL_ANY_DTYPE, &TensorArrayToTensor);
  r.Kernel("tensor_array_to_tensor_grad", RILL_CPU, RILL_ANY_DTYPE, &TensorArrayToTensorGrad);
}

}  // namespace rill::math
