// plugins/math/pool_plan.h — the windows along one dim that the pooling ops share, and
// pool2d's, as the CPU and CUDA kernels read them from X's dims and the op's attributes
// (ksize, strides, paddings, padding_algorithm, ceil_mode, global_pooling, adaptive,
// exclusive, data_format), already checked: every window is non-empty.
#ifndef RILL_PLUGINS_MATH_POOL_PLAN_H_
#define RILL_PLUGINS_MATH_POOL_PLAN_H_

#include <cstdint>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::math {

// Where each output position's window lies along one spatial dim: [begin, end) in the
// input, clipped to it, and the unclipped window's size (the divisor of a non-exclusive
// average).
struct Windows {
  std::vector<int64_t> begin, end;
  int64_t full = 1;
};

// The windows along a dim of `in` for kernel `k`, stride `s`, padding `before` and
// `after` (ceil_mode: a last partial window counts); adaptive: `out_size` windows that
// split `in` evenly (k, s and the paddings unused). Throws Error where the sizes overflow,
// the window is larger than the padded input or a window lies wholly in the padding.
Windows SlideWindows(int64_t in, int64_t k, int64_t s, int64_t before, int64_t after, bool ceil_mode, bool adaptive,
                     int64_t out_size);

struct PoolPlan {
  bool nhwc = false, max = true, exclusive = true, adaptive = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, top = 0, left = 0;  // not adaptive: the window, step, leading padding
  Windows rows, cols;
  std::vector<int64_t> out_dims;
  int64_t At(int64_t i, int64_t ch, int64_t y, int64_t x, int64_t hh, int64_t ww) const {
    return nhwc ? ((i * hh + y) * ww + x) * c + ch : ((i * c + ch) * hh + y) * ww + x;
  }
  // How far apart X's elements of one channel are along a row, and its rows.
  int64_t ColStride() const { return nhwc ? c : 1; }
  int64_t RowStride() const { return w * ColStride(); }
};

// pool2d's plan for X of dims `d`; throws Error saying what does not fit.
PoolPlan PoolPlanOf(KernelContext& ctx, const std::vector<int64_t>& d);

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_POOL_PLAN_H_
