// sequence_erase: X's tokens with those listed in the attribute `tokens` removed, with
// Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_erase_op.*). X is
// [R, 1] int32 or int64 ids, a LoD tensor; Out is [kept, 1] with X's LoD, its last level
// counting what each sequence kept (a sequence may become empty). No gradient: ids.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// The ids to erase (the attribute's ints, which both id types hold): up to
// memory::kMatchWords of them are matched by the instruction set's vector loops (padded
// with the last, so that the loop for the next list length up matches the same ids), a
// longer list by binary search.
template <class T> class Tokens {
 public:
  using Word = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;  // the ids' bits

  explicit Tokens(std::vector<int64_t> list) : sorted_(std::move(list)) {
    std::sort(sorted_.begin(), sorted_.end());
    few_ = !sorted_.empty() && sorted_.size() <= memory::kMatchWords;
    for (size_t i = 0; few_ && i < memory::kMatchWords; ++i) {
      padded_[i] = static_cast<Word>(static_cast<T>(sorted_[std::min(i, sorted_.size() - 1)]));
    }
  }
  // How many of in[0, n) are no token.
  int64_t CountKept(const T* in, int64_t n) const {
    if (few_) return memory::CountUnmatchedFor<Word>(Words())(reinterpret_cast<const Word*>(in), n, padded_);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) kept += Keeps(in[i]);
    return kept;
  }
  // Those of in[0, n), kept of them, in order, to out[0, kept).
  void CopyKept(const T* in, int64_t n, T* out, int64_t kept) const {
    if (few_) {
      return memory::CopyUnmatchedFor<Word>(Words())(reinterpret_cast<const Word*>(in), n, reinterpret_cast<Word*>(out),
                                                     kept, padded_);
    }
    for (int64_t i = 0, k = 0; k < kept; ++i) {
      out[k] = in[i];
      k += Keeps(in[i]);
    }
  }

 private:
  int Words() const { return static_cast<int>(sorted_.size()); }
  bool Keeps(T id) const { return !std::binary_search(sorted_.begin(), sorted_.end(), static_cast<int64_t>(id)); }

  std::vector<int64_t> sorted_;
  Word padded_[memory::kMatchWords] = {};
  bool few_ = false;
};

template <class T> void SequenceErase(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  if (x.ndim() != 2 || x.dims()[1] != 1) throw Error("X " + DimsString(x.dims()) + " must be [R, 1]: one id a row");
  const Tokens<T> tokens(ctx.Attr<std::vector<int64_t>>("tokens"));
  const T* in = x.data<T>();
  const int64_t seqs = static_cast<int64_t>(o.size()) - 1;
  const auto length = [&](int64_t s) { return static_cast<int64_t>(o[static_cast<size_t>(s) + 1] - o[s]); };
  // Two passes over the sequences on the team: what each keeps (Out's last LoD level, by
  // a running sum), then each sequence's kept ids written to its own part of Out.
  std::vector<std::vector<uint64_t>> lod = x.lod();
  std::vector<uint64_t>& last = lod.back();
  const double bytes = static_cast<double>(x.numel()) * sizeof(T);
  ParallelFor(seqs, bytes, [&](int64_t, int64_t first, int64_t end) {
    for (int64_t s = first; s < end; ++s) last[static_cast<size_t>(s) + 1] = tokens.CountKept(in + o[s], length(s));
  });
  last[0] = 0;
  for (size_t s = 1; s < last.size(); ++s) last[s] += last[s - 1];
  WriteOutput<T>(ctx, "Out", {"X"}, {static_cast<int64_t>(last.back()), 1}, [&](T* out) {
    ParallelFor(seqs, 2 * bytes, [&](int64_t, int64_t first, int64_t end) {
      for (int64_t s = first; s < end; ++s) {
        tokens.CopyKept(in + o[s], length(s), out + last[s], static_cast<int64_t>(last[s + 1] - last[s]));
      }
    });
  });
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
