// split_lod_tensor and merge_lod_tensor, IfElse's two halves, with Paddle's contracts
// (paddle/fluid/operators/split_lod_tensor_op.cc, merge_lod_tensor_op.cc).
//
// A bool Mask holds one value per unit of X: its rows without a LoD, else its elements at
// LoD level `level` (each with the levels below it, sequence.h's LodSpan). split sends
// each unit to OutTrue or OutFalse, in order, with their LoD; merge puts the units of
// InTrue and InFalse back in the order Mask gives, taking the next unit of InTrue where it
// is true, of InFalse where false. Each is the other's gradient: split's gradient merges
// the branches' gradients, merge's splits Out's.
#include <cstring>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Mask's values, one per unit, checked to be bool.
std::vector<bool> MaskOf(KernelContext& ctx) {
  Tensor mask = ctx.Input("Mask");
  if (mask.dtype() != RILL_BOOL) throw Error(std::string("Mask must be bool, is ") + DataTypeName(mask.dtype()));
  const bool* m = mask.data<bool>();
  return std::vector<bool>(m, m + mask.numel());
}

// The units of `x` at `level` (its rows without a LoD), checked to be one per mask value.
std::vector<LodSpan> UnitsOf(KernelContext& ctx, const char* slot, Tensor x, size_t level, size_t count) {
  const LoD lod = x.lod();
  std::vector<LodSpan> units;
  if (lod.empty()) {
    for (int64_t r = 0; r < (x.ndim() > 0 ? x.dims()[0] : 0); ++r) units.push_back(SpanOf(lod, 0, r));
  } else {
    SequenceOffsets(ctx.op(), slot, x, SIZE_MAX);
    if (level >= lod.size()) {
      throw Error("level " + std::to_string(level) + " is not a LoD level of " + slot + ", which has " +
                  std::to_string(lod.size()));
    }
    for (uint64_t e = 0; e + 1 < lod[level].size(); ++e) units.push_back(SpanOf(lod, level, e));
  }
  if (units.size() != count) {
    throw Error(std::string(slot) + " ('" + ctx.op().InputName(slot) + "') holds " + std::to_string(units.size()) +
                " units, Mask " + std::to_string(count) + " values");
  }
  return units;
}

// The output holding `units` of `from`, in order, with their LoD.
void Gather(Tensor from, const std::vector<LodSpan>& units, size_t levels, Tensor out) {
  std::vector<int64_t> dims = from.dims();
  const size_t row = RowBytes(from);
  uint64_t total = 0;
  for (const auto& u : units) total += u.end - u.begin;
  dims[0] = static_cast<int64_t>(total);
  char* to = static_cast<char*>(out.Allocate(from.dtype(), dims));
  const char* src = static_cast<const char*>(from.raw_data());
  LoD lengths(levels);
  for (const auto& u : units) {
    std::memcpy(to, src + u.begin * row, (u.end - u.begin) * row);
    to += (u.end - u.begin) * row;
    for (size_t k = 0; k < levels; ++k) lengths[k].insert(lengths[k].end(), u.lengths[k].begin(), u.lengths[k].end());
  }
  out.set_lod(OffsetsOf(lengths));
}

// Splits input `in` into `out_true` and `out_false`, by the units of input `layout` (the
// same rows: `in` itself, or the forward output whose gradient `in` is, which may lack the
// LoD).
void Split(KernelContext& ctx, const char* in, const char* layout, const char* out_true, const char* out_false) {
  const std::vector<bool> mask = MaskOf(ctx);
  const size_t level = static_cast<size_t>(ctx.Attr<int64_t>("level"));
  Tensor x = ctx.Input(in), shape = ctx.Input(layout);
  if (x.dims() != shape.dims()) {
    throw Error(std::string(in) + " " + DimsString(x.dims()) + " is not shaped like " + layout + " " +
                DimsString(shape.dims()));
  }
  const std::vector<LodSpan> units = UnitsOf(ctx, layout, shape, level, mask.size());
  std::vector<LodSpan> yes, no;
  for (size_t i = 0; i < units.size(); ++i) (mask[i] ? yes : no).push_back(units[i]);
  const size_t levels = shape.lod().empty() ? 0 : shape.lod().size() - level;
  if (ctx.HasOutput(out_true)) Gather(x, yes, levels, ctx.Output(out_true));
  if (ctx.HasOutput(out_false)) Gather(x, no, levels, ctx.Output(out_false));
}

