// concat (X[0..n] joined along `axis`) and split (X cut along `axis` into `num` equal parts
// or into `sections`), and their gradients (each the other's forward).
#include "broadcast.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// Joins the tensors of input slot `in` along `axis` into output `out`.
template <class T>
void ConcatInto(KernelContext& ctx, const char* in, const char* out_slot) {
  const size_t n = ctx.op().InputCount(in);
  std::vector<Tensor> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(ctx.Input(in, i));
  std::vector<int64_t> out_dims = xs[0].dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), out_dims.size());
  for (size_t i = 1; i < n; ++i) {
    std::vector<int64_t> d = xs[i].dims();
    if (d.size() != out_dims.size()) throw Error("X[" + std::to_string(i) + "] has rank " + std::to_string(d.size()) +
                                                 ", X[0] has " + std::to_string(out_dims.size()));
    for (size_t k = 0; k < d.size(); ++k) {
      if (k != axis && d[k] != out_dims[k]) {
        throw Error("X[" + std::to_string(i) + "] " + DimsString(d) + " differs from X[0] " + DimsString(xs[0].dims()) +
                    " outside axis " + std::to_string(axis));
      }
    }
    out_dims[axis] += d[axis];
  }
  const int64_t pre = Product(out_dims, 0, axis), post = Product(out_dims, axis + 1, out_dims.size());
  const int64_t total = Product(out_dims, 0, out_dims.size());
  auto out = Scratch<T>(total);
  int64_t offset = 0;  // along axis, in elements of one `pre` row
  const int64_t row = out_dims[axis] * post;
  for (const Tensor& x : xs) {
    const int64_t chunk = x.dims()[axis] * post;
    const T* px = x.data<T>();
    for (int64_t i = 0; i < pre; ++i) std::copy(px + i * chunk, px + (i + 1) * chunk, out.get() + i * row + offset);
    offset += chunk;
  }
  T* po = ctx.Output(out_slot).Allocate<T>(out_dims);
  std::copy(out.get(), out.get() + total, po);
}

template <class T> void Concat(KernelContext& ctx) { ConcatInto<T>(ctx, "X", "Out"); }
// split's gradient: the pieces' gradients joined back together.
template <class T> void SplitGrad(KernelContext& ctx) { ConcatInto<T>(ctx, "Out@GRAD", "X@GRAD"); }

template <class T>
void Split(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const size_t outputs = ctx.op().OutputCount("Out");
  std::vector<int64_t> sections = ctx.Attr<std::vector<int64_t>>("sections");
  const int64_t num = ctx.Attr<int64_t>("num");
  if (sections.empty()) {
    const int64_t parts = num > 0 ? num : static_cast<int64_t>(outputs);
    if (parts == 0 || d[axis] % parts != 0) {
      throw Error("cannot split dimension " + std::to_string(axis) + " of size " + std::to_string(d[axis]) + " into " +
                  std::to_string(parts) + " equal parts");
    }
    sections.assign(static_cast<size_t>(parts), d[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t s : sections) total += s;
  if (sections.size() != outputs || total != d[axis]) {
    throw Error("sections " + DimsString(sections) + " must list one size per output (" + std::to_string(outputs) +
                ") and add up to " + std::to_string(d[axis]));
  }
  const int64_t pre = Product(d, 0, axis), post = Product(d, axis + 1, d.size());
  auto in = Scratch<T>(x.numel());  // an output may be X itself
  std::copy(x.data<T>(), x.data<T>() + x.numel(), in.get());
  int64_t offset = 0;
  for (size_t o = 0; o < outputs; ++o) {
    std::vector<int64_t> od = d;
    od[axis] = sections[o];
    T* po = ctx.Output("Out", o).Allocate<T>(od);
    const int64_t chunk = sections[o] * post;
    for (int64_t i = 0; i < pre; ++i) {
      const T* src = in.get() + i * d[axis] * post + offset;
      std::copy(src, src + chunk, po + i * chunk);
    }
    offset += chunk;
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled.
template <class T>
void ConcatGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> gd = g.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), gd.size());
  const int64_t pre = Product(gd, 0, axis), post = Product(gd, axis + 1, gd.size()), row = gd[axis] * post;
  const OpInfo op = ctx.op();
  int64_t offset = 0;
  for (size_t i = 0; i < op.InputCount("X"); ++i) {
    const std::vector<int64_t> xd = ctx.Input("X", i).dims();
    const int64_t chunk = xd[axis] * post;
    if (i < op.OutputCount("X@GRAD") && op.OutputName("X@GRAD", i) != RILL_EMPTY_VAR_NAME) {
      T* dx = ctx.Output("X@GRAD", i).Allocate<T>(xd);
      for (int64_t p = 0; p < pre; ++p) {
        const T* src = g.data<T>() + p * row + offset;
        std::copy(src, src + chunk, dx + p * chunk);
      }
    }
    offset += chunk;
  }
}

}  // namespace

void RegisterConcatSplit(Registrar& r) {
  const OpSchema concat = OpSchema("concat")
           .Doc("Out = X[0], X[1], ... joined along `axis`; other dims must agree.")
           .Input("X", "tensors to join", RILL_SLOT_DUPLICABLE)
           .Output("Out", "the joined tensor")
           .Attr("axis", int64_t{0}, "the dimension joined along")
           .KernelDtypeFrom("X")
           .Grad("concat_grad", "X,Out@GRAD", "X");
  r.Op(concat);
  r.Op(concat.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "concat", [](auto t) { return &Concat<decltype(t)>; });
  RegisterCpu<float, double>(r, "concat_grad", [](auto t) { return &ConcatGrad<decltype(t)>; });
  const OpSchema split = OpSchema("split")
           .Doc("Out[i] = the i-th piece of X cut along `axis`: into `num` equal pieces, or pieces of the "
                "sizes in `sections`.")
           .Input("X", "tensor to cut")
           .Output("Out", "the pieces", RILL_SLOT_DUPLICABLE)
           .Attr("axis", int64_t{0}, "the dimension cut")
           .Attr("num", int64_t{0}, "number of equal pieces (0: one per output)")
           .Attr("sections", std::vector<int64_t>{}, "sizes of the pieces (overrides num)")
           .KernelDtypeFrom("X")
           .Grad("split_grad", "Out@GRAD", "X");
  r.Op(split);
  r.Op(split.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "split", [](auto t) { return &Split<decltype(t)>; });
  RegisterCpu<float, double>(r, "split_grad", [](auto t) { return &SplitGrad<decltype(t)>; });
}

}  // namespace rill::math
