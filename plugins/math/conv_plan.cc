#include "conv_plan.h"

#include <tuple>

#include "shape.h"

namespace rill::math {

ConvPlan ConvPlanFrom(const std::string& format, const std::vector<int64_t>& in, const std::vector<int64_t>& filter,
                      int64_t groups, const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                      const std::vector<int64_t>& pad) {
  ConvPlan p;
  if (in.size() != 4 || filter.size() != 4) {
    throw Error("Input " + DimsString(in) + " and Filter " + DimsString(filter) + " must be 4-D");
  }
  p.nhwc = IsNhwc(format, "data_format");
  p.n = in[0];
  p.c = p.nhwc ? in[3] : in[1];
  p.h = p.nhwc ? in[1] : in[2];
  p.w = p.nhwc ? in[2] : in[3];
  p.m = filter[0];
  p.kh = filter[2];
  p.kw = filter[3];
  p.groups = groups;
  if (p.groups < 1 || p.c % p.groups != 0 || p.m % p.groups != 0) {
    throw Error("groups " + std::to_string(p.groups) + " must divide Input's " + std::to_string(p.c) +
                " channels and Filter's " + std::to_string(p.m) + " outputs");
  }
  if (filter[1] != p.cg()) {
    throw Error("Filter " + DimsString(filter) + " must have " + std::to_string(p.cg()) + " input channels (Input's " +
                std::to_string(p.c) + " / groups " + std::to_string(p.groups) + ")");
  }
  if (s.size() != 2 || d.size() != 2 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1) {
    throw Error("strides " + DimsString(s) + " and dilations " + DimsString(d) + " must be two positive values each");
  }
  p.sh = s[0];
  p.sw = s[1];
  p.dh = d[0];
  p.dw = d[1];
  p.top = pad[0];
  p.bottom = pad[1];
  p.left = pad[2];
  p.right = pad[3];
  const int64_t in_hw[2] = {p.h, p.w}, k[2] = {p.kh, p.kw}, st[2] = {p.sh, p.sw}, dil[2] = {p.dh, p.dw};
  int64_t out[2];
  for (int a = 0; a < 2; ++a) {
    const int64_t span = in_hw[a] + pad[2 * a] + pad[2 * a + 1] - (dil[a] * (k[a] - 1) + 1);
    if (span < 0) {
      throw Error("the " + std::string(a ? "width" : "height") + " " + std::to_string(in_hw[a]) + " padded by " +
                  std::to_string(pad[2 * a] + pad[2 * a + 1]) + " is smaller than the dilated kernel " +
                  std::to_string(dil[a] * (k[a] - 1) + 1));
    }
    out[a] = span / st[a] + 1;
  }
  p.oh = out[0];
  p.ow = out[1];
  return p;
}

ConvPlan ConvPlanOf(KernelContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& filter) {
  const std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  std::vector<int64_t> d = ctx.Attr<std::vector<int64_t>>("dilations");
  std::vector<int64_t> pad = FourPaddings(ctx.Attr<std::vector<int64_t>>("paddings"));
  const std::string format = ctx.Attr<std::string>("data_format");
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  if (algorithm == "VALID") {
    pad = {0, 0, 0, 0};
  } else if (algorithm == "SAME") {
    if (in.size() != 4 || filter.size() != 4 || s.size() != 2 || d.size() != 2) {
      return ConvPlanFrom(format, in, filter, ctx.Attr<int64_t>("groups"), s, d, pad);  // reports what is wrong
    }
    // Paddle's SAME: padded for the undilated filter, and the dilations reset to 1.
    const bool nhwc = format == "NHWC";
    const int64_t in_hw[2] = {nhwc ? in[1] : in[2], nhwc ? in[2] : in[3]};
    d = {1, 1};
    for (int a = 0; a < 2; ++a) {
      std::tie(pad[2 * a], pad[2 * a + 1]) = SamePadding(in_hw[a], filter[2 + a], std::max<int64_t>(s[a], 1));
    }
  } else if (algorithm != "EXPLICIT") {
    throw Error("padding_algorithm '" + algorithm + "' is not EXPLICIT, SAME or VALID");
  }
  return ConvPlanFrom(format, in, filter, ctx.Attr<int64_t>("groups"), s, d, pad);
}

}  // namespace rill::math
