// flip and roll, with Paddle's contracts: X's elements moved along axes, its shape kept.
// flip reverses each of `axis`; roll shifts each of `axis` by its `shifts` (elements past
// the end come round to the start), or, with no axis, all of X flattened. Each element of
// Out comes from one of X: the gradients put Out@GRAD's elements back where they came from.
#include <algorithm>
#include <cstring>

#include "index_map.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// Per dim of X: the shift of its positions (roll), and whether it is reversed (flip).
struct Moves {
  std::vector<int64_t> dims, shift;
  std::vector<bool> reverse;
};

template <bool kRoll>
Moves MovesOf(KernelContext& ctx, const std::vector<int64_t>& x_dims) {
  Moves m;
  std::vector<int64_t> axes = ctx.Attr<std::vector<int64_t>>("axis");
  m.dims = x_dims;
  if (kRoll && axes.empty()) m.dims = {Product(x_dims, 0, x_dims.size())};  // all of X, flattened
  m.shift.assign(m.dims.size(), 0);
  m.reverse.assign(m.dims.size(), false);
  if constexpr (!kRoll) {
    for (int64_t a : axes) {
      const size_t k = NormalizeAxis(a, m.dims.size());
      m.reverse[k] = !m.reverse[k];  // an axis given twice flips back
    }
    return m;
  }
  const std::vector<int64_t> shifts = ctx.HasInput("ShiftsTensor") ? IntsOf(ctx.Input("ShiftsTensor"), "ShiftsTensor")
                                                                    : ctx.Attr<std::vector<int64_t>>("shifts");
  if (axes.empty()) axes = {0};
  if (shifts.size() != axes.size()) {
    throw Error("shifts " + DimsString(shifts) + " must hold one shift per axis of " + DimsString(axes));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t k = NormalizeAxis(axes[i], m.dims.size());
    const int64_t n = m.dims[k];
    if (n > 0) m.shift[k] = ((m.shift[k] + shifts[i] % n) % n + n) % n;
  }
  return m;
}

// Calls run(out_index, x_index, length) for each run of Out reading consecutive elements
// of X (index_map.h): a roll's rows are two runs, a flip of the last dim one per element.
template <class F>
void ForEachMoveRun(const Moves& m, F run) {
  ForEachMappedRun(m.dims, m.dims, [&m](size_t k, int64_t i) {
    const int64_t from = m.reverse[k] ? m.dims[k] - 1 - i : i - m.shift[k];
    return from < 0 ? from + m.dims[k] : from;
  }, run);
}

// Reverses each row of `width` elements of `size` bytes in place.
template <class Word>
void ReverseRows(char* data, int64_t rows, int64_t width) {
  Word* w = reinterpret_cast<Word*>(data);
  for (int64_t r = 0; r < rows; ++r) std::reverse(w + r * width, w + (r + 1) * width);
}
void ReverseRows(char* data, int64_t rows, int64_t width, size_t size) {
  switch (size) {
    case 1: return ReverseRows<uint8_t>(data, rows, width);
    case 2: return ReverseRows<uint16_t>(data, rows, width);
    case 4: return ReverseRows<uint32_t>(data, rows, width);
    case 8: return ReverseRows<uint64_t>(data, rows, width);
    default: throw Error("flip: no element of " + std::to_string(size) + " bytes");
  }
}

template <bool kRoll>
void Move(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Moves m = MovesOf<kRoll>(ctx, x.dims());
  const size_t size = DataTypeSize(x.dtype());
  const char* px = static_cast<const char*>(x.raw_data());
  // A flipped last dim would make every element a run of its own: its rows are copied
  // whole and reversed afterwards instead.
  const bool reverse_rows = !m.dims.empty() && m.reverse.back();
  if (reverse_rows) m.reverse.back() = false;
  WriteOutputBytes(ctx, "Out", {"X"}, x.dtype(), x.dims(), [&](char* po) {
    ForEachMoveRun(m, [&](int64_t o, int64_t from, int64_t n) {
      std::memcpy(po + o * static_cast<int64_t>(size), px + from * static_cast<int64_t>(size),
                  static_cast<size_t>(n) * size);
    });
    if (reverse_rows && x.numel() > 0) ReverseRows(po, x.numel() / m.dims.back(), m.dims.back(), size);
  });
}

template <class T, bool kRoll>
void MoveGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = ctx.Input("X").dims();
  if (g.dims() != d) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(d));
  const Moves m = MovesOf<kRoll>(ctx, d);
  const T* pg = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, d, [&](T* dx) {
    ForEachMoveRun(m, [&](int64_t o, int64_t from, int64_t n) { std::copy(pg + o, pg + o + n, dx + from); });
  });
}

}  // namespace

void RegisterFlipRoll(Registrar& r) {
  const OpSchema flip = OpSchema("flip")
      .Doc("Out = X reversed along each of axis.")
      .Input("X", "the tensor (any dtype)")
      .Output("Out", "shaped like X")
      .Attr("axis", std::vector<int64_t>{}, "the axes reversed")
      .KernelDtypeFrom("X")
      .Grad("flip_grad", "X,Out@GRAD", "X");
  const OpSchema roll = OpSchema("roll")
      .Doc("Out = X shifted by shifts[i] along axis[i], elements past the end coming round to the start; with no "
           "axis, X flattened is shifted by shifts[0].")
      .Input("X", "the tensor (any dtype)")
      .Input("ShiftsTensor", "shifts, 1-D int32/int64; replaces the attribute", RILL_SLOT_OPTIONAL)
      .Output("Out", "shaped like X")
      .Attr("shifts", std::vector<int64_t>{}, "one shift per axis")
      .Attr("axis", std::vector<int64_t>{}, "the axes shifted (none: all of X, flattened)")
      .KernelDtypeFrom("X")
      .Grad("roll_grad", "X,ShiftsTensor,Out@GRAD", "X");
  for (const OpSchema* s : {&flip, &roll}) {
    r.Op(*s);
    r.Op(s->MakeGradSchema());
  }
  r.Kernel("flip", RILL_CPU, RILL_ANY_DTYPE, &Move<false>);
  r.Kernel("roll", RILL_CPU, RILL_ANY_DTYPE, &Move<true>);
  RegisterCpu<float, double>(r, "flip_grad", [](auto t) { return &MoveGrad<decltype(t), false>; });
  RegisterCpu<float, double>(r, "roll_grad", [](auto t) { return &MoveGrad<decltype(t), true>; });
}

}  // namespace rill::math
