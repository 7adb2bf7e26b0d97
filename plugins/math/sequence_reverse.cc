// sequence_reverse: each sequence of X (its last LoD level) with its rows in reverse order,
// with Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_reverse_op.*). Y
// keeps X's shape and LoD; the gradient reverses Y@GRAD the same way.
#include <cstring>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Writes `from`'s rows (of `row_bytes` each), every sequence of `o` reversed, at `to`.
void ReverseRows(const char* from, char* to, const std::vector<uint64_t>& o, size_t row_bytes) {
  for (size_t s = 0; s + 1 < o.size(); ++s) {
    for (uint64_t r = o[s]; r < o[s + 1]; ++r) {
      std::memcpy(to + (o[s] + o[s + 1] - 1 - r) * row_bytes, from + r * row_bytes, row_bytes);
    }
  }
}

// Output `out`: input `in`'s rows, each sequence of X's LoD reversed; out takes X's LoD.
void SequenceReverse(KernelContext& ctx, const char* in, const char* out) {
  Tensor x = ctx.Input("X"), v = ctx.Input(in);
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  if (v.dims() != x.dims()) throw Error(std::string(in) + " " + DimsString(v.dims()) + " is not shaped like X");
  const size_t row_bytes = RowBytes(v);  // v is shaped like X
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutputBytes(ctx, out, {"X", in}, v.dtype(), v.dims(),
                   [&](char* to) { ReverseRows(static_cast<const char*>(v.raw_data()), to, o, row_bytes); });
  ctx.Output(out).set_lod(lod);
}

template <class T> void Reverse(KernelContext& ctx) { SequenceReverse(ctx, "X", "Y"); }
// Reversing is its own inverse.
template <class T> void ReverseGrad(KernelContext& ctx) {
  if (ctx.HasOutput("X@GRAD")) SequenceReverse(ctx, "Y@GRAD", "X@GRAD");
}

}  // namespace

void RegisterSequenceReverse(Registrar& r) {
  const OpSchema reverse = OpSchema("sequence_reverse")
                               .Doc(
                                   "Y = X with the rows of each sequence (its last LoD level) in reverse order; "
                                   "Y keeps X's LoD. As Paddle's.")
                               .Input("X", "[R, ...], a LoD tensor")
                               .Output("Y", "shaped like X")
                               .KernelDtypeFrom("X")
                               .Grad("sequence_reverse_grad", "X,Y@GRAD", "X");
  r.Op(reverse);
  r.Op(reverse.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t, uint8_t>(r, "sequence_reverse",
                                                        [](auto t) { return &Reverse<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_reverse_grad", [](auto t) { return &ReverseGrad<decltype(t)>; });
}

}  // namespace rill::math
