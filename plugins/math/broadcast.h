// plugins/math/broadcast.h — Paddle's elementwise broadcasting rule.
//
// X and Y are aligned as Paddle 2.x aligns them: the operand of lower rank is placed at
// `axis` of the other's dims (axis -1: at the rank difference, so the two align at their
// trailing dims) and padded with 1s on both sides; each aligned pair of dims must be equal
// or one of them 1, and Out's dim is the other one. With axis -1 this is numpy's
// broadcasting; with an explicit axis it is Fluid's rule widened by size-1 dims. Paddle
// 1.x's rule (axis taken from the untrimmed ranks, then Y's trailing 1s trimmed and Y's
// dims equal to a run of X's) accepts a subset of these pairs, with the same Out.
//
// A plan gives kernels one of two forms:
//  - the fast form (Fluid's), when Out is shaped like X and Y's dims other than 1 are one
//    run of X's: X viewed as [pre, n, post], Y as [n], Out[i, j, k] = f(X[i, j, k], Y[j]);
//  - the general form: Out's dims coalesced (size-1 dims dropped, neighbours merged where
//    both operands advance alike), with each operand's stride per dim (0: broadcast along
//    it). The innermost stride of each operand is 1 or 0.
#ifndef RILL_PLUGINS_MATH_BROADCAST_H_
#define RILL_PLUGINS_MATH_BROADCAST_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "parallel_for.h"
#include "rill/sdk.hpp"
#include "shape.h"

namespace rill::math {

struct Broadcast {
  int64_t pre = 1, n = 1, post = 1;
};

struct BroadcastPlan {
  std::vector<int64_t> out;  // Out's dims
  bool fast = false;         // the fast form applies: `b`
  Broadcast b;
  std::vector<int64_t> dims, x_strides, y_strides;  // the general form, outermost first

  // The general form's rows: runs along its innermost dim.
  int64_t rows() const {
    int64_t r = 1;
    for (size_t k = 0; k + 1 < dims.size(); ++k) r *= dims[k];
    return r;
  }
  int64_t row_size() const { return dims.empty() ? 1 : dims.back(); }
  // Offsets into X and Y of the first element of general-form row `r`.
  void RowStart(int64_t r, int64_t* x_off, int64_t* y_off) const {
    *x_off = *y_off = 0;
    for (size_t k = dims.size() - 1; k-- > 0;) {
      const int64_t i = r % dims[k];
      r /= dims[k];
      *x_off += i * x_strides[k];
      *y_off += i * y_strides[k];
    }
  }
};

inline BroadcastPlan PlanBroadcast(const std::vector<int64_t>& x, const std::vector<int64_t>& y, int64_t axis) {
  BroadcastPlan p;
  if (x == y) {
    p.out = x;
    p.fast = true;
    p.b.n = Product(x, 0, x.size());
    return p;
  }
  const size_t rank = std::max(x.size(), y.size());
  const size_t low = std::min(x.size(), y.size());
  const auto fail = [&](const std::string& why) {
    return Error("cannot broadcast X " + DimsString(x) + " and Y " + DimsString(y) + " (axis " + std::to_string(axis) +
                     "): " + why,
                 RILL_INVALID_ARGUMENT);
  };
  const int64_t at = axis == -1 ? static_cast<int64_t>(rank - low) : axis;
  if (at < 0 || static_cast<size_t>(at) + low > rank) {
    throw fail("the operand of rank " + std::to_string(low) + " does not fit at axis " + std::to_string(at) +
               " of rank " + std::to_string(rank));
  }
  std::vector<int64_t> xp(rank, 1), yp(rank, 1);
  std::copy(x.begin(), x.end(), xp.begin() + (x.size() < rank ? at : 0));
  std::copy(y.begin(), y.end(), yp.begin() + (y.size() < rank ? at : 0));
  p.out.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (xp[i] != yp[i] && xp[i] != 1 && yp[i] != 1) {
      throw fail("dimension " + std::to_string(i) + " is " + std::to_string(xp[i]) + " in X and " +
                 std::to_string(yp[i]) + " in Y");
    }
    p.out[i] = xp[i] == 1 ? yp[i] : xp[i];
  }
  if (xp == p.out) {  // the fast form: Y's dims other than 1 one run of X's
    size_t first = rank, last = 0;
    for (size_t i = 0; i < rank; ++i) {
      if (yp[i] != 1) first = std::min(first, i), last = i + 1;
    }
    bool run = true;
    for (size_t i = first; i < last; ++i) run = run && yp[i] == xp[i];
    if (first == rank) first = last = rank;
    if (run) {
      p.fast = true;
      p.b = {Product(xp, 0, first), Product(xp, first, last), Product(xp, last, rank)};
      return p;
    }
  }
  // The general form. Strides of the padded operands, 0 along a broadcast dim.
  std::vector<int64_t> xs(rank, 0), ys(rank, 0);
  for (int64_t i = static_cast<int64_t>(rank) - 1, sx = 1, sy = 1; i >= 0; --i) {
    if (xp[i] != 1) xs[i] = sx, sx *= xp[i];
    if (yp[i] != 1) ys[i] = sy, sy *= yp[i];
  }
  for (size_t i = 0; i < rank; ++i) {
    if (p.out[i] == 1) continue;
    const bool merge =
        !p.dims.empty() && (xs[i] == 0) == (p.x_strides.back() == 0) && (ys[i] == 0) == (p.y_strides.back() == 0);
    if (merge) {
      p.dims.back() *= p.out[i];
      p.x_strides.back() = xs[i];
      p.y_strides.back() = ys[i];
    } else {
      p.dims.push_back(p.out[i]);
      p.x_strides.push_back(xs[i]);
      p.y_strides.push_back(ys[i]);
    }
  }
  return p;
}

