// Fluid's LoD rank table and the ops DynamicRNN builds on it, with Paddle's contracts
// (paddle/fluid/framework/lod_rank_table.*, paddle/fluid/operators/lod_rank_table_op.cc,
// max_sequence_len_op.cc, lod_tensor_to_array_op.cc, array_to_lod_tensor_op.cc,
// shrink_rnn_memory_op.cc, reorder_lod_tensor_by_rank_op.cc).
//
// A rank table of a LoD level lists that level's sequences, longest first (a stable sort,
// so equal lengths keep their order), each as (index, length), and keeps the levels above
// it. DynamicRNN runs a step t over the sequences longer than t, which are the table's
// first n_t items:
//  - lod_tensor_to_array: entry t of the array holds row t of each such sequence, in table
//    order; array_to_lod_tensor puts the rows back into the sequences' own order, with the
//    LoD they had; each is the other's gradient (an entry or array no gradient reached
//    reads as zeros).
//  - shrink_rnn_memory: a memory's first n_t rows, or sequences when it has a LoD (the
//    memory is kept in table order); its gradient pads Out@GRAD with zero rows back to X's.
//  - reorder_lod_tensor_by_rank: X's sequences (rows, without LoD) in table order, so a
//    memory's initial value lines up with the steps; the gradient puts them back.
// A step's part of a sequence is its element at the level below the ranked one: a row when
// the ranked level is the last, else a sequence of the levels below, with its LoD (nested
// DynamicRNNs).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "memory_loops.h"
#include "ops.h"
#include "sequence.h"
#include "tensor_copy.h"

namespace rill::math {
namespace {

// A rank table as the ops read it. It is held as a plain tensor, so a program can fetch,
// print and save it and Python read it (Fluid's LoDRankTable.items()): int64 [n, 2], a
// sequence's index and length per row, longest first, with the levels above the ranked
// one as its LoD.
struct LodRankTable {
  struct Item {
    size_t index;
    size_t length;
  };
  std::vector<std::vector<uint64_t>> coarse_lod;  // the levels above the ranked one
  std::vector<Item> items;                        // longest first
};

LodRankTable RankTableInput(KernelContext& ctx) {
  Tensor t = ctx.Input("RankTable");
  if (t.dtype() != RILL_INT64 || t.ndim() != 2 || t.dims()[1] != 2) {
    throw Error("RankTable ('" + ctx.op().InputName("RankTable") + "') is " + DataTypeName(t.dtype()) + " " +
                DimsString(t.dims()) +
                ", not a rank table (int64 [n, 2] of index and length): make it with "
                "lod_rank_table");
  }
  LodRankTable table;
  table.coarse_lod = t.lod();
  const int64_t* rows = t.data<int64_t>();
  for (int64_t i = 0; i < t.dims()[0]; ++i) {
    table.items.push_back({static_cast<size_t>(rows[2 * i]), static_cast<size_t>(rows[2 * i + 1])});
  }
  return table;
}

// The length of the table's longest sequence: the number of steps.
size_t Steps(const LodRankTable& table) { return table.items.empty() ? 0 : table.items[0].length; }

// The number of the table's sequences longer than `step`: the first ones.
size_t LongerThan(const LodRankTable& table, size_t step) {
  return static_cast<size_t>(std::lower_bound(table.items.begin(), table.items.end(), step,
                                              [](const LodRankTable::Item& a, size_t b) { return a.length > b; }) -
                             table.items.begin());
}

void LodRankTableOp(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const int64_t level = ctx.Attr<int64_t>("level");
  if (level < 0 || static_cast<size_t>(level) >= lod.size()) {
    throw Error("level " + std::to_string(level) + " is not a LoD level of X ('" + ctx.op().InputName("X") +
                "'), which has " + std::to_string(lod.size()));
  }
  SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);  // checks the LoD
  const std::vector<uint64_t>& o = lod[static_cast<size_t>(level)];
  std::vector<size_t> order(o.size() - 1);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return o[a + 1] - o[a] > o[b + 1] - o[b]; });
  int64_t* rows = ctx.AllocateOutput<int64_t>("Out", {static_cast<int64_t>(order.size()), 2});
  for (size_t i = 0; i < order.size(); ++i) {
    rows[2 * i] = static_cast<int64_t>(order[i]);
    rows[2 * i + 1] = static_cast<int64_t>(o[order[i] + 1] - o[order[i]]);
  }
  ctx.Output("Out").set_lod(std::vector<std::vector<uint64_t>>(lod.begin(), lod.begin() + level));
}

