// sequence_scatter (and its gradient): X with Updates added at Ids, one sequence of Ids per
// row of X, with Paddle's contract (paddle/fluid/operators/sequence_ops/
// sequence_scatter_op.*). Ids ([M, 1] int64, a LoD tensor of S <= X's rows sequences) and
// Updates (M values) pair up; the i-th id of sequence s adds its update to element ids[i]
// of row s of X (a row being all of X's dims after the first, flattened): Out = X, then
// Out[s][ids[i]] += Updates[i]. Repeated ids add up. The gradients: X@GRAD = Out@GRAD and
// Updates@GRAD[i] = Out@GRAD[s][ids[i]], under Ids' LoD.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Calls sequence(s, begin, end, id) for each sequence s of Ids, its ids being id[begin, end),
// once every id is checked to lie within X's row (X's dims after the first, flattened). The
// sequences are split across the passes' team: each touches only row s of X's shape, or
// its own ids' values, so no two calls write the same element. Returns how many sequences
// Ids has.
template <class Sequence>
uint64_t ForEachSequence(KernelContext& ctx, const std::vector<int64_t>& x_dims, double bytes, Sequence sequence) {
  Tensor ids = ctx.Input("Ids");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "Ids", ids, SIZE_MAX);
  if (ids.dtype() != RILL_INT64) throw Error("Ids must be int64, not " + std::string(DataTypeName(ids.dtype())));
  if (ids.numel() != (ids.ndim() > 0 ? ids.dims()[0] : 0)) {
    throw Error("Ids " + DimsString(ids.dims()) + " must be [M, 1]: one id a row");
  }
  if (x_dims.empty()) throw Error("X must have a row for each sequence of Ids, not be a scalar");
  const uint64_t seqs = o.size() - 1;
  if (seqs > static_cast<uint64_t>(x_dims[0])) {
    throw Error("Ids packs " + std::to_string(seqs) + " sequences, X has " + std::to_string(x_dims[0]) +
                " rows: each sequence scatters into its own row of X");
  }
  const int64_t width = Product(x_dims, 1, x_dims.size());
  const int64_t* id = ids.data<int64_t>();
  for (uint64_t i = 0; i < o.back(); ++i) {
    if (id[i] < 0 || id[i] >= width) {
      throw Error("Ids[" + std::to_string(i) + "] = " + std::to_string(id[i]) + " is outside X's row (" +
                  std::to_string(width) + " elements)");
    }
  }
  ParallelFor(static_cast<int64_t>(seqs), bytes, [&](int64_t, int64_t first, int64_t last) {
    for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(last); ++s) sequence(s, o[s], o[s + 1], id);
  });
  return seqs;
}

void CheckUpdates(const Tensor& ids, const Tensor& updates, const char* slot) {
  if (updates.numel() != ids.numel()) {
    throw Error(std::string(slot) + " " + DimsString(updates.dims()) + " must hold one value for each of Ids' " +
                std::to_string(ids.numel()) + " ids");
  }
}

template <class T> void SequenceScatter(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), ids = ctx.Input("Ids"), updates = ctx.Input("Updates");
  CheckUpdates(ids, updates, "Updates");
  const T *u = updates.data<T>(), *px = x.data<T>();
  const int64_t width = Product(x.dims(), 1, x.dims().size());
  const auto bytes = 2.0 * sizeof(T) * static_cast<double>(x.numel());
  // Each sequence's row copied from X and its updates added while it is in cache; the rows
  // no sequence scatters into, copied after.
  WriteOutput<T>(ctx, "Out", {"X", "Ids", "Updates"}, x.dims(), [&](T* out) {
    const uint64_t seqs =
        ForEachSequence(ctx, x.dims(), bytes, [&](size_t s, uint64_t begin, uint64_t end, const int64_t* id) {
          T* row = out + static_cast<int64_t>(s) * width;
          std::copy(px + static_cast<int64_t>(s) * width, px + static_cast<int64_t>(s + 1) * width, row);
          for (uint64_t i = begin; i < end; ++i) row[id[i]] += u[i];
        });
    const int64_t done = static_cast<int64_t>(seqs) * width;
    ParallelCopy(px + done, out + done, sizeof(T) * static_cast<size_t>(x.numel() - done));
  });
}

template <class T> void SequenceScatterGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD"), ids = ctx.Input("Ids");
  if (ctx.HasOutput("Updates@GRAD")) {
    Tensor updates = ctx.Input("Updates");
    CheckUpdates(ids, updates, "Updates");
    const T* dout = g.data<T>();
    const std::vector<std::vector<uint64_t>> lod = ids.lod();
    const int64_t width = Product(g.dims(), 1, g.dims().size());
    WriteOutput<T>(ctx, "Updates@GRAD", {"Out@GRAD"}, updates.dims(), [&](T* du) {
      ForEachSequence(ctx, g.dims(), 2.0 * sizeof(T) * static_cast<double>(ids.numel()),
                      [&](size_t s, uint64_t begin, uint64_t end, const int64_t* id) {
                        const T* row = dout + static_cast<int64_t>(s) * width;
                        for (uint64_t i = begin; i < end; ++i) du[i] = row[id[i]];
                      });
    });
    ctx.Output("Updates@GRAD").set_lod(lod);
  }
  if (ctx.HasOutput("X@GRAD")) {
    WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, g.dims(),
                   [&](T* dx) { ParallelCopy(g.raw_data(), dx, sizeof(T) * static_cast<size_t>(g.numel())); });
  }
}

}  // namespace

void RegisterSequenceScatter(Registrar& r) {
  const OpSchema scatter =
      OpSchema("sequence_scatter")
          .Doc(
              "Out = X, then Out[s][Ids[i]] += Updates[i] for the ids i of each sequence s of Ids (row s of X, "
              "flattened). As Paddle's.")
          .Input("X", "[N, ...]")
          .Input("Ids", "[M, 1] int64, a LoD tensor of at most N sequences")
          .Input("Updates", "M values, one for each id")
          .Output("Out", "shaped like X")
          .KernelDtypeFrom("X")
          .Grad("sequence_scatter_grad", "Ids,Updates,Out@GRAD", "X,Updates");
  r.Op(scatter);
  r.Op(scatter.MakeGradSchema().KernelDtypeFrom("Out@GRAD"));
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_scatter",
                                               [](auto t) { return &SequenceScatter<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_scatter_grad", [](auto t) { return &SequenceScatterGrad<decltype(t)>; });
}

}  // namespace rill::math
