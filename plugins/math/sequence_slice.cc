// sequence_slice: rows Offset[s] .. Offset[s] + Length[s] - 1 of each sequence s of X,
// with Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_slice_op.*): X
// packs S sequences (one LoD level); Offset and Length are int64 [S, 1] (or [S]); a slice
// past its sequence's end is an error. Out packs the slices, its LoD their lengths. The
// gradient puts Out@GRAD's rows back where they were cut from, zeros elsewhere.
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

struct Slices {
  std::vector<uint64_t> from;  // per sequence, its first row in X
  std::vector<uint64_t> out;   // Out's offsets
  int64_t width = 0;
};

Slices SlicesOf(KernelContext& ctx, const Tensor& x) {
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, 1);
  const size_t seqs = o.size() - 1;
  Tensor offset = ctx.Input("Offset"), length = ctx.Input("Length");
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{offset, "Offset"}, {length, "Length"}}) {
    if (t.dtype() != RILL_INT64 || t.numel() != static_cast<int64_t>(seqs)) {
      throw Error(std::string(name) + " must be int64 with one entry per sequence of X (" + std::to_string(seqs) +
                  "), got " + DataTypeName(t.dtype()) + " " + DimsString(t.dims()));
    }
  }
  Slices s;
  s.out.push_back(0);
  for (size_t i = 0; i < seqs; ++i) {
    const int64_t at = offset.data<int64_t>()[i], n = length.data<int64_t>()[i];
    const auto len = static_cast<int64_t>(o[i + 1] - o[i]);
    if (at < 0 || n < 0 || at + n > len) {
      throw Error("sequence " + std::to_string(i) + " of X has " + std::to_string(len) + " rows: Offset " +
                  std::to_string(at) + " and Length " + std::to_string(n) + " reach outside it");
    }
    s.from.push_back(o[i] + static_cast<uint64_t>(at));
    s.out.push_back(s.out.back() + static_cast<uint64_t>(n));
  }
  s.width = x.dims()[0] > 0 ? x.numel() / x.dims()[0] : 0;
  return s;
}

template <class T> void SequenceSlice(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const Slices s = SlicesOf(ctx, x);
  std::vector<int64_t> dims = x.dims();
  dims[0] = static_cast<int64_t>(s.out.back());
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X", "Offset", "Length"}, dims, [&](T* out) {
    for (size_t i = 0; i < s.from.size(); ++i) {
      std::memcpy(out + s.out[i] * s.width, px + s.from[i] * s.width,
                  sizeof(T) * (s.out[i + 1] - s.out[i]) * static_cast<size_t>(s.width));
    }
  });
  ctx.Output("Out").set_lod({s.out});
}

template <class T> void SequenceSliceGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const Slices s = SlicesOf(ctx, x);
  if (g.numel() != static_cast<int64_t>(s.out.back()) * s.width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  }
  const T* pg = g.data<T>();
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Offset", "Length", "Out@GRAD"}, x.dims(), [&](T* dx) {
    std::fill(dx, dx + x.numel(), T(0));
    for (size_t i = 0; i < s.from.size(); ++i) {
      std::memcpy(dx + s.from[i] * s.width, pg + s.out[i] * s.width,
                  sizeof(T) * (s.out[i + 1] - s.out[i]) * static_cast<size_t>(s.width));
    }
  });
  ctx.Output("X@GRAD").set_lod(lod);
}

}  // namespace

void RegisterSequenceSlice(Registrar& r) {
  const OpSchema slice =
      OpSchema("sequence_slice")
          .Doc(
              "Out = rows Offset[s] .. Offset[s] + Length[s] - 1 of each sequence s of X, packed; Out's LoD is "
              "Length. As Paddle's.")
          .Input("X", "[R, ...], a LoD tensor of one level")
          .Input("Offset", "int64 [S, 1]: where each slice starts in its sequence")
          .Input("Length", "int64 [S, 1]: each slice's rows")
          .Output("Out", "the slices")
          .KernelDtypeFrom("X")
          .Grad("sequence_slice_grad", "X,Offset,Length,Out@GRAD", "X");
  r.Op(slice);
  r.Op(slice.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_slice", [](auto t) { return &SequenceSlice<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_slice_grad", [](auto t) { return &SequenceSliceGrad<decltype(t)>; });
}

}  // namespace rill::math
