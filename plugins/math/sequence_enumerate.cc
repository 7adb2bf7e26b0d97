// sequence_enumerate: each id's window of win_size ids within its sequence, with Paddle's
// contract (paddle/fluid/operators/sequence_ops/sequence_enumerate_op.*): X packs int32
// or int64 ids ([R] or [R, 1], one LoD level); Out [R, win_size] holds, per row t of a
// sequence ending at e, ids t .. t + win_size - 1, pad_value past e; Out keeps X's LoD.
// It has no gradient.
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

template <class T> void SequenceEnumerate(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, 1);
  const std::vector<int64_t> d = x.dims();
  if (d.size() > 2 || (d.size() == 2 && d[1] != 1)) throw Error("X " + DimsString(d) + " must be [R] or [R, 1]");
  const int64_t win = ctx.Attr<int64_t>("win_size");
  if (win < 1) throw Error("win_size must be at least 1, got " + std::to_string(win));
  const T pad = static_cast<T>(ctx.Attr<int64_t>("pad_value"));
  const T* px = x.data<T>();
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const auto seqs = static_cast<int64_t>(o.size()) - 1;
  WriteOutput<T>(ctx, "Out", {"X"}, {d[0], win}, [&](T* out) {
    ParallelFor(seqs, static_cast<double>(d[0]) * static_cast<double>(win + 1) * sizeof(T),
                [&](int64_t, int64_t first, int64_t last) {
                  for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(last); ++s) {
                    for (uint64_t t = o[s]; t < o[s + 1]; ++t) {
                      for (int64_t k = 0; k < win; ++k) {
                        const uint64_t at = t + static_cast<uint64_t>(k);
                        out[static_cast<int64_t>(t) * win + k] = at < o[s + 1] ? px[at] : pad;
                      }
                    }
                  }
                });
  });
  ctx.Output("Out").set_lod(lod);
}

}  // namespace

void RegisterSequenceEnumerate(Registrar& r) {
  r.Op(OpSchema("sequence_enumerate")
           .Doc("Out[t] = ids t .. t + win_size - 1 of t's sequence (its one LoD level), pad_value past its end; "
                "Out keeps X's LoD. As Paddle's.")
           .Input("X", "int32 or int64 ids, [R] or [R, 1], a LoD tensor of one level")
           .Output("Out", "[R, win_size]")
           .RequiredAttr("win_size", RILL_ATTR_INT, "ids per window")
           .Attr("pad_value", int64_t{0}, "the id past a sequence's end")
           .KernelDtypeFrom("X"));
  RegisterCpu<int32_t, int64_t>(r, "sequence_enumerate", [](auto t) { return &SequenceEnumerate<decltype(t)>; });
}

}  // namespace rill::math
