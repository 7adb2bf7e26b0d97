// plugins/math/broadcast.h — Fluid's elementwise broadcasting rule.
//
// Y's dims must equal a contiguous run of X's dims starting at `axis` (axis -1 means
// rank(X) - rank(Y)); trailing 1s of Y are ignored. X is then viewed as [pre, n, post]
// and Y as [n], and Out[i, j, k] = f(X[i, j, k], Y[j]). Out has X's shape.
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

inline Broadcast ComputeBroadcast(const std::vector<int64_t>& x, std::vector<int64_t> y, int64_t axis) {
  Broadcast b;
  if (x == y) {
    for (int64_t d : x) b.n *= d;
    return b;
  }
  while (y.size() > 1 && y.back() == 1) y.pop_back();
  if (y.size() == 1 && y[0] == 1) {  // a scalar Y broadcasts everywhere
    for (int64_t d : x) b.pre *= d;
    return b;
  }
  if (axis == -1) axis = static_cast<int64_t>(x.size()) - static_cast<int64_t>(y.size());
  if (axis < 0 || axis + y.size() > x.size()) {
    throw Error("cannot broadcast Y " + DimsString(y) + " to X " + DimsString(x) + " at axis " +
                std::to_string(axis));
  }
  for (size_t i = 0; i < y.size(); ++i) {
    if (x[axis + i] != y[i]) {
      throw Error("cannot broadcast Y " + DimsString(y) + " to X " + DimsString(x) + " at axis " +
                  std::to_string(axis) + ": dimension " + std::to_string(axis + i) + " differs");
    }
  }
  for (int64_t i = 0; i < axis; ++i) b.pre *= x[i];
  for (size_t i = 0; i < y.size(); ++i) b.n *= y[i];
  for (size_t i = axis + y.size(); i < x.size(); ++i) b.post *= x[i];
  return b;
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
template <class T, class R, class F>
bool ScalarBinary(const RillScalar* in, RillScalar* out, F f) {
  T a, b;
  if (!ReadScalar(in[0], &a) || !ReadScalar(in[1], &b)) return false;
  WriteScalar<R>(out[0], f(a, b));
  return true;
}

// Out = f(X, Y) elementwise with broadcasting; Out is shaped like X with element type R.
template <class T, class R, class F>
void BinaryBroadcast(KernelContext& ctx, const BinaryArgs& args, F f) {
  Tensor x = ctx.Input(args.x);
  Tensor y = ctx.Input(args.y);
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const bool same = SameDims(x, y);  // the usual case (a loop's counters): no shape vectors
  const Broadcast b = same ? Broadcast{1, x.numel(), 1} : ComputeBroadcast(x.dims(), y.dims(), args.axis);
  Tensor out = ctx.AllocateOutput(args.out, DataTypeOf<R>::value, x.dims_data(), x.ndim());
  CheckOperandKept(out, x, !std::is_same_v<T, R>, "X");
  CheckOperandKept(out, y, !std::is_same_v<T, R> || !same, "Y");
  R* po = out.mutable_data<R>();
  const double bytes = static_cast<double>(sizeof(T) + sizeof(R)) * static_cast<double>(x.numel());
  if (same) {
    ParallelFor(b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = f(px[i], py[i]);
    });
    return;
  }
  // Runs of `post` elements that share one Y value, run r = i * n + j taking Y[j].
  ParallelFor(b.pre * b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T yv = py[r % b.n];
      const int64_t base = r * b.post;
      for (int64_t k = 0; k < b.post; ++k) po[base + k] = f(px[base + k], yv);
    }
  });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_BROADCAST_H_
