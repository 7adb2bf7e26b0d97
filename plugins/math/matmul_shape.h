// plugins/math/matmul_shape.h — how matmul reads its operands' shapes (shared by the CPU
// and CUDA kernels): leading dims are a batch; a 1-D X is a row vector and a 1-D Y a
// column vector; transposes swap the last two dims. Paddle's two ops differ on vectors:
// matmul (v1) transposes a 1-D side as the row or column it stands for and drops a
// vector's dim from Out only where it is 1; matmul_v2 ignores a 1-D side's transpose and
// always drops it, as numpy does.
#ifndef RILL_PLUGINS_MATH_MATMUL_SHAPE_H_
#define RILL_PLUGINS_MATH_MATMUL_SHAPE_H_

#include <cstdint>
#include <vector>

#include "broadcast.h"
#include "kernels.h"

namespace rill::math {

// One side of a matmul: its batch count and the [rows, cols] of each matrix after the
// optional transpose. A 1-D side is a row (X) or a column (Y) vector.
struct MatSide {
  std::vector<int64_t> batch_dims;
  int64_t batch = 1, rows = 0, cols = 0;
  bool vector = false;
};

inline MatSide Side(const std::vector<int64_t>& d, bool transpose, bool is_x) {
  MatSide s;
  int64_t r, c;
  if (d.size() == 1) {
    s.vector = true;
    r = is_x ? 1 : d[0];
    c = is_x ? d[0] : 1;
  } else {
    if (d.empty()) throw Error("matmul needs tensors of rank 1 or more");
    s.batch_dims.assign(d.begin(), d.end() - 2);
    s.batch = Product(d, 0, d.size() - 2);
    r = d[d.size() - 2];
    c = d.back();
  }
  s.rows = transpose ? c : r;
  s.cols = transpose ? r : c;
  return s;
}

// A matmul as its kernels see it: Out = alpha * op(X) op(Y) as `batch` products of
// [m, k] by [k, n] (read from the op's attributes and its operands' dims). The batch dims
// broadcast as numpy's do (aligned at the end, each pair equal or one of them 1): product
// i multiplies X's matrix x_at[i] by Y's matrix y_at[i].
struct MatMulPlan {
  bool v2 = false;
  bool tx = false, ty = false;
  float alpha = 1;
  MatSide a, b;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  std::vector<int64_t> batch_dims, x_at, y_at;
};

// Fills the plan's batch: the broadcast of the two sides' batch dims, and which matrix of
// each side every product takes. Throws when the batch dims do not broadcast.
inline void PlanBatch(MatMulPlan& p, const std::vector<int64_t>& xd, const std::vector<int64_t>& yd) {
  const std::vector<int64_t>& ad = p.a.batch_dims;
  const std::vector<int64_t>& bd = p.b.batch_dims;
  const size_t rank = std::max(ad.size(), bd.size());
  std::vector<int64_t> ap(rank, 1), bp(rank, 1);
  std::copy(ad.begin(), ad.end(), ap.begin() + static_cast<std::ptrdiff_t>(rank - ad.size()));
  std::copy(bd.begin(), bd.end(), bp.begin() + static_cast<std::ptrdiff_t>(rank - bd.size()));
  p.batch_dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (ap[i] != bp[i] && ap[i] != 1 && bp[i] != 1) {
      throw Error("matmul: the batch dimensions of X " + DimsString(xd) + " and Y " + DimsString(yd) +
                  " do not broadcast: " + DimsString(ad) + " and " + DimsString(bd));
    }
    p.batch_dims[i] = ap[i] == 1 ? bp[i] : ap[i];
  }
  p.batch = Product(p.batch_dims, 0, rank);
  p.x_at.assign(static_cast<size_t>(p.batch), 0);
  p.y_at.assign(static_cast<size_t>(p.batch), 0);
  for (int64_t i = 0; i < p.batch; ++i) {
    int64_t rest = i, xs = 1, ys = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t at = rest % p.batch_dims[d];
      rest /= p.batch_dims[d];
      if (ap[d] != 1) p.x_at[static_cast<size_t>(i)] += at * xs;
      if (bp[d] != 1) p.y_at[static_cast<size_t>(i)] += at * ys;
      xs *= ap[d];
      ys *= bp[d];
    }
  }
}

// `v2`: matmul_v2's attributes (trans_x, trans_y; no alpha) instead of matmul's
// (transpose_X, transpose_Y, alpha).
inline MatMulPlan PlanMatMul(KernelContext& ctx, const std::vector<int64_t>& xd, const std::vector<int64_t>& yd,
                             bool v2 = false) {
  MatMulPlan p;
  p.v2 = v2;
  p.tx = ctx.Attr<bool>(v2 ? "trans_x" : "transpose_X") && !(v2 && xd.size() == 1);
  p.ty = ctx.Attr<bool>(v2 ? "trans_y" : "transpose_Y") && !(v2 && yd.size() == 1);
  p.alpha = v2 ? 1.0f : ctx.Attr<float>("alpha");
  p.a = Side(xd, p.tx, true);
  p.b = Side(yd, p.ty, false);
  PlanBatch(p, xd, yd);
  p.m = p.a.rows;
  p.k = p.a.cols;
  p.n = p.b.cols;
  return p;
}

// Out's dims for op(X) * op(Y): the broadcast batch, then op(X)'s rows and op(Y)'s columns,
// a 1-D side's dim dropped as the op says (above; [1] when nothing is left). Throws if
// the operands do not multiply.
inline std::vector<int64_t> MatMulOutDims(const MatMulPlan& p, const std::vector<int64_t>& xd,
                                          const std::vector<int64_t>& yd) {
  const MatSide& a = p.a;
  const MatSide& b = p.b;
  if (a.cols != b.rows) {
    throw Error("matmul: X " + DimsString(xd) + " and Y " + DimsString(yd) + " have inner dimensions " +
                std::to_string(a.cols) + " and " + std::to_string(b.rows) + " (after any transpose)");
  }
  std::vector<int64_t> out = p.batch_dims;
  if (p.v2) {
    if (!a.vector) out.push_back(a.rows);
    if (!b.vector) out.push_back(b.cols);
  } else {
    out.push_back(a.rows);
    out.push_back(b.cols);
    if (a.vector && out[out.size() - 2] == 1) out.erase(out.end() - 2);
    if (b.vector && out.back() == 1) out.pop_back();
  }
  if (out.empty()) out = {1};
  return out;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_MATMUL_SHAPE_H_
