// sequence_expand and sequence_expand_as (and their gradients): X's rows or sequences
// repeated as many times as Y's LoD says, with Paddle's contracts
// (paddle/fluid/operators/sequence_ops/sequence_expand_op.*, sequence_expand_as_op.*).
//
// sequence_expand: Y's level ref_level (-1: its last) has one entry per unit of X, a unit
// being one of X's sequences (X's one LoD level) or, without LoD, one row. Unit i is
// repeated as many times as Y's sequence i at that level holds entries (0: dropped). Out
// has one LoD level giving each repeat's length when X has LoD, and none otherwise.
// sequence_expand_as: row i of X is repeated as many times as Y's sequence i (its last
// level) has rows; Out takes that level as its LoD.
// The gradients add each repeat's Out@GRAD back into the unit it copied.
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// How Out is made of X: units[i] = the rows [begin, end) of X that unit i spans, and
// repeats[i] = how often it is copied, in order.
struct Expansion {
  std::vector<uint64_t> begin, end, repeats;
  uint64_t out_rows = 0;
  std::vector<std::vector<uint64_t>> out_lod;
};

// Y's offsets at the level `level` (-1: its last), checked.
std::vector<uint64_t> LevelOf(KernelContext& ctx, const Tensor& y, int64_t level) {
  SequenceOffsets(ctx.op(), "Y", y, SIZE_MAX);
  const std::vector<std::vector<uint64_t>> lod = y.lod();
  const int64_t levels = static_cast<int64_t>(lod.size());
  if (level == -1) level = levels - 1;
  if (level < 0 || level >= levels) {
    throw Error("ref_level " + std::to_string(level) + " is not a level of Y's LoD (" + std::to_string(levels) +
                " levels)");
  }
  return lod[static_cast<size_t>(level)];
}

Expansion ExpandOf(KernelContext& ctx, bool as) {
  Tensor x = ctx.Input("X"), y = ctx.Input("Y");
  const std::vector<uint64_t> ref = LevelOf(ctx, y, as ? -1 : ctx.Attr<int64_t>("ref_level"));
  const uint64_t groups = ref.size() - 1, rows = x.ndim() > 0 ? static_cast<uint64_t>(x.dims()[0]) : 0;
  Expansion e;
  const bool by_sequence = !as && !x.lod().empty();
  std::vector<uint64_t> xo;
  if (by_sequence) {
    xo = SequenceOffsets(ctx.op(), "X", x, 1);
  } else {
    for (uint64_t r = 0; r <= rows; ++r) xo.push_back(r);
  }
  if (xo.size() - 1 != groups) {
    throw Error(std::string("X has ") + std::to_string(xo.size() - 1) + (by_sequence ? " sequences" : " rows") +
                " but Y's LoD level has " + std::to_string(groups) + " entries: one per " +
                (by_sequence ? "sequence" : "row") + " of X");
  }
  if (by_sequence) e.out_lod.push_back({0});
  for (uint64_t i = 0; i < groups; ++i) {
    e.begin.push_back(xo[i]);
    e.end.push_back(xo[i + 1]);
    e.repeats.push_back(ref[i + 1] - ref[i]);
    e.out_rows += (xo[i + 1] - xo[i]) * e.repeats.back();
    for (uint64_t k = 0; by_sequence && k < e.repeats.back(); ++k) {
      e.out_lod[0].push_back(e.out_lod[0].back() + xo[i + 1] - xo[i]);
    }
  }
  if (as) e.out_lod.push_back(ref);
  return e;
}

template <class T, bool kAs> void Expand(KernelContext& ctx) {
  constexpr bool as = kAs;
  const Expansion e = ExpandOf(ctx, as);
  Tensor x = ctx.Input("X");
  std::vector<int64_t> dims = x.dims();
  const int64_t width = dims[0] > 0 ? x.numel() / dims[0] : 0;
  dims[0] = static_cast<int64_t>(e.out_rows);
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X", "Y"}, dims, [&](T* out) {
    for (size_t i = 0; i < e.repeats.size(); ++i) {
      const size_t n = static_cast<size_t>((e.end[i] - e.begin[i]) * static_cast<uint64_t>(width));
      for (uint64_t k = 0; k < e.repeats[i]; ++k, out += n) std::memcpy(out, px + e.begin[i] * width, n * sizeof(T));
    }
  });
  ctx.Output("Out").set_lod(e.out_lod);
}

template <class T, bool kAs> void ExpandGrad(KernelContext& ctx) {
  constexpr bool as = kAs;
  if (!ctx.HasOutput("X@GRAD")) return;
  const Expansion e = ExpandOf(ctx, as);
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const int64_t width = x.dims()[0] > 0 ? x.numel() / x.dims()[0] : 0;
  if (g.numel() != static_cast<int64_t>(e.out_rows) * width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out (" + std::to_string(e.out_rows) +
                " rows of " + std::to_string(width) + ")");
  }
  const T* pg = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Y", "Out@GRAD"}, x.dims(), [&](T* dx) {
    std::fill(dx, dx + x.numel(), T(0));
    for (size_t i = 0; i < e.repeats.size(); ++i) {
      const int64_t n = static_cast<int64_t>(e.end[i] - e.begin[i]) * width;
      VecMap<T> unit(dx + e.begin[i] * width, n);
      for (uint64_t k = 0; k < e.repeats[i]; ++k, pg += n) unit += ConstVecMap<T>(pg, n);
    }
  });
  ctx.Output("X@GRAD").set_lod(x.lod());
}

}  // namespace

void RegisterSequenceExpand(Registrar& r) {
  const OpSchema expand =
      OpSchema("sequence_expand")
          .Doc(
              "Out = X's units (its sequences, or rows without LoD) each repeated as many times as Y's sequence "
              "at ref_level holds entries; Out's LoD gives each repeat's length when X has LoD. As Paddle's.")
          .Input("X", "[R, ...], of at most one LoD level")
          .Input("Y", "a LoD tensor whose level ref_level has one entry per unit of X")
          .Output("Out", "the repeats, in order")
          .Attr("ref_level", int64_t{-1}, "the level of Y's LoD to expand by; -1: its last")
          .KernelDtypeFrom("X")
          .Grad("sequence_expand_grad", "X,Y,Out@GRAD", "X");
  r.Op(expand);
  r.Op(expand.MakeGradSchema());
  const OpSchema as =
      OpSchema("sequence_expand_as")
          .Doc(
              "Out = each row i of X repeated as many times as Y's sequence i (its last LoD level) has rows; "
              "Out takes that level as its LoD. As Paddle's.")
          .Input("X", "[S, ...]: one row per sequence of Y")
          .Input("Y", "a LoD tensor of S sequences")
          .Output("Out", "[rows of Y, ...]")
          .KernelDtypeFrom("X")
          .Grad("sequence_expand_as_grad", "X,Y,Out@GRAD", "X");
  r.Op(as);
  r.Op(as.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_expand",
                                               [](auto t) { return &Expand<decltype(t), false>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_expand_as",
                                               [](auto t) { return &Expand<decltype(t), true>; });
  RegisterCpu<float, double>(r, "sequence_expand_grad", [](auto t) { return &ExpandGrad<decltype(t), false>; });
  RegisterCpu<float, double>(r, "sequence_expand_as_grad", [](auto t) { return &ExpandGrad<decltype(t), true>; });
}

}  // namespace rill::math
