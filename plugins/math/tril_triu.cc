// tril_triu (and its gradient), with Paddle's contract (paddle/fluid/operators/tril_triu_op.*):
// Out = X with the elements outside a triangle of each matrix (its last two dims) zeroed.
// lower keeps row i's elements at columns j with j - i <= diagonal (tril); otherwise those
// with j - i >= diagonal (triu). The gradient keeps the same triangle of Out@GRAD.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// out = in's triangle, both [matrices, rows, cols] of T; out may be in. T is an unsigned
// integer of the element's size: the op moves elements and writes zeros, whose bits are 0
// in every element type.
template <class T>
void KeepTriangle(const void* from, void* to, const std::vector<int64_t>& dims, int64_t diagonal, bool lower) {
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  const int64_t matrices = rows * cols == 0 ? 0 : Product(dims, 0, dims.size()) / (rows * cols);
  const T* in = static_cast<const T*>(from);
  T* out = static_cast<T*>(to);
  ParallelFor(matrices * rows, 2.0 * sizeof(T) * static_cast<double>(matrices * rows * cols),
              [=](int64_t, int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t i = r % rows;
                  // Row i keeps columns [0, i + diagonal] (lower) or [i + diagonal, cols).
                  const int64_t split = std::clamp<int64_t>(lower ? i + diagonal + 1 : i + diagonal, 0, cols);
                  const int64_t keep_begin = lower ? 0 : split, keep_end = lower ? split : cols;
                  std::fill(out + r * cols, out + r * cols + keep_begin, T(0));
                  std::copy(in + r * cols + keep_begin, in + r * cols + keep_end, out + r * cols + keep_begin);
                  std::fill(out + r * cols + keep_end, out + (r + 1) * cols, T(0));
                }
              });
}

// Out = In's triangle, any element type of 1, 2, 4 or 8 bytes.
void TriangleOf(KernelContext& ctx, const char* in_slot, const char* out_slot) {
  Tensor x = ctx.Input(in_slot);
  const std::vector<int64_t> dims = x.dims();
  if (dims.size() < 2) throw Error(std::string(in_slot) + " " + DimsString(dims) + " must have at least 2 dims");
  const int64_t diagonal = ctx.Attr<int64_t>("diagonal");
  const bool lower = ctx.Attr<bool>("lower");
  const void* in = x.raw_data();
  WriteOutputBytes(ctx, out_slot, {in_slot}, x.dtype(), dims, [&](char* out) {
    switch (DataTypeSize(x.dtype())) {
      case 1: return KeepTriangle<uint8_t>(in, out, dims, diagonal, lower);
      case 2: return KeepTriangle<uint16_t>(in, out, dims, diagonal, lower);
      case 4: return KeepTriangle<uint32_t>(in, out, dims, diagonal, lower);
      case 8: return KeepTriangle<uint64_t>(in, out, dims, diagonal, lower);
      default: throw Error(std::string("no tril_triu for ") + DataTypeName(x.dtype()) + " elements");
    }
  });
}

void TrilTriu(KernelContext& ctx) { TriangleOf(ctx, "X", "Out"); }
void TrilTriuGrad(KernelContext& ctx) { TriangleOf(ctx, "Out@GRAD", "X@GRAD"); }

}  // namespace

void RegisterTrilTriu(Registrar& r) {
  const OpSchema schema =
      OpSchema("tril_triu")
          .Doc(
              "Out = X with each matrix's (last two dims') elements outside a triangle zeroed: lower keeps "
              "j - i <= diagonal (tril), else j - i >= diagonal (triu). As Paddle's.")
          .Input("X", "[..., M, N]")
          .Output("Out", "shaped like X")
          .Attr("diagonal", int64_t{0}, "the triangle's edge: 0 the main diagonal, positive above it")
          .Attr("lower", true, "keep the lower triangle (tril); false: the upper (triu)")
          .KernelDtypeFrom("X")
          .Grad("tril_triu_grad", "Out@GRAD", "X");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  r.Kernel("tril_triu", RILL_CPU, RILL_ANY_DTYPE, &TrilTriu);
  r.Kernel("tril_triu_grad", RILL_CPU, RILL_ANY_DTYPE, &TrilTriuGrad);
}

}  // namespace rill::math
