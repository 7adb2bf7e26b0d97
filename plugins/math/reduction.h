// plugins/math/reduction.h — reductions over any set of dims, shared by the reduce ops,
// their gradients and the gradients of ops that broadcast (the expand family).
//
// A reduction is planned once (ReducePlan: adjacent dims of one kind merged) and run by
// ReduceInto: with at most one reduced group, X is [outer, n, inner] with the middle
// reduced, split across the passes' team by output rows or, for one output row, by chunks
// of the reduced dim whose partial results are combined in chunk order, so a result has
// the same bits whatever the thread budget; otherwise by a walk over runs of the innermost
// group on the calling thread. The loops over contiguous elements are compiled per
// instruction set (reduction_loops.h). SumOfSquares is a whole tensor's, split the same way.
#ifndef RILL_PLUGINS_MATH_REDUCTION_H_
#define RILL_PLUGINS_MATH_REDUCTION_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels.h"
#include "nan_order.h"
#include "parallel_for.h"
#include "reduction_loops.h"

namespace rill::math {

// sum(p[0, n)^2) in fp64, a sum per chunk on the passes' team, the chunks added in
// order: the same bits for any thread budget (parallel_for.h).
template <class T> double SumOfSquares(const T* p, int64_t n) {
  const double bytes = static_cast<double>(sizeof(T)) * n;
  std::vector<double> partial(static_cast<size_t>(ParallelChunks(n, bytes)), 0.0);
  ParallelFor(n, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
    partial[static_cast<size_t>(chunk)] = reduction::DotInDoubleFor<T>()(p + begin, p + begin, end - begin);
  });
  double sum = 0;
  for (double v : partial) sum += v;
  return sum;
}

// A reduction over some of X's dims seen with adjacent dims of one kind merged: its
// groups, outermost first, alternate between kept and reduced. Every input element then
// lands in the output by a walk over runs of the innermost group (ForEachRun), with no
// index arithmetic per element; the common shapes (one reduced group) have fast paths.
struct ReducePlan {
  std::vector<int64_t> group;       // merged dims, outermost first (none for a scalar X)
  std::vector<bool> reduced;        // per group
  std::vector<int64_t> out_stride;  // per group: the output's stride along it; 0 if reduced
  std::vector<int64_t> out_dims;    // as the op produces them (keep_dim or not)
  int64_t numel = 1, out_numel = 1;
  int64_t count = 1;  // input elements reduced into each output element

  // Whether a run of ForEachRun lands on one output element (else on consecutive ones).
  bool InnerReduced() const { return group.empty() || reduced.back(); }
};

// The plan of a reduction of X (dims `in`) over the dims flagged in `reduced`; `keep` keeps
// them in the output's dims as 1s.
inline ReducePlan PlanReduction(const std::vector<int64_t>& in, const std::vector<bool>& reduced, bool keep) {
  const size_t rank = in.size();
  ReducePlan p;
  for (size_t i = 0; i < rank; ++i) {
    p.numel *= in[i];
    if (reduced[i]) p.count *= in[i];
    else p.out_numel *= in[i];
    if (keep || !reduced[i]) p.out_dims.push_back(reduced[i] ? 1 : in[i]);
    if (in[i] == 1) continue;  // a dim of 1 moves nothing: merged into its neighbours
    if (!p.group.empty() && p.reduced.back() == reduced[i]) {
      p.group.back() *= in[i];
    } else {
      p.group.push_back(in[i]);
      p.reduced.push_back(reduced[i]);
    }
  }
  if (p.out_dims.empty()) p.out_dims = {1};
  p.out_stride.assign(p.group.size(), 0);
  int64_t stride = 1;
  for (size_t g = p.group.size(); g-- > 0;) {
    if (p.reduced[g]) continue;
    p.out_stride[g] = stride;
    stride *= p.group[g];
  }
  return p;
}

// Calls run(in_offset, out_offset, length) for each run of the innermost group, in input
// order: input elements in_offset .. in_offset + length - 1 land at out_offset (the
// innermost group reduced) or at out_offset .. out_offset + length - 1 (kept).
template <class F> void ForEachRun(const ReducePlan& p, F run) {
  if (p.numel == 0) return;
  if (p.group.empty()) return run(int64_t{0}, int64_t{0}, int64_t{1});
  const size_t outer = p.group.size() - 1;
  const int64_t length = p.group.back();
  std::vector<int64_t> idx(outer, 0);
  int64_t out = 0;
  for (int64_t in = 0; in < p.numel; in += length) {
    run(in, out, length);
    for (size_t g = outer; g-- > 0;) {  // odometer over the outer groups, `out` kept in step
      out += p.out_stride[g];
      if (++idx[g] < p.group[g]) break;
      out -= p.out_stride[g] * p.group[g];
      idx[g] = 0;
    }
  }
}