void MaxSequenceLen(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  *ctx.AllocateOutput<int64_t>("Out", {1}) = static_cast<int64_t>(Steps(table));
}

// Where a sequence tensor's steps are: step t's entry holds, for each sequence longer than t
// in table order, that sequence's element t at the level below the ranked one (a row, or a
// sequence of the levels below with its LoD).
struct StepLayout {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> rows;  // per step: the rows of each piece, in order
  std::vector<LoD> entry_lod;                                    // per step: the entry's LoD
  std::vector<uint64_t> entry_rows;                              // per step: the entry's rows
  uint64_t total_rows = 0;                                       // of the sequence tensor
};

StepLayout LayoutOf(const LoD& lod, const LodRankTable& table) {
  const size_t level = table.coarse_lod.size();
  const size_t steps = Steps(table);
  StepLayout layout;
  layout.total_rows = lod.empty() ? 0 : lod[0].size() - 1;  // the first level's sequences, then down to rows
  for (const auto& l : lod) layout.total_rows = l[layout.total_rows];
  for (size_t t = 0; t < steps; ++t) {
    const size_t n = LongerThan(table, t);
    layout.rows.emplace_back();
    layout.entry_rows.push_back(0);
    LoD lengths(lod.size() - level - 1);
    for (size_t p = 0; p < n; ++p) {
      const LodSpan span = SpanOf(lod, level + 1, lod[level][table.items[p].index] + t);
      layout.rows.back().emplace_back(span.begin, span.end);
      layout.entry_rows.back() += span.end - span.begin;
      for (size_t k = 0; k < lengths.size(); ++k) {
        lengths[k].insert(lengths[k].end(), span.lengths[k].begin(), span.lengths[k].end());
      }
    }
    layout.entry_lod.push_back(OffsetsOf(lengths));
  }
  return layout;
}

// The LoD of sequence tensor `x` in input `slot`, checked against the table: the ranked
// level exists and packs as many sequences as the table ranks.
LoD SequenceLod(KernelContext& ctx, const char* slot, Tensor x, const LodRankTable& table) {
  SequenceOffsets(ctx.op(), slot, x, SIZE_MAX);
  LoD lod = x.lod();
  const size_t level = table.coarse_lod.size();
  const std::string what = std::string(slot) + " ('" + ctx.op().InputName(slot) + "')";
  if (lod.size() <= level) {
    throw Error(what + " has " + std::to_string(lod.size()) + " LoD levels; the rank table ranks level " +
                std::to_string(level));
  }
  if (lod[level].size() != table.items.size() + 1) {
    throw Error(what + " packs " + std::to_string(lod[level].size() - 1) + " sequences at level " +
                std::to_string(level) + ", the rank table " + std::to_string(table.items.size()));
  }
  return lod;
}

