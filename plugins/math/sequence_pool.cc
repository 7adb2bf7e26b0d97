// sequence_pool, sequence_pool_grad: one row per sequence of a LoD tensor, with Paddle's
// contract (paddle/fluid/operators/sequence_ops/sequence_pool_op.*, math/sequence_pooling.cc).
//
// X is [R, ...] packing S sequences (its last LoD level; at most 2 levels). Out is
// [S, ...]: per sequence and feature, by `pooltype`, the SUM of its rows, their AVERAGE
// (the sum over the length), SQRT (the sum over the length's square root), MAX, or its
// FIRST or LAST row; an empty sequence gives `pad_value`. Out keeps X's first level when X
// has two, and has no LoD otherwise. MAX also writes MaxIndex (int32, shaped like Out):
// the row of X each maximum came from (the first of equal ones), -1 for an empty sequence.
// The gradient sends Out@GRAD back to the rows each pooling read: all rows (scaled by
// 1 / length or 1 / sqrt(length) for AVERAGE and SQRT), the first or last, or the row
// MaxIndex names; other rows get 0.
#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction_loops.h"
#include "sequence.h"

namespace rill::math {
namespace {

enum class Pool { kSum, kAverage, kSqrt, kMax, kFirst, kLast };

Pool PoolOf(KernelContext& ctx) {
  const std::string type = ctx.Attr<std::string>("pooltype");
  if (type == "SUM") return Pool::kSum;
  if (type == "AVERAGE") return Pool::kAverage;
  if (type == "SQRT") return Pool::kSqrt;
  if (type == "MAX") return Pool::kMax;
  if (type == "FIRST") return Pool::kFirst;
  if (type == "LAST") return Pool::kLast;
  throw Error("pooltype must be AVERAGE, SUM, SQRT, MAX, FIRST or LAST, got '" + type + "'");
}

// What sum-like pools divide a sequence's sum by.
template <class T> T Divisor(Pool pool, uint64_t length) {
  if (pool == Pool::kAverage) return static_cast<T>(length);
  if (pool == Pool::kSqrt) return std::sqrt(static_cast<T>(length));
  return T(1);
}

// m = max(m, v) element by element, without the index (the one KeepMax writes unwanted):
// branch-free over rows that do not overlap, so one vector loop of compares and blends.
template <class T> void KeepMax(T* __restrict m, const T* __restrict v, int64_t width) {
  for (int64_t k = 0; k < width; ++k) m[k] = v[k] > m[k] ? v[k] : m[k];
}

template <class T> void SequencePool(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, 2);
  const Pool pool = PoolOf(ctx);
  const T pad = static_cast<T>(ctx.Attr<float>("pad_value"));
  std::vector<int64_t> dims = x.dims();
  const int64_t seqs = static_cast<int64_t>(o.size()) - 1, width = dims[0] > 0 ? x.numel() / dims[0] : 0;
  dims[0] = seqs;
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  const T* px = x.data<T>();
  int32_t* index =
      pool == Pool::kMax && ctx.HasOutput("MaxIndex") ? ctx.AllocateOutput<int32_t>("MaxIndex", dims) : nullptr;
  const auto keep_max = reduction::KeepMaxFor<T>();
  WriteOutput<T>(ctx, "Out", {"X"}, dims, [&](T* out) {
    ParallelFor(seqs, static_cast<double>(x.numel()) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const uint64_t begin = o[static_cast<size_t>(s)], end = o[static_cast<size_t>(s) + 1];
        VecMap<T> row(out + s * width, width);
        if (begin == end) {
          row.setConstant(pad);
          if (index != nullptr) std::fill(index + s * width, index + (s + 1) * width, -1);
          continue;
        }
        const auto at = [&](uint64_t r) { return ConstVecMap<T>(px + static_cast<int64_t>(r) * width, width); };
        switch (pool) {
          case Pool::kFirst: row = at(begin); break;
          case Pool::kLast: row = at(end - 1); break;
          case Pool::kMax:
            row = at(begin);
            if (index != nullptr) std::fill(index + s * width, index + (s + 1) * width, static_cast<int32_t>(begin));
            for (uint64_t r = begin + 1; r < end; ++r) {
              const T* v = px + static_cast<int64_t>(r) * width;
              if (index != nullptr) {
                keep_max(out + s * width, index + s * width, v, width, static_cast<int32_t>(r));
              } else {
                KeepMax(out + s * width, v, width);
              }
            }
            break;
          default:
            row = at(begin);
            for (uint64_t r = begin + 1; r < end; ++r) row += at(r);
            row /= Divisor<T>(pool, end - begin);
        }
      }
    });
  });
  ctx.Output("Out").set_lod(lod.size() > 1 ? std::vector<std::vector<uint64_t>>{lod[0]}
                                           : std::vector<std::vector<uint64_t>>{});
}

