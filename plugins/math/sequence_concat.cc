// sequence_concat: sequence s of Out is sequence s of every X[i] after one another, with
// Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_concat_op.*): each X[i]
// packs the same number of sequences (its last LoD level) in rows of one shape; Out's LoD
// adds their lengths. The gradient hands each X[i] its rows of Out@GRAD back.
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

struct Pieces {
  std::vector<std::vector<uint64_t>> offsets;  // per input
  std::vector<uint64_t> out;                   // Out's offsets
  int64_t width = 0;                           // elements per row
};

Pieces PiecesOf(KernelContext& ctx) {
  const size_t n = ctx.op().InputCount("X");
  Pieces p;
  std::vector<int64_t> row;
  for (size_t i = 0; i < n; ++i) {
    Tensor x = ctx.Input("X", i);
    const std::string what = "X[" + std::to_string(i) + "] ('" + ctx.op().InputName("X", i) + "')";
    if (x.lod().empty()) throw Error(what + " has no LoD: it must pack sequences");
    p.offsets.push_back(x.lod().back());
    SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);  // checked like any sequence input
    const std::vector<int64_t> d = x.dims();
    const std::vector<int64_t> shape(d.begin() + 1, d.end());
    if (i == 0) row = shape;
    if (shape != row || p.offsets[i].size() != p.offsets[0].size()) {
      throw Error(what + " " + DimsString(d) + " with " + std::to_string(p.offsets[i].size() - 1) +
                  " sequences does not match X[0]'s rows or sequences (" + std::to_string(p.offsets[0].size() - 1) +
                  ")");
    }
  }
  p.width = Product(row, 0, row.size());
  p.out.assign(p.offsets[0].size(), 0);
  for (size_t s = 1; s < p.out.size(); ++s) {
    p.out[s] = p.out[s - 1];
    for (const auto& o : p.offsets) p.out[s] += o[s] - o[s - 1];
  }
  return p;
}

// Calls move(i, x_row, out_row, rows) for each run of rows of input i in Out.
template <class Move> void ForEachPiece(const Pieces& p, Move move) {
  for (size_t s = 0; s + 1 < p.out.size(); ++s) {
    uint64_t at = p.out[s];
    for (size_t i = 0; i < p.offsets.size(); ++i) {
      const uint64_t rows = p.offsets[i][s + 1] - p.offsets[i][s];
      move(i, p.offsets[i][s], at, rows);
      at += rows;
    }
  }
}

template <class T> void SequenceConcat(KernelContext& ctx) {
  const Pieces p = PiecesOf(ctx);
  std::vector<int64_t> dims = ctx.Input("X", 0).dims();
  dims[0] = static_cast<int64_t>(p.out.back());
  std::vector<const T*> xs;
  for (size_t i = 0; i < p.offsets.size(); ++i) xs.push_back(ctx.Input("X", i).data<T>());
  WriteOutput<T>(ctx, "Out", {"X"}, dims, [&](T* out) {
    ForEachPiece(p, [&](size_t i, uint64_t from, uint64_t to, uint64_t rows) {
      std::memcpy(out + to * p.width, xs[i] + from * p.width, sizeof(T) * rows * static_cast<size_t>(p.width));
    });
  });
  ctx.Output("Out").set_lod({p.out});
}

template <class T> void SequenceConcatGrad(KernelContext& ctx) {
  const Pieces p = PiecesOf(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  if (g.numel() != static_cast<int64_t>(p.out.back()) * p.width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  }
  const OpInfo op = ctx.op();
  std::vector<T*> dx(p.offsets.size(), nullptr);  // null: that input gets no gradient
  for (size_t i = 0; i < dx.size(); ++i) {
    if (i < op.OutputCount("X@GRAD") && op.OutputName("X@GRAD", i) != RILL_EMPTY_VAR_NAME) {
      Tensor x = ctx.Input("X", i);
      Tensor out = ctx.Output("X@GRAD", i);
      dx[i] = out.Allocate<T>(x.dims());
      out.set_lod(x.lod());
    }
  }
  const T* pg = g.data<T>();
  ForEachPiece(p, [&](size_t i, uint64_t to, uint64_t from, uint64_t rows) {
    if (dx[i] != nullptr) {
      std::memcpy(dx[i] + to * p.width, pg + from * p.width, sizeof(T) * rows * static_cast<size_t>(p.width));
    }
  });
}

}  // namespace

void RegisterSequenceConcat(Registrar& r) {
  const OpSchema concat =
      OpSchema("sequence_concat")
          .Doc(
              "Out's sequence s = sequence s of each X[i] after one another (their last LoD level); Out's LoD "
              "adds their lengths. As Paddle's.")
          .Input("X", "LoD tensors of as many sequences, rows of one shape", RILL_SLOT_DUPLICABLE)
          .Output("Out", "the joined sequences")
          .KernelDtypeFrom("X")
          .Grad("sequence_concat_grad", "X,Out@GRAD", "X");
  r.Op(concat);
  r.Op(concat.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_concat",
                                               [](auto t) { return &SequenceConcat<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_concat_grad", [](auto t) { return &SequenceConcatGrad<decltype(t)>; });
}

}  // namespace rill::math