// Allocates `out` as `dtype` [dims] and writes its unit i (rows units[i]) from the next
// unit of input `in_true` where Mask is true, of `in_false` where false; zeros for a
// branch not given (no gradient reached it).
void Interleave(KernelContext& ctx, const std::vector<bool>& mask, const std::vector<LodSpan>& units,
                const char* in_true, const char* in_false, int32_t dtype, const std::vector<int64_t>& dims,
                Tensor out) {
  int64_t per_row = 1;
  for (size_t d = 1; d < dims.size(); ++d) per_row *= dims[d];
  const size_t row = static_cast<size_t>(per_row) * DataTypeSize(dtype);
  char* to = static_cast<char*>(out.Allocate(dtype, dims));
  uint64_t taken[2] = {0, 0};  // rows of each branch used so far
  for (size_t i = 0; i < units.size(); ++i) {
    const char* slot = mask[i] ? in_true : in_false;
    const uint64_t n = units[i].end - units[i].begin;
    uint64_t& at = taken[mask[i] ? 1 : 0];
    if (ctx.HasInput(slot)) {
      Tensor branch = ctx.Input(slot);
      const int64_t branch_rows = branch.ndim() > 0 ? branch.dims()[0] : 0;
      if (branch.dtype() != dtype || branch_rows * per_row != branch.numel() ||
          static_cast<uint64_t>(branch_rows) < at + n) {
        throw Error(std::string(slot) + " " + DataTypeName(branch.dtype()) + " " + DimsString(branch.dims()) +
                    " does not hold its units' rows of " + DataTypeName(dtype) + " " + DimsString(dims));
      }
      std::memcpy(to + units[i].begin * row, static_cast<const char*>(branch.raw_data()) + at * row, n * row);
    } else {
      std::memset(to + units[i].begin * row, 0, n * row);
    }
    at += n;
  }
}

void SplitLodTensor(KernelContext& ctx) { Split(ctx, "X", "X", "OutTrue", "OutFalse"); }

// X@GRAD: X's units back from the branches' gradients, with X's LoD.
void SplitLodTensorGrad(KernelContext& ctx) {
  const std::vector<bool> mask = MaskOf(ctx);
  Tensor x = ctx.Input("X");
  const std::vector<LodSpan> units = UnitsOf(ctx, "X", x, static_cast<size_t>(ctx.Attr<int64_t>("level")), mask.size());
  Tensor out = ctx.Output("X@GRAD");
  Interleave(ctx, mask, units, "OutTrue@GRAD", "OutFalse@GRAD", x.dtype(), x.dims(), out);
  out.set_lod(x.lod());
}

// Out: the branches' units in Mask's order, with their LoD.
void MergeLodTensor(KernelContext& ctx) {
  const std::vector<bool> mask = MaskOf(ctx);
  const size_t level = static_cast<size_t>(ctx.Attr<int64_t>("level"));
  size_t true_count = 0;
  for (bool m : mask) true_count += m;
  Tensor in_true = ctx.Input("InTrue"), in_false = ctx.Input("InFalse");
  const std::vector<LodSpan> yes = UnitsOf(ctx, "InTrue", in_true, level, true_count);
  const std::vector<LodSpan> no = UnitsOf(ctx, "InFalse", in_false, level, mask.size() - true_count);
  // Out's units: each branch's next, in Mask's order, laid one after another.
  std::vector<LodSpan> units;
  uint64_t rows = 0;
  size_t next[2] = {0, 0};
  for (bool m : mask) {
    LodSpan u = m ? yes[next[1]++] : no[next[0]++];
    const uint64_t n = u.end - u.begin;
    u.begin = rows;
    u.end = rows + n;
    rows += n;
    units.push_back(std::move(u));
  }
  Tensor a = true_count > 0 ? in_true : in_false;
  std::vector<int64_t> dims = a.dims();
  if (dims.empty()) throw Error("InTrue and InFalse must have rows");
  dims[0] = static_cast<int64_t>(rows);
  Tensor out = ctx.Output("Out");
  Interleave(ctx, mask, units, "InTrue", "InFalse", a.dtype(), dims, out);
  const size_t levels = a.lod().empty() ? 0 : a.lod().size() - level;
  LoD lengths(levels);
  for (const auto& u : units) {
    for (size_t k = 0; k < levels && k < u.lengths.size(); ++k) {
      lengths[k].insert(lengths[k].end(), u.lengths[k].begin(), u.lengths[k].end());
    }
  }
  out.set_lod(OffsetsOf(lengths));
}