template <class T> void SequencePoolGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, 2);
  const Pool pool = PoolOf(ctx);
  const int64_t seqs = static_cast<int64_t>(o.size()) - 1, rows = x.dims()[0];
  const int64_t width = rows > 0 ? x.numel() / rows : 0;
  if (g.numel() != seqs * width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " must hold one row of " + std::to_string(width) +
                " values per sequence of X (" + std::to_string(seqs) + ")");
  }
  const int32_t* index = nullptr;
  if (pool == Pool::kMax) {
    Tensor i = ctx.Input("MaxIndex");
    if (i.numel() != g.numel()) throw Error("MaxIndex " + DimsString(i.dims()) + " must be shaped like Out@GRAD");
    index = i.data<int32_t>();
  }
  const T* dout = g.data<T>();
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "MaxIndex", "Out@GRAD"}, x.dims(), [&](T* dx) {
    ParallelFor(seqs, 2.0 * static_cast<double>(x.numel()) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const uint64_t begin = o[static_cast<size_t>(s)], end = o[static_cast<size_t>(s) + 1];
        const ConstVecMap<T> d(dout + s * width, width);
        for (uint64_t r = begin; r < end; ++r) {
          VecMap<T> row(dx + static_cast<int64_t>(r) * width, width);
          switch (pool) {
            case Pool::kFirst: r == begin ? row = d : row.setZero(); break;
            case Pool::kLast: r + 1 == end ? row = d : row.setZero(); break;
            case Pool::kMax:
              for (int64_t k = 0; k < width; ++k) {
                row[k] = index[s * width + k] == static_cast<int64_t>(r) ? d[k] : T(0);
              }
              break;
            default: row = d / Divisor<T>(pool, end - begin);
          }
        }
      }
    });
  });
  ctx.Output("X@GRAD").set_lod(lod);
}

}  // namespace

void RegisterSequencePool(Registrar& r) {
  const OpSchema pool =
      OpSchema("sequence_pool")
          .Doc(
              "Out[s] = the pooling of X's sequence s (its last LoD level): SUM, AVERAGE, SQRT (the sum over "
              "the length's square root), MAX, FIRST or LAST; pad_value for an empty sequence. As Paddle's.")
          .Input("X", "[R, ...], a LoD tensor of 1 or 2 levels")
          .Output("Out", "[S, ...]: one row per sequence; X's first level when X has two")
          .Output("MaxIndex", "int32, shaped like Out: for MAX, the row of X each maximum came from",
                  RILL_SLOT_OPTIONAL)
          .Attr("pooltype", "AVERAGE", "AVERAGE, SUM, SQRT, MAX, FIRST or LAST")
          .Attr("pad_value", 0.0f, "Out's value for an empty sequence")
          .Attr("is_test", false, "Fluid's inference flag (no effect)")
          .KernelDtypeFrom("X")
          .Grad("sequence_pool_grad", "X,MaxIndex,Out@GRAD", "X");
  r.Op(pool);
  r.Op(pool.MakeGradSchema());
  RegisterCpu<float, double>(r, "sequence_pool", [](auto t) { return &SequencePool<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_pool_grad", [](auto t) { return &SequencePoolGrad<decltype(t)>; });
}

}  // namespace rill::math
