// sequence_pad and sequence_unpad (and their gradients): between the packed rows of a LoD
// tensor and a padded batch, with Paddle's contracts (paddle/fluid/operators/
// sequence_ops/sequence_pad_op.*, sequence_unpad_op.*).
//
// sequence_pad: X [R, ...] packs S sequences (its last LoD level); Out is [S, L, ...], row
// s holding sequence s's rows, then PadValue (one value, or one row of X's row shape)
// up to L = padded_length (-1: the longest sequence; a shorter L than a sequence is an
// error). Length (int64 [S]) is each sequence's length. sequence_unpad is its inverse:
// X [S, L, ...] and Length [S] give Out [sum of Length, ...] (a 2-D X gives [.., 1]),
// packing the first Length[s] rows of each X[s], with Length as its LoD. The gradients
// move Out@GRAD's rows back where they came from; padding gets no gradient.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Rows of `bytes` each: packed row o[s] + k <-> padded row s * padded + k, for k < length.
template <class Move> void ForEachSequenceRow(const std::vector<uint64_t>& o, int64_t padded, Move move) {
  for (size_t s = 0; s + 1 < o.size(); ++s) {
    for (uint64_t k = 0; k < o[s + 1] - o[s]; ++k) move(o[s] + k, static_cast<uint64_t>(s * padded) + k);
  }
}

int64_t Longest(const std::vector<uint64_t>& o) {
  uint64_t longest = 0;
  for (size_t s = 0; s + 1 < o.size(); ++s) longest = std::max(longest, o[s + 1] - o[s]);
  return static_cast<int64_t>(longest);
}

int64_t PaddedLength(KernelContext& ctx, const std::vector<uint64_t>& o) {
  const int64_t padded = ctx.Attr<int64_t>("padded_length"), longest = Longest(o);
  if (padded == -1) return longest;
  if (padded < longest) {
    throw Error("padded_length " + std::to_string(padded) + " is shorter than the longest sequence of X (" +
                std::to_string(longest) + ")");
  }
  return padded;
}

template <class T> void SequencePad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), pad = ctx.Input("PadValue");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  const int64_t padded = PaddedLength(ctx, o), seqs = static_cast<int64_t>(o.size()) - 1;
  std::vector<int64_t> dims = x.dims();
  const int64_t width = dims[0] > 0 ? x.numel() / dims[0] : Product(dims, 1, dims.size());
  if (pad.numel() != 1 && pad.numel() != width) {
    throw Error("PadValue " + DimsString(pad.dims()) + " must be one value or one row of X's (" +
                std::to_string(width) + " values)");
  }
  dims[0] = padded;
  dims.insert(dims.begin(), seqs);
  const T *px = x.data<T>(), *pv = pad.data<T>();
  // Each sequence's block of Out in sequence chunks on the team: its rows copied in one
  // piece (they follow one another in X as in Out), then its padding rows filled.
  WriteOutput<T>(ctx, "Out", {"X", "PadValue"}, dims, [&](T* out) {
    ParallelFor(seqs, 2.0 * sizeof(T) * static_cast<double>(seqs * padded * width),
                [&](int64_t, int64_t first, int64_t last) {
                  for (int64_t s = first; s < last; ++s) {
                    const auto length = static_cast<int64_t>(o[s + 1] - o[s]);
                    T* block = out + s * padded * width;
                    std::memcpy(block, px + o[s] * width, sizeof(T) * static_cast<size_t>(length * width));
                    for (int64_t r = length; r < padded; ++r) {
                      VecMap<T> row(block + r * width, width);
                      if (pad.numel() == 1) {
                        row.setConstant(pv[0]);
                      } else {
                        row = ConstVecMap<T>(pv, width);
                      }
                    }
                  }
                });
  });
  int64_t* length = ctx.AllocateOutput<int64_t>("Length", {seqs});
  for (int64_t s = 0; s < seqs; ++s) length[s] = static_cast<int64_t>(o[s + 1] - o[s]);
}

template <class T> void SequencePadGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "X", x, SIZE_MAX);
  const int64_t padded = PaddedLength(ctx, o), seqs = static_cast<int64_t>(o.size()) - 1;
  const int64_t width = x.dims()[0] > 0 ? x.numel() / x.dims()[0] : 0;
  if (g.numel() != seqs * padded * width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  }
  const T* pg = g.data<T>();
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "PadValue", "Out@GRAD"}, x.dims(), [&](T* dx) {
    ForEachSequenceRow(o, padded, [&](uint64_t to, uint64_t from) {
      std::memcpy(dx + to * width, pg + from * width, sizeof(T) * static_cast<size_t>(width));
    });
  });
  ctx.Output("X@GRAD").set_lod(lod);
}

