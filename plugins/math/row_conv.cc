// row_conv (and its gradient): the lookahead convolution of Deep Speech 2, with Paddle's
// contract (paddle/fluid/operators/row_conv_op.*). Each row of a sequence becomes the sum
// of itself and the next K - 1 rows of that sequence, each scaled element-wise by its row
// of Filter [K, D]: Out[t] = sum over k < K with t + k in the sequence of X[t + k] * W[k].
// X is [R, D] with LoD (its last level's sequences) or, without LoD, [B, T, D] (each of B a
// sequence of T rows). Out is shaped like X and keeps its LoD.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "row_conv_loops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// The sequences of X as row offsets into a [rows, D] view, and D.
struct Rows {
  std::vector<uint64_t> offsets;
  int64_t width = 0;
};

Rows RowsOf(KernelContext& ctx, const Tensor& x, const Tensor& filter) {
  Rows r;
  if (!x.lod().empty()) {
    r.offsets = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
    if (x.ndim() != 2) throw Error("X " + DimsString(x.dims()) + " with LoD must be [R, D]");
  } else {
    if (x.ndim() != 3) throw Error("X " + DimsString(x.dims()) + " without LoD must be [B, T, D]");
    for (int64_t b = 0; b <= x.dims()[0]; ++b) r.offsets.push_back(static_cast<uint64_t>(b * x.dims()[1]));
  }
  r.width = x.dims().back();
  if (filter.ndim() != 2 || filter.dims()[1] != r.width || filter.dims()[0] < 1) {
    throw Error("Filter " + DimsString(filter.dims()) + " must be [K, " + std::to_string(r.width) +
                "]: one row of weights for each row of lookahead");
  }
  return r;
}

// Calls f(k, t0, n): rows t0 .. t0 + n - 1 of a sequence each take row t + k times W[k],
// for every sequence and every k that reaches a row inside it.
template <class F> void ForEachLookahead(const Rows& r, int64_t context, F f) {
  for (size_t s = 0; s + 1 < r.offsets.size(); ++s) {
    const int64_t begin = static_cast<int64_t>(r.offsets[s]), length = static_cast<int64_t>(r.offsets[s + 1]) - begin;
    for (int64_t k = 0; k < context && k < length; ++k) f(k, begin, length - k);
  }
}

template <class T> void RowConv(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), filter = ctx.Input("Filter");
  const Rows r = RowsOf(ctx, x, filter);
  const int64_t context = filter.dims()[0];
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const T *px = x.data<T>(), *pw = filter.data<T>();
  const int64_t d = r.width, seqs = static_cast<int64_t>(r.offsets.size()) - 1;
  const LookaheadLoop<T> add_lookahead = LookaheadLoopFor<T>();
  // A row of Out at a time, whole (its K terms added in k's order), in sequence chunks on
  // the team: each row written once, its inputs a few rows that stay in cache.
  WriteOutput<T>(ctx, "Out", {"X", "Filter"}, x.dims(), [&](T* p) {
    ParallelFor(seqs, 2.0 * sizeof(T) * static_cast<double>(x.numel()), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const auto end = static_cast<int64_t>(r.offsets[static_cast<size_t>(s) + 1]);
        for (auto t = static_cast<int64_t>(r.offsets[static_cast<size_t>(s)]); t < end; ++t) {
          add_lookahead(p + t * d, px + t * d, pw, std::min(context, end - t), d);
        }
      }
    });
  });
  ctx.Output("Out").set_lod(lod);
}

template <class T> void RowConvGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), filter = ctx.Input("Filter"), g = ctx.Input("Out@GRAD");
  const Rows r = RowsOf(ctx, x, filter);
  if (g.dims() != x.dims()) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X");
  const int64_t rows = r.width > 0 ? x.numel() / r.width : 0, context = filter.dims()[0];
  ConstMatrixMap<T> in(x.data<T>(), rows, r.width), w(filter.data<T>(), context, r.width);
  ConstMatrixMap<T> dout(g.data<T>(), rows, r.width);
  if (ctx.HasOutput("Filter@GRAD")) {
    WriteOutput<T>(ctx, "Filter@GRAD", {"X", "Filter", "Out@GRAD"}, filter.dims(), [&](T* p) {
      MatrixMap<T> dw(p, context, r.width);
      dw.setZero();
      ForEachLookahead(r, context, [&](int64_t k, int64_t t0, int64_t n) {
        dw.row(k).array() += (dout.middleRows(t0, n).array() * in.middleRows(t0 + k, n).array()).colwise().sum();
      });
    });
  }
  if (ctx.HasOutput("X@GRAD")) {
    const std::vector<std::vector<uint64_t>> lod = x.lod();
    WriteOutput<T>(ctx, "X@GRAD", {"Filter", "Out@GRAD"}, x.dims(), [&](T* p) {
      MatrixMap<T> dx(p, rows, r.width);
      dx.setZero();
      ForEachLookahead(r, context, [&](int64_t k, int64_t t0, int64_t n) {
        dx.middleRows(t0 + k, n).array() += dout.middleRows(t0, n).array().rowwise() * w.row(k).array();
      });
    });
    ctx.Output("X@GRAD").set_lod(lod);
  }
}

}  // namespace

void RegisterRowConv(Registrar& r) {
  const OpSchema conv =
      OpSchema("row_conv")
          .Doc(
              "Out[t] = sum over k < K of X[t + k] * Filter[k] (element-wise), within each sequence: the "
              "lookahead convolution. As Paddle's.")
          .Input("X", "[R, D] with LoD, or [B, T, D] without")
          .Input("Filter", "[K, D]")
          .Output("Out", "shaped like X, with its LoD")
          .KernelDtypeFrom("X")
          .Grad("row_conv_grad", "X,Filter,Out@GRAD", "X,Filter");
  r.Op(conv);
  r.Op(conv.MakeGradSchema());
  RegisterCpu<float, double>(r, "row_conv", [](auto t) { return &RowConv<decltype(t)>; });
  RegisterCpu<float, double>(r, "row_conv_grad", [](auto t) { return &RowConvGrad<decltype(t)>; });
}

}  // namespace rill::math
