// lod_reset (and its gradient): X's values under a new LoD, with Paddle's contract
// (paddle/fluid/operators/lod_reset_op.*). Fluid's lod_append layer is this op with
// append set.
//
// The new LoD comes from, first to last: Y's LoD when Y has one (all its levels, ending at
// X's rows); Y's values (int32 or int64 offsets of one level); the attribute target_lod.
// A level given as offsets must rise from 0 to X's row count. With append (and no LoD on
// Y), that level is added below X's own levels, whose last must then end at the sequences
// it makes. The gradient passes Out@GRAD through, under X's LoD.
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

std::string OffsetsString(const std::vector<int64_t>& o) {
  std::string s;
  for (size_t i = 0; i < o.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(o[i]);
  return "{" + s + (o.size() > 8 ? ", ...}" : "}");
}

// The level of offsets Y's values or target_lod give, checked against X's `rows`.
std::vector<uint64_t> TargetLevel(KernelContext& ctx, int64_t rows) {
  std::vector<int64_t> o;
  std::string from = "attribute target_lod";
  if (ctx.HasInput("Y")) {
    Tensor y = ctx.Input("Y");
    from = "Y's values";
    if (y.dtype() == RILL_INT32) {
      o.assign(y.data<int32_t>(), y.data<int32_t>() + y.numel());
    } else if (y.dtype() == RILL_INT64) {
      o.assign(y.data<int64_t>(), y.data<int64_t>() + y.numel());
    } else {
      throw Error("Y without LoD gives the new LoD as its values: int32 or int64 offsets, not " +
                  std::string(DataTypeName(y.dtype())));
    }
  } else {
    o = ctx.Attr<std::vector<int64_t>>("target_lod");
  }
  bool ok = o.size() >= 2 && o.front() == 0 && o.back() == rows;
  for (size_t i = 1; ok && i < o.size(); ++i) ok = o[i] >= o[i - 1];
  if (!ok) {
    throw Error("the new LoD (" + from + ") " + OffsetsString(o) + " must rise from 0 to X's rows (" +
                std::to_string(rows) + "), with at least one sequence");
  }
  return {o.begin(), o.end()};
}

std::vector<std::vector<uint64_t>> NewLoD(KernelContext& ctx, const Tensor& x) {
  const int64_t rows = x.ndim() > 0 ? x.dims()[0] : 0;
  if (ctx.HasInput("Y")) {
    Tensor y = ctx.Input("Y");
    if (!y.lod().empty()) {
      SequenceOffsets(ctx.op(), "Y", y, SIZE_MAX);
      const std::vector<std::vector<uint64_t>> lod = y.lod();
      if (lod.back().back() != static_cast<uint64_t>(rows)) {
        throw Error("Y's LoD ends at row " + std::to_string(lod.back().back()) + ", X has " + std::to_string(rows) +
                    " rows: the new LoD must pack X's rows");
      }
      return lod;
    }
  }
  std::vector<uint64_t> level = TargetLevel(ctx, rows);
  if (!ctx.Attr<bool>("append")) return {level};
  std::vector<std::vector<uint64_t>> lod = x.lod();
  if (!lod.empty() && lod.back().back() != level.size() - 1) {
    throw Error("appending a level of " + std::to_string(level.size() - 1) +
                " sequences below X's LoD, whose last "
                "level ends at " +
                std::to_string(lod.back().back()) + ": it must end at the sequences appended");
  }
  lod.push_back(std::move(level));
  return lod;
}

void LodReset(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<std::vector<uint64_t>> lod = NewLoD(ctx, x);
  const size_t bytes = static_cast<size_t>(x.numel()) * DataTypeSize(x.dtype());
  WriteOutputBytes(ctx, "Out", {"X"}, x.dtype(), x.dims(), [&](char* to) { ParallelCopy(x.raw_data(), to, bytes); });
  ctx.Output("Out").set_lod(lod);
}

void LodResetGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  if (g.dims() != x.dims()) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X");
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const size_t bytes = static_cast<size_t>(g.numel()) * DataTypeSize(g.dtype());
  WriteOutputBytes(ctx, "X@GRAD", {"Out@GRAD"}, g.dtype(), g.dims(),
                   [&](char* to) { ParallelCopy(g.raw_data(), to, bytes); });
  ctx.Output("X@GRAD").set_lod(lod);
}

template <class T> void Reset(KernelContext& ctx) { LodReset(ctx); }
template <class T> void ResetGrad(KernelContext& ctx) { LodResetGrad(ctx); }

}  // namespace

void RegisterLodReset(Registrar& r) {
  const OpSchema reset =
      OpSchema("lod_reset")
          .Doc(
              "Out = X under a new LoD: Y's LoD, else Y's values, else target_lod (offsets of one level); with "
              "append, that level is added below X's. As Paddle's (Fluid's lod_reset and lod_append layers).")
          .Input("X", "any tensor")
          .Input("Y", "a LoD tensor whose LoD Out takes, or int32/int64 offsets", RILL_SLOT_OPTIONAL)
          .Output("Out", "X's values and shape, with the new LoD")
          .Attr("target_lod", std::vector<int64_t>{}, "the new level as offsets, when Y is not given")
          .Attr("append", false, "add the level below X's LoD instead of replacing it")
          .KernelDtypeFrom("X")
          .Grad("lod_reset_grad", "X,Out@GRAD", "X");
  r.Op(reset);
  r.Op(reset.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "lod_reset", [](auto t) { return &Reset<decltype(t)>; });
  RegisterCpu<float, double>(r, "lod_reset_grad", [](auto t) { return &ResetGrad<decltype(t)>; });
}

}  // namespace rill::math
