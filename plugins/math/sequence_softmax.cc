// sequence_softmax: the softmax of each sequence of X (its last LoD level) over all its
// elements, with Paddle's contract (paddle/fluid/operators/sequence_ops/
// sequence_softmax_op.*): X is [R] or [R, 1], Out is shaped like X with X's LoD; an empty
// sequence contributes nothing. Each sequence subtracts its maximum first, as a stable
// softmax does. The gradient, per sequence: dX = Out * (dOut - sum(dOut * Out)).
#include <algorithm>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"
#include "softmax_loops.h"

namespace rill::math {
namespace {

// X's offsets, after checking it holds one value per row.
std::vector<uint64_t> Checked(KernelContext& ctx, const Tensor& x) {
  const std::vector<int64_t> d = x.dims();
  if (d.empty() || d.size() > 2 || (d.size() == 2 && d[1] != 1)) {
    throw Error("X " + DimsString(d) + " must be [R] or [R, 1]: one value per row");
  }
  return SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
}

template <class T> void SequenceSoftmax(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = Checked(ctx, x);
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const T* px = x.data<T>();
  const int64_t seqs = static_cast<int64_t>(o.size()) - 1;
  const auto loops = softmax::LoopsFor<T>();  // each sequence one vector of softmax's loops
  WriteOutput<T>(ctx, "Out", {"X"}, x.dims(), [&](T* out) {
    ParallelFor(seqs, 3.0 * static_cast<double>(x.numel()) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const uint64_t b = o[static_cast<size_t>(s)], n = o[static_cast<size_t>(s) + 1] - b;
        if (n == 0) continue;
        loops.forward(px + b, out + b, nullptr, softmax::Vectors{1, static_cast<int64_t>(n), 1}, 0, 1, false);
      }
    });
  });
  ctx.Output("Out").set_lod(lod);
}

template <class T> void SequenceSoftmaxGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), y = ctx.Input("Out"), g = ctx.Input("Out@GRAD");
  const std::vector<uint64_t> o = Checked(ctx, x);
  if (y.numel() != x.numel() || g.numel() != x.numel()) {
    throw Error("Out " + DimsString(y.dims()) + " and Out@GRAD " + DimsString(g.dims()) + " must be shaped like X " +
                DimsString(x.dims()));
  }
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const T *py = y.data<T>(), *pg = g.data<T>();
  const int64_t seqs = static_cast<int64_t>(o.size()) - 1;
  const auto loops = softmax::LoopsFor<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Out", "Out@GRAD"}, x.dims(), [&](T* dx) {
    ParallelFor(seqs, 3.0 * static_cast<double>(x.numel()) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const uint64_t b = o[static_cast<size_t>(s)], n = o[static_cast<size_t>(s) + 1] - b;
        loops.backward(py + b, pg + b, dx + b, softmax::Vectors{1, static_cast<int64_t>(n), 1}, 0, 1, false);
      }
    });
  });
  ctx.Output("X@GRAD").set_lod(lod);
}

}  // namespace

void RegisterSequenceSoftmax(Registrar& r) {
  const OpSchema softmax = OpSchema("sequence_softmax")
                               .Doc(
                                   "Out = the softmax of each sequence of X (its last LoD level) over its values; "
                                   "Out keeps X's shape and LoD. As Paddle's.")
                               .Input("X", "[R] or [R, 1], a LoD tensor")
                               .Output("Out", "shaped like X")
                               .Attr("use_cudnn", false, "Fluid's attribute (no effect)")
                               .Attr("data_format", "AnyLayout", "Fluid's attribute (no effect)")
                               .KernelDtypeFrom("X")
                               .Grad("sequence_softmax_grad", "X,Out,Out@GRAD", "X");
  r.Op(softmax);
  r.Op(softmax.MakeGradSchema());
  RegisterCpu<float, double>(r, "sequence_softmax", [](auto t) { return &SequenceSoftmax<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_softmax_grad", [](auto t) { return &SequenceSoftmaxGrad<decltype(t)>; });
}

}  // namespace rill::math