// The LoD of the sequence tensor whose steps the entries of `array` are (array_to_lod_tensor's
// output): the table's levels, then each sequence's steps' parts in the sequences' order.
LoD JoinedLod(Variable array, const LodRankTable& table) {
  const size_t steps = Steps(table);
  const size_t size = array && array.IsTensorArray() ? array.TensorArraySize() : 0;
  if (size < steps) {
    throw Error("the array holds " + std::to_string(size) + " steps; the rank table's longest sequence has " +
                std::to_string(steps));
  }
  std::vector<size_t> rank(table.items.size()), length(table.items.size());
  for (size_t p = 0; p < table.items.size(); ++p) {
    rank[table.items[p].index] = p;
    length[table.items[p].index] = table.items[p].length;
  }
  std::vector<LoD> entry_lod;
  for (size_t t = 0; t < steps; ++t) {
    Tensor entry = array.TensorArrayAt(t);
    if (!entry.initialized()) throw Error("entry " + std::to_string(t) + " of the array was never written");
    entry_lod.push_back(entry.lod());
    const uint64_t units = entry_lod.back().empty() ? static_cast<uint64_t>(entry.ndim() ? entry.dims()[0] : 0)
                                                    : entry_lod.back()[0].size() - 1;
    if (units != LongerThan(table, t) || (t > 0 && entry_lod[t].size() != entry_lod[0].size())) {
      throw Error("entry " + std::to_string(t) + " of the array holds " + std::to_string(units) +
                  " steps' parts with " + std::to_string(entry_lod[t].size()) + " LoD levels; step " +
                  std::to_string(t) + " has " + std::to_string(LongerThan(table, t)) + " sequences" +
                  (t > 0 ? ", entry 0 " + std::to_string(entry_lod[0].size()) + " levels" : std::string()));
    }
  }
  LoD lengths(1 + (entry_lod.empty() ? 0 : entry_lod[0].size()));
  for (size_t s = 0; s < length.size(); ++s) {
    lengths[0].push_back(length[s]);
    for (size_t t = 0; t < length[s]; ++t) {
      const LodSpan span = SpanOf(entry_lod[t], 0, rank[s]);
      for (size_t k = 0; k < span.lengths.size(); ++k) {
        lengths[k + 1].insert(lengths[k + 1].end(), span.lengths[k].begin(), span.lengths[k].end());
      }
    }
  }
  LoD lod = table.coarse_lod;
  for (auto& level : OffsetsOf(lengths)) lod.push_back(std::move(level));
  return lod;
}

// Copies sequence tensor `x`'s steps into the entries of `out` (lod_tensor_to_array).
void SplitIntoSteps(Tensor x, const StepLayout& layout, Variable out) {
  const size_t row = RowBytes(x);
  const char* from = static_cast<const char*>(x.raw_data());
  std::vector<int64_t> dims = x.dims();
  out.ResizeTensorArray(0);
  out.ResizeTensorArray(layout.rows.size());
  for (size_t t = 0; t < layout.rows.size(); ++t) {
    dims[0] = static_cast<int64_t>(layout.entry_rows[t]);
    Tensor entry = out.TensorArrayAt(t);
    char* to = static_cast<char*>(entry.Allocate(x.dtype(), dims));
    for (const auto& [b, e] : layout.rows[t]) {
      CopyBytes(to, from + b * row, (e - b) * row);
      to += (e - b) * row;
    }
    entry.set_lod(layout.entry_lod[t]);
  }
}

// Copies the entries of `array` back into sequence tensor `out` of LoD `lod`
// (array_to_lod_tensor); an entry never written reads as zeros shaped like `like`'s rows
// (for a gradient, where `like` is the sequence tensor).
void JoinSteps(Variable array, const LoD& lod, const StepLayout& layout, Tensor* like, Tensor out) {
  const size_t size = array && array.IsTensorArray() ? array.TensorArraySize() : 0;
  size_t first = 0;
  while (first < size && !array.TensorArrayAt(first).initialized()) ++first;
  if (first == size && like == nullptr) throw Error("the array holds no written entry");
  Tensor shape_of = first < size ? array.TensorArrayAt(first) : *like;
  std::vector<int64_t> dims = shape_of.dims();
  dims[0] = static_cast<int64_t>(layout.total_rows);
  const size_t row = RowBytes(shape_of);
  char* to = static_cast<char*>(out.Allocate(shape_of.dtype(), dims));
  std::memset(to, 0, layout.total_rows * row);
  for (size_t t = 0; t < layout.rows.size() && t < size; ++t) {
    Tensor entry = array.TensorArrayAt(t);
    if (!entry.initialized()) {
      if (like == nullptr) throw Error("entry " + std::to_string(t) + " of the array was never written");
      continue;
    }
    const uint64_t rows = layout.entry_rows[t];
    if (entry.ndim() == 0 || static_cast<uint64_t>(entry.dims()[0]) != rows || RowBytes(entry) != row ||
        entry.dtype() != shape_of.dtype()) {
      throw Error("entry " + std::to_string(t) + " of the array is " + DataTypeName(entry.dtype()) + " " +
                  DimsString(entry.dims()) + "; step " + std::to_string(t) + " has " + std::to_string(rows) +
                  " rows like " + DimsString(shape_of.dims()));
    }
    const char* from = static_cast<const char*>(entry.raw_data());
    for (const auto& [b, e] : layout.rows[t]) {
      CopyBytes(to + b * row, from, (e - b) * row);
      from += (e - b) * row;
    }
  }
  out.set_lod(lod);
}

