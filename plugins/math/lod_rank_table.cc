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
// The sequences are those of the table's level when it is the input's last LoD level (each
// step unit a row); a level with levels below it is refused.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "memory_loops.h"
#include "ops.h"
#include "sequence.h"
#include "tensor_copy.h"

namespace rill::math {
namespace {

constexpr const char* kRankTableType = "math.lod_rank_table";

struct LodRankTable {
  struct Item {
    size_t index;
    size_t length;
  };
  std::vector<std::vector<uint64_t>> coarse_lod;  // the levels above the ranked one
  std::vector<Item> items;                        // longest first
};

const VarType& RankTableType() {
  static const VarType type = VarType::Find(kRankTableType);
  return type;
}

void DescribeRankTable(const void* value, char* buf, size_t cap) {
  const auto* t = static_cast<const LodRankTable*>(value);
  int n = std::snprintf(buf, cap, "lod rank table of %zu sequences", t->items.size());
  for (size_t i = 0; i < t->items.size() && i < 6 && n > 0 && static_cast<size_t>(n) < cap; ++i) {
    n += std::snprintf(buf + n, cap - static_cast<size_t>(n), "%s#%zu:%zu", i ? ", " : " {", t->items[i].index,
                       t->items[i].length);
  }
  if (!t->items.empty() && n > 0 && static_cast<size_t>(n) < cap) {
    std::snprintf(buf + n, cap - static_cast<size_t>(n), "%s}", t->items.size() > 6 ? ", ..." : "");
  }
}

const LodRankTable& RankTableInput(KernelContext& ctx) {
  const LodRankTable* t = ctx.InputVar("RankTable").Custom<LodRankTable>(RankTableType());
  if (t == nullptr) {
    throw Error("RankTable ('" + ctx.op().InputName("RankTable") +
                "') holds no rank table: make it with lod_rank_table");
  }
  return *t;
}

// The number of the table's sequences longer than `step`: the first ones.
size_t LongerThan(const LodRankTable& table, size_t step) {
  return static_cast<size_t>(std::lower_bound(table.items.begin(), table.items.end(), step,
                                              [](const LodRankTable::Item& a, size_t b) { return a.length > b; }) -
                             table.items.begin());
}

// Bytes of one row of `t` (its first dimension's unit).
size_t RowBytes(Tensor t) {
  const int64_t rows = t.ndim() > 0 ? t.dims()[0] : 1;
  return rows > 0 ? static_cast<size_t>(t.numel() / rows) * DataTypeSize(t.dtype()) : 0;
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
  auto table = std::make_unique<LodRankTable>();
  table->coarse_lod.assign(lod.begin(), lod.begin() + level);
  const std::vector<uint64_t>& o = lod[static_cast<size_t>(level)];
  for (size_t i = 0; i + 1 < o.size(); ++i) table->items.push_back({i, static_cast<size_t>(o[i + 1] - o[i])});
  std::stable_sort(table->items.begin(), table->items.end(),
                   [](const LodRankTable::Item& a, const LodRankTable::Item& b) { return a.length > b.length; });
  ctx.OutputVar("Out").SetCustom(RankTableType(), table.release());
}

void MaxSequenceLen(KernelContext& ctx) {
  const LodRankTable& table = RankTableInput(ctx);
  *ctx.AllocateOutput<int64_t>("Out", {1}) = table.items.empty() ? 0 : static_cast<int64_t>(table.items[0].length);
}

// The offsets of the ranked level in `x`, which must be its last: each step unit a row.
std::vector<uint64_t> RankedOffsets(KernelContext& ctx, const char* slot, Tensor x, const LodRankTable& table) {
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), slot, x, SIZE_MAX);
  const std::string what = std::string(slot) + " ('" + ctx.op().InputName(slot) + "')";
  if (x.lod().size() != table.coarse_lod.size() + 1) {
    throw Error(what + " has " + std::to_string(x.lod().size()) + " LoD levels; the rank table ranks level " +
                std::to_string(table.coarse_lod.size()) + ", which must be its last");
  }
  if (o.size() != table.items.size() + 1) {
    throw Error(what + " packs " + std::to_string(o.size() - 1) + " sequences, the rank table " +
                std::to_string(table.items.size()));
  }
  return o;
}

