// sequence_erase: X's tokens with those listed in the attribute `tokens` removed, with
// Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_erase_op.*). X is
// [R, 1] int32 or int64 ids, a LoD tensor; Out is [kept, 1] with X's LoD, its last level
// counting what each sequence kept (a sequence may become empty). No gradient: ids.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

template <class T> void SequenceErase(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  if (x.ndim() != 2 || x.dims()[1] != 1) throw Error("X " + DimsString(x.dims()) + " must be [R, 1]: one id a row");
  std::vector<int64_t> tokens = ctx.Attr<std::vector<int64_t>>("tokens");
  std::sort(tokens.begin(), tokens.end());
  const T* in = x.data<T>();
  std::vector<T> kept;
  kept.reserve(static_cast<size_t>(x.numel()));
  std::vector<std::vector<uint64_t>> lod = x.lod();
  std::vector<uint64_t>& last = lod.back();
  for (size_t s = 0; s + 1 < o.size(); ++s) {
    for (uint64_t r = o[s]; r < o[s + 1]; ++r) {
      if (!std::binary_search(tokens.begin(), tokens.end(), static_cast<int64_t>(in[r]))) kept.push_back(in[r]);
    }
    last[s + 1] = kept.size();
  }
  WriteOutput<T>(ctx, "Out", {"X"}, {static_cast<int64_t>(kept.size()), 1},
                 [&](T* out) { std::copy(kept.begin(), kept.end(), out); });
  ctx.Output("Out").set_lod(lod);
}

}  // namespace

void RegisterSequenceErase(Registrar& r) {
  r.Op(OpSchema("sequence_erase")
           .Doc("Out = X's ids without those in tokens; Out's last LoD level counts what each sequence kept. As "
                "Paddle's.")
           .Input("X", "[R, 1] int32 or int64 ids, a LoD tensor")
           .Output("Out", "[kept, 1], with X's LoD recounted")
           .Attr("tokens", std::vector<int64_t>{}, "the ids to remove")
           .KernelDtypeFrom("X"));
  RegisterCpu<int32_t, int64_t>(r, "sequence_erase", [](auto t) { return &SequenceErase<decltype(t)>; });
}

}  // namespace rill::math
