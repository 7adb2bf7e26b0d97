// sequence_enumerate: each id's window of win_size ids within its sequence, with Paddle's
// contract (paddle/fluid/operators/sequence_ops/sequence_enumerate_op.*): X packs int32
// or int64 ids ([R] or [R, 1], one LoD level); Out [R, win_size] holds, per row t of a
// sequence ending at e, ids t .. t + win_size - 1, pad_value past e; Out keeps X's LoD.
// It has no gradient.
#include <algorithm>
#include <cstring>
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
  const int64_t rows = d[0];
  // Row t of a sequence [b, e) is ids t .. t + win - 1 where t + win <= e, and those up to e
  // then pad past it. A whole window of at most kWide ids is moved as kWide of them, one
  // fixed-size copy: the ids past win land on the next rows, which the same loop writes
  // after it, so the copy is made only while its end stays within the sequence's own rows
  // of Out (and its read within X).
  constexpr int64_t kWide = 64 / sizeof(T);
  WriteOutput<T>(ctx, "Out", {"X"}, {rows, win}, [&](T* out) {
    ParallelFor(seqs, static_cast<double>(rows) * static_cast<double>(win + 1) * sizeof(T),
                [&](int64_t, int64_t first, int64_t last) {
                  for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(last); ++s) {
                    const auto e = static_cast<int64_t>(o[s + 1]);
                    auto t = static_cast<int64_t>(o[s]);
                    if (win <= kWide) {
                      const int64_t wide_end =
                          std::min(e - std::max(win, (kWide + win - 1) / win) + 1, rows - kWide + 1);
                      for (; t < wide_end; ++t) std::memcpy(out + t * win, px + t, kWide * sizeof(T));
                    }
                    for (; t + win <= e; ++t) std::copy(px + t, px + t + win, out + t * win);
                    for (; t < e; ++t) {
                      T* row = std::copy(px + t, px + e, out + t * win);
                      std::fill(row, out + (t + 1) * win, pad);
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
