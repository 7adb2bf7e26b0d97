// plugins/math/channel_layout.h — a batch_norm operand seen as [N, C, S] (S: the spatial
// dims' product), in NCHW or NHWC order (data_layout), for the CPU and CUDA kernels.
#ifndef RILL_PLUGINS_MATH_CHANNEL_LAYOUT_H_
#define RILL_PLUGINS_MATH_CHANNEL_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "shape.h"

namespace rill::math {

struct ChannelLayout {
  int64_t n = 1, c = 1, s = 1;
  bool nhwc = false;
  int64_t At(int64_t i, int64_t ch, int64_t k) const { return nhwc ? (i * s + k) * c + ch : (i * c + ch) * s + k; }
};
inline ChannelLayout LayoutOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  const bool nhwc = IsNhwc(ctx.Attr<std::string>("data_layout"), "data_layout");
  if (d.size() < 2) throw Error("X " + DimsString(d) + " has no channel dim");
  ChannelLayout l;
  l.nhwc = nhwc;
  l.n = d[0];
  l.c = l.nhwc ? d.back() : d[1];
  l.s = Product(d, 0, d.size()) / std::max<int64_t>(l.n * l.c, 1);
  return l;
}

// The data of `slot`, which must hold one value per channel, of type T.
template <class T> const T* ChannelInput(KernelContext& ctx, const char* slot, int64_t c) {
  Tensor t = ctx.Input(slot);
  if (t.dtype() != DataTypeOf<T>::value) {
    throw Error(std::string(slot) + " holds " + DataTypeName(t.dtype()) + " where this kernel takes " +
                DataTypeName(DataTypeOf<T>::value) +
                " (per-channel tensors are fp32 for an fp16 X, X's dtype otherwise)");
  }
  if (t.numel() != c)
    throw Error(std::string(slot) + " " + DimsString(t.dims()) + " must hold one value per channel (" +
                std::to_string(c) + ")");
  return t.data<T>();
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_CHANNEL_LAYOUT_H_
