// sequence_mask: lengths into masks, with Paddle's contract (paddle/fluid/operators/
// sequence_ops/sequence_mask_op.*): X holds lengths (int32 or int64, any shape); Y is
// X's shape + [maxlen], Y[..., j] = j < X[...], as out_dtype (bool, uint8, int32, int64,
// float32 or float64). maxlen comes from MaxLenTensor when given, else the attribute; one
// below 0 means the largest length in X. It has no gradient.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Each row of Y is two fills, its first min(max(X, 0), maxlen) entries one and the rest
// zero, in row chunks on the team.
template <class Out, class In> void WriteMask(const In* x, int64_t n, int64_t maxlen, Out* y) {
  ParallelFor(n, static_cast<double>(n) * static_cast<double>(maxlen) * sizeof(Out),
              [&](int64_t, int64_t first, int64_t last) {
                for (int64_t i = first; i < last; ++i) {
                  const int64_t ones = std::clamp(static_cast<int64_t>(x[i]), int64_t{0}, maxlen);
                  std::fill(y + i * maxlen, y + i * maxlen + ones, Out(1));
                  std::fill(y + i * maxlen + ones, y + (i + 1) * maxlen, Out(0));
                }
              });
}

template <class T> void SequenceMask(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  int64_t maxlen = ctx.Attr<int64_t>("maxlen");
  if (HasInputVariable(ctx, "MaxLenTensor")) {
    Tensor m = ctx.Input("MaxLenTensor");
    if (m.numel() != 1) throw Error("MaxLenTensor " + DimsString(m.dims()) + " must hold one value");
    maxlen = m.dtype() == RILL_INT64 ? m.data<int64_t>()[0] : m.data<int32_t>()[0];
  }
  if (maxlen < 0) maxlen = x.numel() > 0 ? static_cast<int64_t>(*std::max_element(px, px + x.numel())) : 0;
  std::vector<int64_t> dims = x.dims();
  dims.push_back(maxlen);
  const int32_t out_dtype = static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype"));
  void* y = ctx.Output("Y").Allocate(out_dtype, dims);
  switch (out_dtype) {
    case RILL_BOOL: return WriteMask(px, x.numel(), maxlen, static_cast<bool*>(y));
    case RILL_UINT8: return WriteMask(px, x.numel(), maxlen, static_cast<uint8_t*>(y));
    case RILL_INT32: return WriteMask(px, x.numel(), maxlen, static_cast<int32_t*>(y));
    case RILL_INT64: return WriteMask(px, x.numel(), maxlen, static_cast<int64_t*>(y));
    case RILL_FP32: return WriteMask(px, x.numel(), maxlen, static_cast<float*>(y));
    case RILL_FP64: return WriteMask(px, x.numel(), maxlen, static_cast<double*>(y));
    default:
      throw Error("out_dtype must be bool, uint8, int32, int64, float32 or float64, got " +
                  std::string(DataTypeName(out_dtype)));
  }
}

}  // namespace

void RegisterSequenceMask(Registrar& r) {
  r.Op(OpSchema("sequence_mask")
           .Doc("Y[..., j] = j < X[...]: each length of X as a mask of maxlen entries (from MaxLenTensor, else the "
                "attribute; below 0: the largest length), of out_dtype. As Paddle's.")
           .Input("X", "int32 or int64 lengths, any shape")
           .Input("MaxLenTensor", "int32 or int64 [1]: maxlen, given at run time", RILL_SLOT_OPTIONAL)
           .Output("Y", "X's shape + [maxlen]")
           .Attr("maxlen", int64_t{-1}, "the mask's length; below 0: the largest length in X")
           .Attr("out_dtype", int64_t{RILL_INT64}, "Y's element type (framework.proto's number)")
           .KernelDtypeFrom("X"));
  RegisterCpu<int32_t, int64_t>(r, "sequence_mask", [](auto t) { return &SequenceMask<decltype(t)>; });
}

}  // namespace rill::math