void MergeLodTensorGrad(KernelContext& ctx) { Split(ctx, "Out@GRAD", "Out", "InTrue@GRAD", "InFalse@GRAD"); }

}  // namespace

void RegisterSplitMergeLodTensor(Registrar& r) {
  const OpSchema split =
      OpSchema("split_lod_tensor")
          .Doc(
              "OutTrue, OutFalse = X's units (rows, or elements of LoD level `level`) where Mask is true, "
              "where it is false, in order, with their LoD (IfElse's inputs).")
          .Input("X", "the tensor to split")
          .Input("Mask", "bool [units, 1]")
          .Output("OutTrue", "the units where Mask is true")
          .Output("OutFalse", "the units where Mask is false")
          .Attr("level", int64_t{0}, "the LoD level of the units")
          .Grad("split_lod_tensor_grad", "X,Mask,OutTrue@GRAD,OutFalse@GRAD", "X");
  r.Op(split);
  r.Op(split.MakeGradSchema().KernelDtypeFrom(""));
  r.Kernel("split_lod_tensor", RILL_CPU, RILL_ANY_DTYPE, &SplitLodTensor);
  r.Kernel("split_lod_tensor_grad", RILL_CPU, RILL_ANY_DTYPE, &SplitLodTensorGrad);
  const OpSchema merge =
      OpSchema("merge_lod_tensor")
          .Doc(
              "Out = InTrue's and InFalse's units put back in Mask's order (IfElse's outputs); X is the "
              "tensor that was split (Paddle's slot; the LoD comes from the branches).")
          .Input("X", "the tensor that was split")
          .Input("Mask", "bool [units, 1]")
          .Input("InTrue", "the true branch's units")
          .Input("InFalse", "the false branch's units")
          .Output("Out", "the merged tensor")
          .Attr("level", int64_t{0}, "the LoD level of the units")
          .Grad("merge_lod_tensor_grad", "X,Mask,Out,Out@GRAD", "InTrue,InFalse");
  r.Op(merge);
  r.Op(merge.MakeGradSchema().KernelDtypeFrom(""));
  r.Kernel("merge_lod_tensor", RILL_CPU, RILL_ANY_DTYPE, &MergeLodTensor);
  r.Kernel("merge_lod_tensor_grad", RILL_CPU, RILL_ANY_DTYPE, &MergeLodTensorGrad);
  // Paddle 2.x writes this form into inference programs; it merges the same way (Paddle's
  // also empties the branches afterwards, a memory saving the next run's writes make moot).
  r.Op(OpSchema("merge_lod_tensor_infer")
           .Doc("merge_lod_tensor in an inference program (Paddle 2.x): the same merge.")
           .Input("X", "the tensor that was split")
           .Input("Mask", "bool [units, 1]")
           .Input("InTrue", "the true branch's units")
           .Input("InFalse", "the false branch's units")
           .Output("Out", "the merged tensor")
           .Attr("level", int64_t{0}, "the LoD level of the units"));
  r.Kernel("merge_lod_tensor_infer", RILL_CPU, RILL_ANY_DTYPE, &MergeLodTensor);
}

}  // namespace rill::math