void LodTensorToArray(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  SplitIntoSteps(x, LayoutOf(SequenceLod(ctx, "X", x, table), table), ctx.OutputVar("Out"));
}

void LodTensorToArrayGrad(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  const LoD lod = SequenceLod(ctx, "X", x, table);
  Variable grads = ctx.InputVarOrNull("Out@GRAD");
  JoinSteps(grads, lod, LayoutOf(lod, table), &x, ctx.Output("X@GRAD"));
}

void ArrayToLodTensor(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  Variable array = ctx.InputVar("X");
  const LoD lod = JoinedLod(array, table);
  JoinSteps(array, lod, LayoutOf(lod, table), nullptr, ctx.Output("Out"));
}

// Out@GRAD's rows follow Out's sequences, whose LoD the array and the table give (a
// gradient need not carry it).
void ArrayToLodTensorGrad(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  const StepLayout layout = LayoutOf(JoinedLod(ctx.InputVar("X"), table), table);
  Tensor g = ctx.Input("Out@GRAD");
  if (g.ndim() == 0 || static_cast<uint64_t>(g.dims()[0]) != layout.total_rows) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " does not have the " + std::to_string(layout.total_rows) +
                " rows of the sequences the array's steps make");
  }
  SplitIntoSteps(g, layout, ctx.OutputVar("X@GRAD"));
}

void ShrinkRnnMemory(KernelContext& ctx) {
  const LodRankTable table = RankTableInput(ctx);
  const double step = ScalarOf(ctx.Input("I"), "I");
  if (step < 0) throw Error("I must be a step, not negative: " + std::to_string(step));
  Tensor x = ctx.Input("X");
  const uint64_t kept = LongerThan(table, static_cast<size_t>(step));
  const int64_t all = x.ndim() > 0 ? x.dims()[0] : 0;
  // X's first `kept` rows, or with a LoD its first `kept` sequences (of its first level)
  // with their LoD.
  std::vector<std::vector<uint64_t>> lod = x.lod();
  int64_t rows = std::min<int64_t>(static_cast<int64_t>(kept), all);
  if (!lod.empty()) {
    SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
    uint64_t end = std::min<uint64_t>(kept, lod[0].size() - 1);
    for (auto& level : lod) {
      level.resize(end + 1);
      end = level.back();
    }
    rows = static_cast<int64_t>(end);
  }
  Tensor out = ctx.Output("Out");
  if (rows == all) {
    out.ShareWith(x);  // the usual step, all sequences still running: a view, no copy
  } else {
    std::vector<int64_t> dims = x.dims();
    dims[0] = rows;
    CopyBytes(out.Allocate(x.dtype(), dims), x.raw_data(), static_cast<size_t>(rows) * RowBytes(x));
  }
  out.set_lod(lod);
}

void ShrinkRnnMemoryGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor x_grad = ctx.Output("X@GRAD");
  if (!ctx.HasInput("Out@GRAD")) return ZerosLike(x, x_grad);
  Tensor g = ctx.Input("Out@GRAD");
  const size_t row = RowBytes(x);
  const int64_t rows = g.ndim() > 0 ? g.dims()[0] : 0;
  if (g.dtype() != x.dtype() || rows > (x.ndim() > 0 ? x.dims()[0] : 0) || (rows > 0 && RowBytes(g) != row)) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not X's " + DimsString(x.dims()) + " first rows");
  }
  char* to = static_cast<char*>(x_grad.Allocate(x.dtype(), x.dims()));
  CopyBytes(to, g.raw_data(), static_cast<size_t>(rows) * row);
  std::memset(to + static_cast<size_t>(rows) * row, 0, TensorBytes(x) - static_cast<size_t>(rows) * row);
}

// X's units, one per table item: the sequences of its first LoD level (with the levels
// below), or its rows without a LoD.
std::vector<LodSpan> Units(KernelContext& ctx, Tensor x, const LodRankTable& table) {
  const LoD lod = x.lod();
  if (!lod.empty()) SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  const uint64_t count = lod.empty() ? static_cast<uint64_t>(x.ndim() > 0 ? x.dims()[0] : 0) : lod[0].size() - 1;
  if (count != table.items.size()) {
    throw Error("X ('" + ctx.op().InputName("X") + "') holds " + std::to_string(count) +
                (lod.empty() ? " rows" : " sequences") + ", the rank table " + std::to_string(table.items.size()));
  }
  std::vector<LodSpan> units;
  for (uint64_t i = 0; i < count; ++i) units.push_back(SpanOf(lod, 0, i));
  return units;
}

// Out's unit p = X's unit items[p].index, with its LoD (forward); or the reverse
// (gradient: X@GRAD takes X's LoD).
void Reorder(KernelContext& ctx, const char* in, const char* out, bool inverse) {
  const LodRankTable table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  const std::vector<LodSpan> units = Units(ctx, x, table);
  Tensor v = ctx.Input(in);
  if (v.dims() != x.dims()) throw Error(std::string(in) + " " + DimsString(v.dims()) + " is not shaped like X");
  const size_t row = RowBytes(x);
  const char* from = static_cast<const char*>(v.raw_data());
  char* to = static_cast<char*>(ctx.Output(out).Allocate(v.dtype(), v.dims()));
  LoD lengths(x.lod().size());
  uint64_t sorted = 0;  // rows of the units in table order so far
  for (const auto& item : table.items) {
    const LodSpan& unit = units[item.index];
    const size_t bytes = (unit.end - unit.begin) * row;
    if (inverse) {
      CopyBytes(to + unit.begin * row, from + sorted * row, bytes);
    } else {
      CopyBytes(to + sorted * row, from + unit.begin * row, bytes);
    }
    sorted += unit.end - unit.begin;
    for (size_t k = 0; k < lengths.size(); ++k) {
      lengths[k].insert(lengths[k].end(), unit.lengths[k].begin(), unit.lengths[k].end());
    }
  }
  ctx.Output(out).set_lod(inverse ? x.lod() : OffsetsOf(lengths));
}

void ReorderByRank(KernelContext& ctx) { Reorder(ctx, "X", "Out", false); }
void ReorderByRankGrad(KernelContext& ctx) { Reorder(ctx, "Out@GRAD", "X@GRAD", true); }

}  // namespace