// The fast form for kernels that have no other (the CUDA ones); an Error naming the shapes
// when the pair needs the general form.
inline Broadcast ComputeBroadcast(const std::vector<int64_t>& x, const std::vector<int64_t>& y, int64_t axis) {
  const BroadcastPlan p = PlanBroadcast(x, y, axis);
  if (!p.fast) {
    throw Error("X " + DimsString(x) + " and Y " + DimsString(y) + " broadcast to " + DimsString(p.out) +
                    ": this kernel takes only Y broadcast into X's shape along one run of X's dims",
                RILL_UNIMPLEMENTED);
  }
  return p.b;
}

inline bool SameDims(const Tensor& a, const Tensor& b) {
  return a.ndim() == b.ndim() && std::equal(a.dims_data(), a.dims_data() + a.ndim(), b.dims_data());
}

// Out may be X or Y itself when it keeps that operand's shape and dtype (an in-place add).
// Otherwise allocating Out has just replaced the operand's memory, which the kernel has yet
// to read: `reshaped` says so, and that is an error, not a read of freed memory.
inline void CheckOperandKept(const Tensor& out, const Tensor& operand, bool reshaped, const char* slot) {
  if (reshaped && out.handle() == operand.handle()) {
    throw Error(std::string("Out is the same variable as ") + slot +
                    ", whose shape or dtype this op changes; write Out to another variable",
                RILL_INVALID_ARGUMENT);
  }
}

// A binary op's arguments (X, Y -> Out) and broadcast axis, found once per op instance.
struct BinaryArgs {
  explicit BinaryArgs(const OpInfo& op)
      : x(op.InputSlot("X")), y(op.InputSlot("Y")), out(op.OutputSlot("Out")), axis(op.Attr<int64_t>("axis")) {}
  Slot x, y, out;
  int64_t axis;
};

// The scalar path of Out = f(X, Y) (a StatefulKernel's Scalar, with X and Y the schema's
// first two inputs and Out its first output): X and Y scalars of T, Out a scalar of R. A
// loop counter's compare, a running sum.
template <class T, class R, class F> bool ScalarBinary(const RillScalar* in, RillScalar* out, F f) {
  T a, b;
  if (!ReadScalar(in[0], &a) || !ReadScalar(in[1], &b)) return false;
  WriteScalar<R>(out[0], f(a, b));
  return true;
}

// Out = f(X, Y) elementwise with broadcasting; Out's element type is R.
template <class T, class R, class F> void BinaryBroadcast(KernelContext& ctx, const BinaryArgs& args, F f) {
  Tensor x = ctx.Input(args.x);
  Tensor y = ctx.Input(args.y);
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const bool same = SameDims(x, y);  // the usual case (a loop's counters): no shape vectors
  BroadcastPlan plan;
  if (same) plan.fast = true, plan.b = Broadcast{1, x.numel(), 1};
  else plan = PlanBroadcast(x.dims(), y.dims(), args.axis);
  Tensor out = same ? ctx.AllocateOutput(args.out, DataTypeOf<R>::value, x.dims_data(), x.ndim())
                    : ctx.AllocateOutput(args.out, DataTypeOf<R>::value, plan.out.data(), plan.out.size());
  CheckOperandKept(out, x, !std::is_same_v<T, R> || (!same && plan.out != x.dims()), "X");
  CheckOperandKept(out, y, !std::is_same_v<T, R> || !same, "Y");
  R* po = out.mutable_data<R>();
  const double bytes = static_cast<double>(sizeof(T) + sizeof(R)) * static_cast<double>(out.numel());
  if (same) {
    ParallelFor(plan.b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = f(px[i], py[i]);
    });
    return;
  }
  if (plan.fast && plan.b.post == 1) {
    // Rows of n elements, Y along each (a row bias): the inner loop is a vector loop.
    const Broadcast b = plan.b;
    ParallelFor(b.pre, bytes, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* xs = px + i * b.n;
        R* os = po + i * b.n;
        for (int64_t j = 0; j < b.n; ++j) os[j] = f(xs[j], py[j]);
      }
    });
    return;
  }
  if (plan.fast) {
    const Broadcast b = plan.b;
    // Runs of `post` elements that share one Y value, run r = i * n + j taking Y[j].
    ParallelFor(b.pre * b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T yv = py[r % b.n];
        const int64_t base = r * b.post;
        for (int64_t k = 0; k < b.post; ++k) po[base + k] = f(px[base + k], yv);
      }
    });
    return;
  }
  const int64_t row = plan.row_size();
  const int64_t sx = plan.x_strides.back(), sy = plan.y_strides.back();
  ParallelFor(plan.rows(), bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t xo, yo;
      plan.RowStart(r, &xo, &yo);
      R* o = po + r * row;
      for (int64_t k = 0; k < row; ++k) o[k] = f(px[xo + k * sx], py[yo + k * sy]);
    }
  });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_BROADCAST_H_
