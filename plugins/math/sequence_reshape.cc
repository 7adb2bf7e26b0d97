// sequence_reshape: X [R, W]'s rows re-cut to new_dim elements each, sequence by
// sequence, with Paddle's contract (paddle/fluid/operators/sequence_ops/
// sequence_reshape_op.*): each sequence's length * W must divide by new_dim, and its
// offsets scale by W / new_dim. The values stay in place (a reshape); the gradient is
// Out@GRAD with X's shape and LoD.
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Out's offsets for X's, each sequence's elements over new_dim.
std::vector<uint64_t> Reshaped(KernelContext& ctx, const Tensor& x) {
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, 1);
  if (x.ndim() != 2) throw Error("X " + DimsString(x.dims()) + " must be [R, W]");
  const int64_t d = ctx.Attr<int64_t>("new_dim");
  if (d < 1) throw Error("new_dim must be at least 1, got " + std::to_string(d));
  const auto w = static_cast<uint64_t>(x.dims()[1]), nd = static_cast<uint64_t>(d);
  std::vector<uint64_t> out = {0};
  for (size_t s = 0; s + 1 < o.size(); ++s) {
    const uint64_t elements = (o[s + 1] - o[s]) * w;
    if (elements % nd != 0) {
      throw Error("sequence " + std::to_string(s) + " of X holds " + std::to_string(elements) +
                  " elements, which new_dim " + std::to_string(d) + " does not divide");
    }
    out.push_back(out.back() + elements / nd);
  }
  return out;
}

template <class T> void SequenceReshape(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> out_lod = Reshaped(ctx, x);
  const int64_t d = ctx.Attr<int64_t>("new_dim");
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X"}, {static_cast<int64_t>(out_lod.back()), d},
                 [&](T* out) { std::memcpy(out, px, sizeof(T) * static_cast<size_t>(x.numel())); });
  ctx.Output("Out").set_lod({out_lod});
}

template <class T> void SequenceReshapeGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  Reshaped(ctx, x);
  if (g.numel() != x.numel()) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  const T* pg = g.data<T>();
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Out@GRAD"}, x.dims(),
                 [&](T* dx) { std::memcpy(dx, pg, sizeof(T) * static_cast<size_t>(x.numel())); });
  ctx.Output("X@GRAD").set_lod(lod);
}

}  // namespace

void RegisterSequenceReshape(Registrar& r) {
  const OpSchema reshape =
      OpSchema("sequence_reshape")
          .Doc(
              "Out = X's values in rows of new_dim, each sequence's offsets scaled by X's width / new_dim (every "
              "sequence's elements must divide by new_dim). As Paddle's.")
          .Input("X", "[R, W], a LoD tensor of one level")
          .Output("Out", "[R * W / new_dim, new_dim]")
          .RequiredAttr("new_dim", RILL_ATTR_INT, "elements per row of Out")
          .KernelDtypeFrom("X")
          .Grad("sequence_reshape_grad", "X,Out@GRAD", "X");
  r.Op(reshape);
  r.Op(reshape.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_reshape",
                                               [](auto t) { return &SequenceReshape<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_reshape_grad", [](auto t) { return &SequenceReshapeGrad<decltype(t)>; });
}

}  // namespace rill::math
