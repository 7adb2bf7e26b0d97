// flip and roll, with Paddle's contracts: X's elements moved along axes, its shape kept.
// flip reverses each of `axis`; roll shifts each of `axis` by its `shifts` (elements past
// the end come round to the start), or, with no axis, all of X flattened. Each element of
// Out comes from one of X: the gradients move Out@GRAD back by the inverse moves.
#include <algorithm>
#include <cstring>

#include "index_map.h"
#include "parallel_for.h"
#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"

namespace rill::math {
namespace {

// Per dim of X: the shift of its positions (roll), and whether it is reversed (flip).
struct Moves {
  std::vector<int64_t> dims, shift;
  std::vector<bool> reverse;
};

template <bool kRoll> Moves MovesOf(KernelContext& ctx, const std::vector<int64_t>& x_dims) {
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

// The moves that undo m: a flip is its own inverse, a roll by s is undone by one by n - s.
Moves Inverse(Moves m) {
  for (size_t k = 0; k < m.dims.size(); ++k) {
    if (m.shift[k] != 0) m.shift[k] = m.dims[k] - m.shift[k];
  }
  return m;
}

// out[j] = in[width - 1 - j] for elements of one machine word each.
template <class Word> void ReverseCopy(const char* in, char* out, int64_t width) {
  memory::ReverseFor<Word>()(reinterpret_cast<const Word*>(in), reinterpret_cast<Word*>(out), width);
}

// out = X moved by m, X's elements `size` bytes each. Out's rows (its innermost dim) are
// split across the passes' team: each row comes from one row of X (index_map.h, the last
// dim left out of the walk), reversed or rotated along the last dim while it is copied.
void MoveBytes(const char* px, char* po, Moves m, size_t size) {
  if (m.dims.empty()) {  // a scalar
    std::memcpy(po, px, size);
    return;
  }
  const int64_t width = m.dims.back();
  const bool reverse = m.reverse.back();
  const int64_t shift = m.shift.back();
  m.reverse.back() = false;
  m.shift.back() = 0;
  using Copy = void (*)(const char*, char*, int64_t);
  Copy reverse_copy = nullptr;
  switch (size) {
    case 1: reverse_copy = &ReverseCopy<uint8_t>; break;
    case 2: reverse_copy = &ReverseCopy<uint16_t>; break;
    case 4: reverse_copy = &ReverseCopy<uint32_t>; break;
    case 8: reverse_copy = &ReverseCopy<uint64_t>; break;
    default:
      if (reverse) throw Error("flip: no element of " + std::to_string(size) + " bytes");
  }
  const auto row_bytes = static_cast<size_t>(width) * size;
  const double bytes =
      2.0 * static_cast<double>(row_bytes) * static_cast<double>(Product(m.dims, 0, m.dims.size() - 1));
  // Whole rows as runs of one element each: the outer dims' moves pick the source row. The
  // trailing 1 makes each row a row of the walk, so that the team splits them (without it
  // the last outer dim would be one row of runs, walked on one thread); the moves get a
  // dim of 1 at the same place, which moves nothing.
  std::vector<int64_t> rows_dims(m.dims.begin(), m.dims.end() - 1);
  rows_dims.push_back(1);
  m.dims.insert(m.dims.end() - 1, 1);
  m.shift.insert(m.shift.end() - 1, 0);
  m.reverse.insert(m.reverse.end() - 1, false);
  ParallelForEachMappedRun(
      rows_dims, rows_dims,
      [&m](size_t k, int64_t i) {
        const int64_t from = m.reverse[k] ? m.dims[k] - 1 - i : i - m.shift[k];
        return from < 0 ? from + m.dims[k] : from;
      },
      bytes,
      [&](int64_t o, int64_t from, int64_t n) {
        for (int64_t r = 0; r < n; ++r) {
          const char* in = px + static_cast<size_t>(from + r) * row_bytes;
          char* out = po + static_cast<size_t>(o + r) * row_bytes;
          if (reverse) {
            reverse_copy(in, out, width);
          } else {
            // out[(j + shift) % width] = in[j]
            const size_t head = static_cast<size_t>(shift) * size;
            CopyBytes(out + head, in, row_bytes - head);
            CopyBytes(out, in + row_bytes - head, head);
          }
        }
      });
}

template <bool kRoll> void Move(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const Moves m = MovesOf<kRoll>(ctx, x.dims());
  const char* px = static_cast<const char*>(x.raw_data());
  if (x.numel() == 0) return WriteOutputBytes(ctx, "Out", {"X"}, x.dtype(), x.dims(), [](char*) {});
  WriteOutputBytes(ctx, "Out", {"X"}, x.dtype(), x.dims(),
                   [&](char* po) { MoveBytes(px, po, m, DataTypeSize(x.dtype())); });
}

template <class T, bool kRoll> void MoveGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = ctx.Input("X").dims();
  if (g.dims() != d) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(d));
  const Moves m = Inverse(MovesOf<kRoll>(ctx, d));
  const char* pg = static_cast<const char*>(g.raw_data());
  if (g.numel() == 0) return WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, d, [](T*) {});
  WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, d,
                 [&](T* dx) { MoveBytes(pg, reinterpret_cast<char*>(dx), m, sizeof(T)); });
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
  const OpSchema roll =
      OpSchema("roll")
          .Doc(
              "Out = X shifted by shifts[i] along axis[i], elements past the end coming round to the start; with no "
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
