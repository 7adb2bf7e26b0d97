// index_sample (and its gradient), with Paddle's contract (paddle/fluid/operators/
// index_sample_op.*): per row b of X [B, N], the elements at Index [B, K]'s row b:
// Out[b, k] = X[b, Index[b, k]]. Every index must lie in [0, N). The gradient adds each
// Out@GRAD[b, k] to X@GRAD[b, Index[b, k]] (twice for an index given twice).
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct SamplePlan {
  int64_t batch = 0, n = 0, k = 0;
};

SamplePlan PlanOf(const Tensor& x, const Tensor& index) {
  const std::vector<int64_t> xd = x.dims(), id = index.dims();
  if (xd.size() != 2 || id.size() != 2 || xd[0] != id[0]) {
    throw Error("X " + DimsString(xd) + " and Index " + DimsString(id) + " must be [B, N] and [B, K]");
  }
  if (index.dtype() != RILL_INT32 && index.dtype() != RILL_INT64) {
    throw Error(std::string("Index must be int32 or int64, not ") + DataTypeName(index.dtype()));
  }
  return {xd[0], xd[1], id[1]};
}

// f(b, k, i) for every Index[b, k] = i, rows [begin, end) of it, each checked against N.
template <class F> void ForEachIndex(const Tensor& index, const SamplePlan& p, int64_t begin, int64_t end, F f) {
  VisitDataType<int32_t, int64_t>(index.dtype(), "Index", [&](auto tag) {
    using I = decltype(tag);
    const I* ids = index.data<I>();
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t i = static_cast<int64_t>(ids[b * p.k + k]);
        if (i < 0 || i >= p.n) {
          throw Error("Index[" + std::to_string(b) + ", " + std::to_string(k) + "] = " + std::to_string(i) +
                      " is outside X's rows of " + std::to_string(p.n));
        }
        f(b, k, i);
      }
    }
  });
}

// Out's rows [begin, end), each index read unsigned so that one compare finds a negative one
// too, and clamped for the read: the loop has no branch. Whether every index was in range.
template <class T, class I>
bool SampleRows(const T* in, const I* ids, T* out, const SamplePlan& p, int64_t begin, int64_t end) {
  const auto n = static_cast<uint64_t>(p.n);
  bool outside = false;
  for (int64_t b = begin; b < end; ++b) {
    const T* row = in + b * p.n;
    for (int64_t k = 0; k < p.k; ++k) {
      const auto i = static_cast<uint64_t>(static_cast<int64_t>(ids[b * p.k + k]));
      outside |= i >= n;
      out[b * p.k + k] = row[i < n ? i : 0];
    }
  }
  return !outside;
}

template <class T> void IndexSample(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), index = ctx.Input("Index");
  const SamplePlan p = PlanOf(x, index);
  const T* in = x.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", {p.batch, p.k});
  if (p.n == 0 && p.k > 0 && p.batch > 0) throw Error("X " + DimsString(x.dims()) + " has no elements to sample");
  ParallelFor(p.batch, static_cast<double>(p.batch * p.k) * (2 * sizeof(T) + sizeof(int64_t)),
              [&](int64_t, int64_t begin, int64_t end) {
                const bool inside = index.dtype() == RILL_INT32
                                        ? SampleRows(in, index.data<int32_t>(), out, p, begin, end)
                                        : SampleRows(in, index.data<int64_t>(), out, p, begin, end);
                if (!inside) ForEachIndex(index, p, begin, end, [](int64_t, int64_t, int64_t) {});  // throws, naming it
              });
}

template <class T> void IndexSampleGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), index = ctx.Input("Index"), g = ctx.Input("Out@GRAD");
  const SamplePlan p = PlanOf(x, index);
  if (g.dims() != index.dims()) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " must be shaped like Index " + DimsString(index.dims()));
  }
  const T* dout = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFor(p.batch, static_cast<double>(p.batch) * static_cast<double>(p.n + p.k) * sizeof(T),
              [&](int64_t, int64_t begin, int64_t end) {
                std::fill(dx + begin * p.n, dx + end * p.n, T(0));
                ForEachIndex(index, p, begin, end,
                             [&](int64_t b, int64_t k, int64_t i) { dx[b * p.n + i] += dout[b * p.k + k]; });
              });
}

}  // namespace

void RegisterIndexSample(Registrar& r) {
  const OpSchema schema = OpSchema("index_sample")
                              .Doc("Out[b, k] = X[b, Index[b, k]]: each row's elements at its indices. As Paddle's.")
                              .Input("X", "[B, N]")
                              .Input("Index", "[B, K] int32/int64, each in [0, N)")
                              .Output("Out", "[B, K], X's dtype")
                              .KernelDtypeFrom("X")
                              .Grad("index_sample_grad", "X,Index,Out@GRAD", "X");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "index_sample", [](auto t) { return &IndexSample<decltype(t)>; });
  RegisterCpu<float, double>(r, "index_sample_grad", [](auto t) { return &IndexSampleGrad<decltype(t)>; });
}

}  // namespace rill::math
