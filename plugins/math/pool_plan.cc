#include "pool_plan.h"

#include <tuple>

#include "shape.h"

namespace rill::math {
Windows SlideWindows(int64_t in, int64_t k, int64_t s, int64_t before, int64_t after, bool ceil_mode, bool adaptive,
                     int64_t out_size) {
  Windows w;
  w.full = k;
  if (adaptive) {
    for (int64_t o = 0; o < out_size; ++o) {
      w.begin.push_back(o * in / out_size);
      w.end.push_back(((o + 1) * in + out_size - 1) / out_size);
    }
    return w;
  }
  // The sizes in checked arithmetic, and every window overlapping the input (the first
  // starts before `k` of padding ends, the last before the input ends), before anything is
  // allocated: the windows then number at most in + k, however large the paddings.
  int64_t padded = 0;
  if (!CheckedAdd(in, before, &padded) || !CheckedAdd(padded, after, &padded)) {
    throw Error("the paddings " + std::to_string(before) + " and " + std::to_string(after) + " are past int64");
  }
  const int64_t span = padded - k;
  if (span < 0)
    throw Error("the window " + std::to_string(k) + " is larger than the padded input " + std::to_string(padded));
  const int64_t out = (ceil_mode ? span / s + (span % s != 0) : span / s) + 1;
  if (before >= k || (out - 1) * s - before >= in) {
    throw Error("a pooling window lies wholly in the padding (input " + std::to_string(in) + ", window " +
                std::to_string(k) + ", stride " + std::to_string(s) + ", paddings " + std::to_string(before) + " and " +
                std::to_string(after) + ")");
  }
  w.begin.reserve(static_cast<size_t>(out));
  w.end.reserve(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - before;
    w.begin.push_back(std::max<int64_t>(start, 0));
    w.end.push_back(std::min<int64_t>(start + k, in));
  }
  return w;
}

PoolPlan PoolPlanOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  PoolPlan p;
  const std::string format = ctx.Attr<std::string>("data_format");
  if (d.size() != 4) throw Error("X " + DimsString(d) + " is not 4-D (pool2d)");
  p.nhwc = IsNhwc(format, "data_format");
  p.n = d[0];
  p.c = p.nhwc ? d[3] : d[1];
  p.h = p.nhwc ? d[1] : d[2];
  p.w = p.nhwc ? d[2] : d[3];
  const std::string type = ctx.Attr<std::string>("pooling_type");
  if (type != "max" && type != "avg") throw Error("pooling_type '" + type + "' is neither max nor avg");
  p.max = type == "max";
  p.exclusive = ctx.Attr<bool>("exclusive");
  p.adaptive = ctx.Attr<bool>("adaptive");
  std::vector<int64_t> k = ctx.Attr<std::vector<int64_t>>("ksize");
  std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  std::vector<int64_t> pad = ctx.Attr<std::vector<int64_t>>("paddings");
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  const bool global = ctx.Attr<bool>("global_pooling");
  if (global) {
    k = {p.h, p.w};
    p.adaptive = false;
  }
  if (k.size() != 2 || s.size() != 2 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1) {
    throw Error("ksize " + DimsString(k) + " and strides " + DimsString(s) + " must be two positive values each");
  }
  pad = FourPaddings(pad);
  const int64_t in[2] = {p.h, p.w};
  if (algorithm == "VALID") {
    pad = {0, 0, 0, 0};
  } else if (algorithm == "SAME") {
    for (int a = 0; a < 2; ++a) std::tie(pad[2 * a], pad[2 * a + 1]) = SamePadding(in[a], k[a], s[a]);
  } else if (algorithm != "EXPLICIT") {
    throw Error("padding_algorithm '" + algorithm + "' is not EXPLICIT, SAME or VALID");
  }
  // Global and adaptive pooling pad nothing, whatever the algorithm says (Paddle's rule).
  if (global || p.adaptive) pad = {0, 0, 0, 0};
  const bool ceil_mode = ctx.Attr<bool>("ceil_mode");
  p.kh = k[0];
  p.kw = k[1];
  p.sh = s[0];
  p.sw = s[1];
  p.top = pad[0];
  p.left = pad[2];
  if (p.adaptive) {  // the output's size is ksize: checked before a window is planned for each
    CheckedCount(p.nhwc ? std::vector<int64_t>{p.n, k[0], k[1], p.c} : std::vector<int64_t>{p.n, p.c, k[0], k[1]},
                 sizeof(double), "pool2d's adaptive output (ksize)");
  }
  p.rows = SlideWindows(p.h, k[0], s[0], pad[0], pad[1], ceil_mode, p.adaptive, k[0]);
  p.cols = SlideWindows(p.w, k[1], s[1], pad[2], pad[3], ceil_mode, p.adaptive, k[1]);
  const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
  p.out_dims = p.nhwc ? std::vector<int64_t>{p.n, oh, ow, p.c} : std::vector<int64_t>{p.n, p.c, oh, ow};
  const auto empty = [](const Windows& ws) {
    for (size_t i = 0; i < ws.begin.size(); ++i) {
      if (ws.end[i] <= ws.begin[i]) return true;
    }
    return false;
  };
  if (empty(p.rows) || empty(p.cols)) throw Error("a pooling window lies wholly in the padding");
  return p;
}

}  // namespace rill::math