// Splits `x` (rows of sequences with offsets `o`) into `out`: entry t the row t of every
// sequence longer than t, in table order.
void SplitIntoSteps(Tensor x, const std::vector<uint64_t>& o, const LodRankTable& table, Variable out) {
  const size_t steps = table.items.empty() ? 0 : table.items[0].length;
  const size_t row = RowBytes(x);
  const char* from = static_cast<const char*>(x.raw_data());
  std::vector<int64_t> dims = x.dims();
  out.ResizeTensorArray(0);
  out.ResizeTensorArray(steps);
  for (size_t t = 0; t < steps; ++t) {
    const size_t n = LongerThan(table, t);
    dims[0] = static_cast<int64_t>(n);
    char* to = static_cast<char*>(out.TensorArrayAt(t).Allocate(x.dtype(), dims));
    for (size_t p = 0; p < n; ++p) CopyBytes(to + p * row, from + (o[table.items[p].index] + t) * row, row);
  }
}

// Joins the steps of `array` back into `out`, each sequence's rows in its own order; an
// entry never written reads as zeros shaped like `like`'s rows (for a gradient).
void JoinSteps(Variable array, const LodRankTable& table, Tensor* like, Tensor out) {
  const size_t steps = table.items.empty() ? 0 : table.items[0].length;
  const size_t size = array && array.IsTensorArray() ? array.TensorArraySize() : 0;
  if (like == nullptr && size < steps) {
    throw Error("the array holds " + std::to_string(size) + " steps; the rank table's longest sequence has " +
                std::to_string(steps));
  }
  std::vector<uint64_t> offsets{0};
  std::vector<size_t> start(table.items.size());  // by sequence index
  {
    std::vector<size_t> length(table.items.size());
    for (const auto& item : table.items) length[item.index] = item.length;
    for (size_t s = 0; s < length.size(); ++s) {
      start[s] = offsets.back();
      offsets.push_back(offsets.back() + length[s]);
    }
  }
  // Row shape and dtype: the first written entry's, or `like`'s.
  size_t first = 0;
  while (first < size && !array.TensorArrayAt(first).initialized()) ++first;
  if (first == size && like == nullptr) throw Error("the array holds no written entry");
  Tensor shape_of = first < size ? array.TensorArrayAt(first) : *like;
  std::vector<int64_t> dims = shape_of.dims();
  dims[0] = static_cast<int64_t>(offsets.back());
  const size_t row = RowBytes(shape_of);
  char* to = static_cast<char*>(out.Allocate(shape_of.dtype(), dims));
  std::memset(to, 0, static_cast<size_t>(offsets.back()) * row);
  for (size_t t = 0; t < steps && t < size; ++t) {
    Tensor entry = array.TensorArrayAt(t);
    if (!entry.initialized()) {
      if (like == nullptr) throw Error("entry " + std::to_string(t) + " of the array was never written");
      continue;
    }
    const size_t n = LongerThan(table, t);
    if (entry.ndim() == 0 || entry.dims()[0] != static_cast<int64_t>(n) || RowBytes(entry) != row ||
        entry.dtype() != shape_of.dtype()) {
      throw Error("entry " + std::to_string(t) + " of the array is " + DataTypeName(entry.dtype()) + " " +
                  DimsString(entry.dims()) + "; step " + std::to_string(t) + " has " + std::to_string(n) +
                  " sequences, rows like entry " + DimsString(shape_of.dims()));
    }
    const char* from = static_cast<const char*>(entry.raw_data());
    for (size_t p = 0; p < n; ++p) CopyBytes(to + (start[table.items[p].index] + t) * row, from + p * row, row);
  }
  std::vector<std::vector<uint64_t>> lod = table.coarse_lod;
  lod.push_back(std::move(offsets));
  out.set_lod(lod);
}

void LodTensorToArray(KernelContext& ctx) {
  const LodRankTable& table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  SplitIntoSteps(x, RankedOffsets(ctx, "X", x, table), table, ctx.OutputVar("Out"));
}

void LodTensorToArrayGrad(KernelContext& ctx) {
  const LodRankTable& table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  RankedOffsets(ctx, "X", x, table);
  Variable grads = ctx.InputVarOrNull("Out@GRAD");
  Variable none(nullptr);
  JoinSteps(grads ? grads : none, table, &x, ctx.Output("X@GRAD"));
}

void ArrayToLodTensor(KernelContext& ctx) {
  JoinSteps(ctx.InputVar("X"), RankTableInput(ctx), nullptr, ctx.Output("Out"));
}