// acc = acc (op) v, for one element.
template <Reduction R, class T> void Combine(T& acc, T v) {
  if constexpr (R == Reduction::kMax || R == Reduction::kMin) {
    if (Improves<R == Reduction::kMax>(v, acc)) acc = v;
  } else if constexpr (R == Reduction::kProd) {
    acc *= v;
  } else {
    acc += v;
  }
}

// The reduction of n contiguous elements, and acc[0, n) = acc (op) x[0, n): MathIsa()'s
// loops (reduction_loops.h).
template <Reduction R, class T> T ReduceRow(const T* x, int64_t n) { return reduction::LoopsFor<R, T>().row(x, n); }
template <Reduction R, class T> void CombineRows(T* acc, const T* x, int64_t n) {
  reduction::LoopsFor<R, T>().rows(acc, x, n);
}

// A reduction with at most one reduced group, seen as X [outer, n, inner] with the middle
// reduced: the kept groups before the reduced one, it, those after it.
struct Middle {
  int64_t outer = 1, n = 1, inner = 1;
};

inline bool AsMiddle(const ReducePlan& p, Middle* m) {
  if (std::count(p.reduced.begin(), p.reduced.end(), true) > 1) return false;
  *m = Middle{};
  bool after = false;
  for (size_t g = 0; g < p.group.size(); ++g) {
    if (p.reduced[g]) m->n = p.group[g], after = true;
    else (after ? m->inner : m->outer) *= p.group[g];
  }
  return true;
}

// out[o * inner + i] = the reduction over j of x[(o * n + j) * inner + i]: X as [outer, n,
// inner] with the middle reduced (inner 1: rows; outer 1: columns). Split across the
// passes' team by output rows, or, with one row, by chunks of the reduced dim (partial
// results combined in chunk order: the same bits on any number of threads).
template <Reduction R, class T> void ReduceMiddle(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  const double bytes = static_cast<double>(outer * n * inner) * sizeof(T);
  if (outer == 1 && inner == 1) {
    const int64_t chunks = ParallelChunks(n, bytes);
    std::vector<T> partial(static_cast<size_t>(chunks), Identity<R, T>());
    ParallelFor(n, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
      partial[static_cast<size_t>(chunk)] = ReduceRow<R>(x + begin, end - begin);
    });
    T acc = Identity<R, T>();
    for (T v : partial) Combine<R>(acc, v);
    *out = acc;
    return;
  }
  if (outer == 1) {  // columns: each chunk of rows into a partial row, combined in order
    const int64_t chunks = ParallelChunks(n, bytes);
    std::vector<T> partial(static_cast<size_t>(chunks * inner), Identity<R, T>());
    ParallelFor(n, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
      T* acc = partial.data() + chunk * inner;
      for (int64_t j = begin; j < end; ++j) CombineRows<R>(acc, x + j * inner, inner);
    });
    std::copy(partial.begin(), partial.begin() + inner, out);
    for (int64_t c = 1; c < chunks; ++c) CombineRows<R>(out, partial.data() + c * inner, inner);
    return;
  }
  ParallelFor(outer, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* xo = x + o * n * inner;
      T* oo = out + o * inner;
      if (inner == 1) {
        *oo = ReduceRow<R>(xo, n);
        continue;
      }
      std::fill(oo, oo + inner, Identity<R, T>());
      for (int64_t j = 0; j < n; ++j) CombineRows<R>(oo, xo + j * inner, inner);
    }
  });
}

// out[0, p.out_numel) = the reduction of x by plan p (the mean divides by p.count; the mean
// of no elements is NaN for a float, 0 for an int). out must not overlap x.
template <Reduction R, class T> void ReduceInto(const T* x, const ReducePlan& p, T* out) {
  Middle m;
  if (p.numel > 0 && AsMiddle(p, &m)) {
    ReduceMiddle<R>(x, out, m.outer, m.n, m.inner);  // writes every element of out
  } else {
    std::fill(out, out + p.out_numel, Identity<R, T>());
    ForEachRun(p, [&](int64_t in, int64_t o, int64_t length) {
      if (p.InnerReduced()) {
        Combine<R>(out[o], ReduceRow<R>(x + in, length));
      } else {
        CombineRows<R>(out + o, x + in, length);
      }
    });
  }
  if constexpr (R == Reduction::kMean) {
    if (p.count > 0 || std::is_floating_point_v<T>) {
      for (int64_t k = 0; k < p.out_numel; ++k) out[k] /= static_cast<T>(p.count);
    }
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_REDUCTION_H_
