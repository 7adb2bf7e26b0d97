// plugins/math/conv_plan.h — a 2-D convolution's geometry, as conv2d, depthwise_conv2d and
// conv2d_transpose (as the convolution whose input gradient it is) read it from their
// operands and attributes, already checked: the kernels, CPU and CUDA, take it as it is.
#ifndef RILL_PLUGINS_MATH_CONV_PLAN_H_
#define RILL_PLUGINS_MATH_CONV_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::math {

struct ConvPlan {
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0;  // Input
  int64_t m = 0, kh = 0, kw = 0;       // Filter: m output channels of c / groups inputs
  int64_t groups = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // bottom and right may exceed what the last window reads
  int64_t oh = 0, ow = 0;
  int64_t cg() const { return c / groups; }
  int64_t mg() const { return m / groups; }
  int64_t col_rows() const { return cg() * kh * kw; }
  std::vector<int64_t> OutDims() const {
    return nhwc ? std::vector<int64_t>{n, oh, ow, m} : std::vector<int64_t>{n, m, oh, ow};
  }
  bool operator==(const ConvPlan& o) const {
    return nhwc == o.nhwc && n == o.n && c == o.c && h == o.h && w == o.w && m == o.m && kh == o.kh && kw == o.kw &&
           groups == o.groups && sh == o.sh && sw == o.sw && dh == o.dh && dw == o.dw && top == o.top &&
           bottom == o.bottom && left == o.left && right == o.right && oh == o.oh && ow == o.ow;
  }
};

// The geometry of a convolution of `in` by `filter` (format NCHW or NHWC) with 4-value
// paddings [top, bottom, left, right], checked: throws Error saying what does not fit.
ConvPlan ConvPlanFrom(const std::string& format, const std::vector<int64_t>& in, const std::vector<int64_t>& filter,
                      int64_t groups, const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                      const std::vector<int64_t>& pad);

// conv2d's (and depthwise_conv2d's) plan from its attributes: paddings of 2 or 4 values,
// or as padding_algorithm (EXPLICIT, SAME, VALID) says.
ConvPlan ConvPlanOf(KernelContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& filter);

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_CONV_PLAN_H_
