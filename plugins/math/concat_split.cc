// concat (X[0..n] joined along `axis`), split (X cut along `axis` into `num` equal parts
// or into `sections`) and stack (X[0..n], of one shape, joined along a new `axis`), and
// their gradients.
#include "broadcast.h"
#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"

namespace rill::math {
namespace {

// Out's `pre` rows, each the pieces of xs in order: piece k is chunk[k] elements of xs[k]'s
// row i. Pieces are copied on the passes' team.
template <class T>
void JoinRows(const std::vector<const T*>& xs, const std::vector<int64_t>& chunk, int64_t pre, T* out) {
  const auto n = static_cast<int64_t>(xs.size());
  std::vector<int64_t> offset(xs.size(), 0);
  for (size_t k = 1; k < xs.size(); ++k) offset[k] = offset[k - 1] + chunk[k - 1];
  const int64_t row = offset.empty() ? 0 : offset.back() + chunk.back();
  ParallelFor(pre * n, 2.0 * sizeof(T) * pre * row, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const int64_t i = p / n;
      const size_t k = static_cast<size_t>(p % n);
      CopyBytes(out + i * row + offset[k], xs[k] + i * chunk[k], sizeof(T) * static_cast<size_t>(chunk[k]));
    }
  });
}

// The inverse: outs[k]'s `pre` rows, its row i the chunk[k] elements from offset[k] of
// in's row i (`row` elements), for each k whose output is not null. Pieces are copied on the
// passes' team.
template <class T>
void SplitRows(const T* in, int64_t pre, int64_t row, const std::vector<T*>& outs, const std::vector<int64_t>& chunk,
               const std::vector<int64_t>& offset) {
  const auto n = static_cast<int64_t>(outs.size());
  ParallelFor(pre * n, 2.0 * sizeof(T) * pre * row, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const int64_t i = p / n;
      const size_t k = static_cast<size_t>(p % n);
      if (outs[k] == nullptr) continue;
      CopyBytes(outs[k] + i * chunk[k], in + i * row + offset[k], sizeof(T) * static_cast<size_t>(chunk[k]));
    }
  });
}

// Joins the tensors of input slot `in` along `axis` into output `out`.
template <class T> void ConcatInto(KernelContext& ctx, const char* in, const char* out_slot) {
  const size_t n = ctx.op().InputCount(in);
  std::vector<Tensor> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(ctx.Input(in, i));
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor& x : xs) dims.push_back(x.dims());
  const size_t axis = NormalizeAxis(ScalarFromInput<int64_t>(ctx, "AxisTensor", "axis"), dims[0].size());
  const std::vector<int64_t> out_dims = ConcatDims(dims, axis);
  const int64_t pre = Product(out_dims, 0, axis), post = Product(out_dims, axis + 1, out_dims.size());
  std::vector<const T*> data(n);
  std::vector<int64_t> chunk(n);
  for (size_t k = 0; k < n; ++k) data[k] = xs[k].data<T>(), chunk[k] = dims[k][axis] * post;
  // Joined along another dim, each row stays where it was: Out keeps the first X's
  // sequences, as Paddle's ShareLoD gives it.
  std::vector<std::vector<uint64_t>> lod = xs[0].lod();
  WriteOutput<T>(ctx, out_slot, {in}, out_dims, [&](T* out) { JoinRows(data, chunk, pre, out); });
  Tensor result = ctx.Output(out_slot);
  if (axis != 0) return result.set_lod(lod);
  // Joined along the first dim, sequences follow one another: when every X has a LoD of
  // the same depth, Out's joins them, each level's offsets moved past the ones before it
  // (Paddle's ConcatLoD).
  for (size_t i = 1; i < n && !lod.empty(); ++i) {
    const std::vector<std::vector<uint64_t>> next = xs[i].lod();
    if (next.size() != lod.size()) return;
    for (size_t level = 0; level < lod.size(); ++level) {
      if (next[level].empty() || lod[level].empty()) return;
      const uint64_t shift = lod[level].back();
      for (size_t k = 1; k < next[level].size(); ++k) lod[level].push_back(next[level][k] + shift);
    }
  }
  result.set_lod(lod);
}