// Out@GRAD's rows follow Out's sequences, whose offsets the table gives (a gradient need not
// carry the LoD).
void ArrayToLodTensorGrad(KernelContext& ctx) {
  const LodRankTable& table = RankTableInput(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  std::vector<uint64_t> length(table.items.size());
  for (const auto& item : table.items) length[item.index] = item.length;
  std::vector<uint64_t> offsets{0};
  for (uint64_t n : length) offsets.push_back(offsets.back() + n);
  if (g.ndim() == 0 || static_cast<uint64_t>(g.dims()[0]) != offsets.back()) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " does not have the " + std::to_string(offsets.back()) +
                " rows of the rank table's sequences");
  }
  SplitIntoSteps(g, offsets, table, ctx.OutputVar("X@GRAD"));
}

void ShrinkRnnMemory(KernelContext& ctx) {
  const LodRankTable& table = RankTableInput(ctx);
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

// The rows of X's units (sequences of its first LoD level, or rows without one), checked
// to be one per table item.
SequenceRanges Units(KernelContext& ctx, const char* slot, Tensor x, const LodRankTable& table) {
  SequenceRanges units;
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  if (lod.empty()) {
    for (int64_t r = 0; r < (x.ndim() > 0 ? x.dims()[0] : 0); ++r) units.emplace_back(r, r + 1);
  } else {
    if (lod.size() > 1) {
      throw Error(std::string(slot) + " ('" + ctx.op().InputName(slot) + "') has " + std::to_string(lod.size()) +
                  " LoD levels; reordering handles one");
    }
    units = RangesOfOffsets(SequenceOffsets(ctx.op(), slot, x, 1));
  }
  if (units.size() != table.items.size()) {
    throw Error(std::string(slot) + " ('" + ctx.op().InputName(slot) + "') holds " + std::to_string(units.size()) +
                (lod.empty() ? " rows" : " sequences") + ", the rank table " + std::to_string(table.items.size()));
  }
  return units;
}

// Out's unit p = X's unit items[p].index (forward), or the reverse (gradient).
void Reorder(KernelContext& ctx, const char* in, const char* out, bool inverse) {
  const LodRankTable& table = RankTableInput(ctx);
  Tensor x = ctx.Input("X");
  const SequenceRanges units = Units(ctx, "X", x, table);
  Tensor v = ctx.Input(in);
  if (v.dims() != x.dims()) throw Error(std::string(in) + " " + DimsString(v.dims()) + " is not shaped like X");
  const size_t row = RowBytes(x);
  std::vector<uint64_t> offsets{0};  // of Out's units, when X has a LoD
  for (const auto& item : table.items) {
    const auto [b, e] = units[item.index];
    offsets.push_back(offsets.back() + static_cast<uint64_t>(e - b));
  }
  const char* from = static_cast<const char*>(v.raw_data());
  char* to = static_cast<char*>(ctx.Output(out).Allocate(v.dtype(), v.dims()));
  for (size_t p = 0; p < table.items.size(); ++p) {
    const auto [b, e] = units[table.items[p].index];
    const size_t bytes = static_cast<size_t>(e - b) * row;
    char* sorted = inverse ? const_cast<char*>(from) + offsets[p] * row : to + offsets[p] * row;
    char* original =
        inverse ? to + static_cast<size_t>(b) * row : const_cast<char*>(from) + static_cast<size_t>(b) * row;
    if (inverse) {
      CopyBytes(original, sorted, bytes);
    } else {
      CopyBytes(sorted, original, bytes);
    }
  }
  if (inverse) {
    ctx.Output(out).set_lod(x.lod());
  } else if (!x.lod().empty()) {
    ctx.Output(out).set_lod({offsets});
  }
}

void ReorderByRank(KernelContext& ctx) { Reorder(ctx, "X", "Out", false); }
void ReorderByRankGrad(KernelContext& ctx) { Reorder(ctx, "Out@GRAD", "X@GRAD", true); }

}  // namespace

void RegisterLodRankTable(Registrar& r) {
  r.VarType<LodRankTable>(kRankTableType, &DescribeRankTable, true);
  r.Op(OpSchema("lod_rank_table")
           .Doc("Out = the rank table of X's LoD level `level`: its sequences longest first (a stable sort), each "
                "as (index, length), with the levels above it. As Paddle's.")
           .Input("X", "a LoD tensor")
           .Output("Out", "a rank table (LOD_RANK_TABLE)")
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