void RegisterLodRankTable(Registrar& r) {
  r.Op(OpSchema("lod_rank_table")
           .Doc("Out = the rank table of X's LoD level `level`: its sequences longest first (a stable sort), each "
                "as (index, length), with the levels above it. As Paddle's.")
           .Input("X", "a LoD tensor")
           .Output("Out", "int64 [n, 2]: each sequence's index and length, longest first; LoD: the levels above")
           .Attr("level", int64_t{0}, "the LoD level to rank"));
  r.Kernel("lod_rank_table", RILL_CPU, RILL_ANY_DTYPE, &LodRankTableOp);
  r.Op(OpSchema("max_sequence_len")
           .Doc("Out = the length of the rank table's longest sequence (0 for none), int64 [1].")
           .Input("RankTable", "a rank table")
           .Output("Out", "int64 [1]"));
  r.Kernel("max_sequence_len", RILL_CPU, RILL_ANY_DTYPE, &MaxSequenceLen);

  const OpSchema to_array =
      OpSchema("lod_tensor_to_array")
          .Doc(
              "Out = a tensor array of X's steps: entry t holds row t of each sequence longer than t, in the rank "
              "table's order (DynamicRNN's step input). The table ranks X's last LoD level.")
          .Input("X", "[R, ...], a LoD tensor")
          .Input("RankTable", "X's rank table")
          .Output("Out", "a tensor array, one entry per step")
          .Grad("lod_tensor_to_array_grad", "X,RankTable,Out@GRAD", "X");
  r.Op(to_array);
  r.Op(to_array.MakeGradSchema().KernelDtypeFrom("X"));
  r.Kernel("lod_tensor_to_array", RILL_CPU, RILL_ANY_DTYPE, &LodTensorToArray);
  r.Kernel("lod_tensor_to_array_grad", RILL_CPU, RILL_ANY_DTYPE, &LodTensorToArrayGrad);

  const OpSchema from_array =
      OpSchema("array_to_lod_tensor")
          .Doc(
              "Out = the steps of tensor array X put back into sequences, each in its own order, with the LoD "
              "the rank table records (lod_tensor_to_array's inverse).")
          .Input("X", "a tensor array, one entry per step")
          .Input("RankTable", "the rank table the steps follow")
          .Output("Out", "a LoD tensor")
          .Grad("array_to_lod_tensor_grad", "X,RankTable,Out@GRAD", "X");
  r.Op(from_array);
  r.Op(from_array.MakeGradSchema().KernelDtypeFrom("Out@GRAD"));
  r.Kernel("array_to_lod_tensor", RILL_CPU, RILL_ANY_DTYPE, &ArrayToLodTensor);
  r.Kernel("array_to_lod_tensor_grad", RILL_CPU, RILL_ANY_DTYPE, &ArrayToLodTensorGrad);

  const OpSchema shrink =
      OpSchema("shrink_rnn_memory")
          .Doc(
              "Out = X's first rows, one per sequence of the rank table longer than step I: a DynamicRNN "
              "memory (in table order) at step I.")
          .Input("X", "[N, ...], rows in rank-table order")
          .Input("RankTable", "the rank table")
          .Input("I", "the step, an integer [1]")
          .Output("Out", "X's first rows")
          .Grad("shrink_rnn_memory_grad", "X,Out@GRAD", "X");
  r.Op(shrink);
  r.Op(shrink.MakeGradSchema());
  r.Kernel("shrink_rnn_memory", RILL_CPU, RILL_ANY_DTYPE, &ShrinkRnnMemory);
  r.Kernel("shrink_rnn_memory_grad", RILL_CPU, RILL_ANY_DTYPE, &ShrinkRnnMemoryGrad);

  const OpSchema reorder =
      OpSchema("reorder_lod_tensor_by_rank")
          .Doc("Out = X's sequences (its first LoD level, or its rows without one) in the rank table's order.")
          .Input("X", "a tensor, one sequence or row per table item")
          .Input("RankTable", "the rank table")
          .Output("Out", "shaped like X")
          .Grad("reorder_lod_tensor_by_rank_grad", "X,RankTable,Out@GRAD", "X");
  r.Op(reorder);
  r.Op(reorder.MakeGradSchema());
  r.Kernel("reorder_lod_tensor_by_rank", RILL_CPU, RILL_ANY_DTYPE, &ReorderByRank);
  r.Kernel("reorder_lod_tensor_by_rank_grad", RILL_CPU, RILL_ANY_DTYPE, &ReorderByRankGrad);
}

}  // namespace rill::math