template <class T> void Concat(KernelContext& ctx) { ConcatInto<T>(ctx, "X", "Out"); }
// split's gradient: the pieces' gradients joined back together.
template <class T> void SplitGrad(KernelContext& ctx) { ConcatInto<T>(ctx, "Out@GRAD", "X@GRAD"); }

template <class T> void Split(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const size_t axis = NormalizeAxis(ScalarFromInput<int64_t>(ctx, "AxisTensor", "axis"), d.size());
  const size_t outputs = ctx.op().OutputCount("Out");
  const std::vector<int64_t> sections = SplitSections(
      d, axis, IntsFromInputs(ctx, nullptr, "SectionsTensorList", "sections"), ctx.Attr<int64_t>("num"), outputs);
  const int64_t pre = Product(d, 0, axis), post = Product(d, axis + 1, d.size());
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  // An output may be X itself: then X is read from a copy.
  bool x_is_output = false;
  for (size_t o = 0; o < outputs; ++o) x_is_output |= ctx.OutputVar("Out", o).handle() == ctx.InputVar("X").handle();
  std::unique_ptr<T[]> copy;
  const T* in = x.data<T>();
  if (x_is_output) {
    copy = Scratch<T>(x.numel());
    ParallelCopy(in, copy.get(), static_cast<size_t>(x.numel()) * sizeof(T));
    in = copy.get();
  }
  std::vector<T*> po(outputs);
  std::vector<int64_t> chunk(outputs), offset(outputs);
  for (size_t o = 0, at = 0; o < outputs; at += static_cast<size_t>(chunk[o]), ++o) {
    std::vector<int64_t> od = d;
    od[axis] = sections[o];
    po[o] = ctx.Output("Out", o).Allocate<T>(od);
    chunk[o] = sections[o] * post;
    offset[o] = static_cast<int64_t>(at);
  }
  SplitRows(in, pre, d[axis] * post, po, chunk, offset);
  // Split along another dim, every piece keeps X's rows and so its sequences (Paddle's ShareLoD).
  if (axis == 0) return;
  for (size_t o = 0; o < outputs; ++o) ctx.Output("Out", o).set_lod(lod);
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled.
template <class T> void ConcatGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> gd = g.dims();
  const size_t axis = NormalizeAxis(ScalarFromInput<int64_t>(ctx, "AxisTensor", "axis"), gd.size());
  const int64_t pre = Product(gd, 0, axis), post = Product(gd, axis + 1, gd.size()), row = gd[axis] * post;
  const OpInfo op = ctx.op();
  const size_t inputs = op.InputCount("X");
  std::vector<T*> dx(inputs, nullptr);  // null: that input gets no gradient
  std::vector<int64_t> chunk(inputs), offset(inputs);
  for (size_t i = 0, at = 0; i < inputs; at += static_cast<size_t>(chunk[i]), ++i) {
    const std::vector<int64_t> xd = ctx.Input("X", i).dims();
    chunk[i] = xd[axis] * post;
    offset[i] = static_cast<int64_t>(at);
    if (i < op.OutputCount("X@GRAD") && op.OutputName("X@GRAD", i) != RILL_EMPTY_VAR_NAME) {
      dx[i] = ctx.Output("X@GRAD", i).Allocate<T>(xd);
    }
  }
  SplitRows(g.data<T>(), pre, row, dx, chunk, offset);
}

// stack: Y[a, k, b] = X[k][a, b], with a the dims before `axis` and b the rest.
template <class T> void Stack(KernelContext& ctx) {
  const size_t n = ctx.op().InputCount("X");
  const std::vector<int64_t> d = ctx.Input("X", 0).dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size() + 1);
  std::vector<int64_t> out_dims = d;
  out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(n));
  const int64_t pre = Product(d, 0, axis), post = Product(d, axis, d.size());
  // Stacking joins rows of `post` elements, one from each X in turn.
  std::vector<const T*> data(n);
  for (size_t k = 0; k < n; ++k) {
    Tensor x = ctx.Input("X", k);
    if (x.dims() != d)
      throw Error("X[" + std::to_string(k) + "] " + DimsString(x.dims()) + " differs from X[0] " + DimsString(d));
    data[k] = x.data<T>();
  }
  WriteOutput<T>(ctx, "Y", {"X"}, out_dims, [&](T* out) { JoinRows(data, std::vector<int64_t>(n, post), pre, out); });
}