// Length as offsets, checked against X [S, L, ...].
std::vector<uint64_t> UnpadOffsets(KernelContext& ctx, const Tensor& x) {
  Tensor length = ctx.Input("Length");
  if (x.ndim() < 2) throw Error("X " + DimsString(x.dims()) + " must be [S, L, ...]: padded sequences");
  const int64_t seqs = x.dims()[0], padded = x.dims()[1];
  if (length.numel() != seqs || length.dtype() != RILL_INT64) {
    throw Error("Length must be int64 with one length per sequence of X (" + std::to_string(seqs) + "), got " +
                DataTypeName(length.dtype()) + " " + DimsString(length.dims()));
  }
  std::vector<uint64_t> o = {0};
  for (int64_t s = 0; s < seqs; ++s) {
    const int64_t n = length.data<int64_t>()[s];
    if (n < 0 || n > padded) {
      throw Error("Length[" + std::to_string(s) + "] is " + std::to_string(n) + ", outside [0, " +
                  std::to_string(padded) + "] (X's padded length)");
    }
    o.push_back(o.back() + static_cast<uint64_t>(n));
  }
  return o;
}

template <class T> void SequenceUnpad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<uint64_t> o = UnpadOffsets(ctx, x);
  const int64_t padded = x.dims()[1], width = x.numel() / std::max<int64_t>(1, x.dims()[0] * padded);
  const std::vector<int64_t> xd = x.dims();
  std::vector<int64_t> dims(xd.begin() + 1, xd.end());
  dims[0] = static_cast<int64_t>(o.back());
  if (dims.size() == 1) dims.push_back(1);
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X", "Length"}, dims, [&](T* out) {
    ForEachSequenceRow(o, padded, [&](uint64_t to, uint64_t from) {
      std::memcpy(out + to * width, px + from * width, sizeof(T) * static_cast<size_t>(width));
    });
  });
  ctx.Output("Out").set_lod({o});
}

template <class T> void SequenceUnpadGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const std::vector<uint64_t> o = UnpadOffsets(ctx, x);
  const int64_t padded = x.dims()[1], width = x.numel() / std::max<int64_t>(1, x.dims()[0] * padded);
  if (g.numel() != static_cast<int64_t>(o.back()) * width) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  }
  const T* pg = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Length", "Out@GRAD"}, x.dims(), [&](T* dx) {
    std::fill(dx, dx + x.numel(), T(0));
    ForEachSequenceRow(o, padded, [&](uint64_t from, uint64_t to) {
      std::memcpy(dx + to * width, pg + from * width, sizeof(T) * static_cast<size_t>(width));
    });
  });
}

}  // namespace

void RegisterSequencePad(Registrar& r) {
  const OpSchema pad =
      OpSchema("sequence_pad")
          .Doc(
              "Out[s] = X's sequence s (its last LoD level), then PadValue up to padded_length rows (-1: the "
              "longest sequence); Length = each sequence's length. As Paddle's.")
          .Input("X", "[R, ...], a LoD tensor")
          .Input("PadValue", "one value, or one row of X's row shape")
          .Output("Out", "[S, padded_length, ...]")
          .Output("Length", "int64 [S]")
          .Attr("padded_length", int64_t{-1}, "rows per sequence in Out; -1: the longest sequence's")
          .KernelDtypeFrom("X")
          .Grad("sequence_pad_grad", "X,PadValue,Out@GRAD", "X");
  r.Op(pad);
  r.Op(pad.MakeGradSchema());
  const OpSchema unpad =
      OpSchema("sequence_unpad")
          .Doc(
              "Out = the first Length[s] rows of each X[s], packed; Length is Out's LoD. sequence_pad's "
              "inverse. As Paddle's.")
          .Input("X", "[S, L, ...], padded sequences")
          .Input("Length", "int64 [S]: each sequence's length")
          .Output("Out", "[sum of Length, ...] ([.., 1] for a 2-D X), with Length as its LoD")
          .KernelDtypeFrom("X")
          .Grad("sequence_unpad_grad", "X,Length,Out@GRAD", "X");
  r.Op(unpad);
  r.Op(unpad.MakeGradSchema());
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_pad", [](auto t) { return &SequencePad<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_pad_grad", [](auto t) { return &SequencePadGrad<decltype(t)>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "sequence_unpad", [](auto t) { return &SequenceUnpad<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_unpad_grad", [](auto t) { return &SequenceUnpadGrad<decltype(t)>; });
}

}  // namespace rill::math