// X@GRAD[k] = Y@GRAD[a, k, b].
template <class T> void StackGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Y@GRAD");
  const std::vector<int64_t> gd = g.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), gd.size());
  const int64_t n = gd[axis], pre = Product(gd, 0, axis), post = Product(gd, axis + 1, gd.size());
  std::vector<int64_t> d = gd;
  d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
  std::vector<T*> dx(static_cast<size_t>(n), nullptr);
  std::vector<int64_t> chunk(dx.size(), post), offset(dx.size());
  for (size_t k = 0; k < dx.size(); ++k) {
    offset[k] = static_cast<int64_t>(k) * post;
    if (k < ctx.op().OutputCount("X@GRAD")) dx[k] = ctx.Output("X@GRAD", k).Allocate<T>(d);
  }
  SplitRows(g.data<T>(), pre, n * post, dx, chunk, offset);
}

}  // namespace

void RegisterConcatSplit(Registrar& r) {
  const OpSchema stack = OpSchema("stack")
                             .Doc("Y = X[0], X[1], ... (all of one shape) joined along a new dim at `axis`.")
                             .Input("X", "tensors to stack", RILL_SLOT_DUPLICABLE)
                             .Output("Y", "the stacked tensor")
                             .Attr("axis", int64_t{0}, "where the new dim goes (negative from the end of Y's dims)")
                             .KernelDtypeFrom("X")
                             .Grad("stack_grad", "Y@GRAD", "X");
  r.Op(stack);
  r.Op(stack.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "stack", [](auto t) { return &Stack<decltype(t)>; });
  RegisterCpu<float, double>(r, "stack_grad", [](auto t) { return &StackGrad<decltype(t)>; });

  const OpSchema concat =
      OpSchema("concat")
          .Doc("Out = X[0], X[1], ... joined along `axis`; other dims must agree.")
          .Input("X", "tensors to join", RILL_SLOT_DUPLICABLE)
          .Input("AxisTensor", "the axis, one int32/int64; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the joined tensor")
          .Attr("axis", int64_t{0}, "the dimension joined along")
          .KernelDtypeFrom("X")
          .Grad("concat_grad", "X,AxisTensor,Out@GRAD", "X");
  r.Op(concat);
  r.Op(concat.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "concat", [](auto t) { return &Concat<decltype(t)>; });
  RegisterCpu<float, double>(r, "concat_grad", [](auto t) { return &ConcatGrad<decltype(t)>; });
  const OpSchema split =
      OpSchema("split")
          .Doc(
              "Out[i] = the i-th piece of X cut along `axis`: into `num` equal pieces, or pieces of the "
              "sizes in `sections` (one may be -1: what the others leave).")
          .Input("X", "tensor to cut")
          .Input("AxisTensor", "the axis, one int32/int64; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Input("SectionsTensorList", "the sections, one 1-element int32/int64 tensor each",
                 RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("Out", "the pieces", RILL_SLOT_DUPLICABLE)
          .Attr("axis", int64_t{0}, "the dimension cut")
          .Attr("num", int64_t{0}, "number of equal pieces (0: one per output)")
          .Attr("sections", std::vector<int64_t>{}, "sizes of the pieces (overrides num)")
          .KernelDtypeFrom("X")
          .Grad("split_grad", "Out@GRAD,AxisTensor", "X");
  r.Op(split);
  r.Op(split.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "split", [](auto t) { return &Split<decltype(t)>; });
  RegisterCpu<float, double>(r, "split_grad", [](auto t) { return &SplitGrad<decltype(t)>; });
}

}  // namespace rill::math
