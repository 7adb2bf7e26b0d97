// pool2d with Fluid's contract: max or average pooling over 2-D windows of an NCHW or NHWC
// tensor (ksize, strides, paddings of 2 or 4 values, padding_algorithm EXPLICIT, SAME or
// VALID, ceil_mode, global_pooling, adaptive, exclusive averages), and its gradient.
// Plain loops, fp32 and fp64: the baseline faster kernels are checked against.
#include <cmath>
#include <limits>

#include <tuple>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// Where each output position's window lies along one spatial dim: [begin, end) in the
// input, clipped to it, and the unclipped window's size (the divisor of a non-exclusive
// average).
struct Windows {
  std::vector<int64_t> begin, end;
  int64_t full = 1;
};

// The windows along a dim of `in` for kernel `k`, stride `s`, padding `before`/`after`.
Windows Slide(int64_t in, int64_t k, int64_t s, int64_t before, int64_t after, bool ceil_mode, bool adaptive, int64_t out_size) {
  Windows w;
  w.full = k;
  if (adaptive) {
    for (int64_t o = 0; o < out_size; ++o) {
      w.begin.push_back(o * in / out_size);
      w.end.push_back(((o + 1) * in + out_size - 1) / out_size);
    }
    return w;
  }
  const int64_t span = in + before + after - k;
  if (span < 0) throw Error("the window " + std::to_string(k) + " is larger than the padded input " + std::to_string(in + before + after));
  const int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - before;
    w.begin.push_back(std::max<int64_t>(start, 0));
    w.end.push_back(std::min<int64_t>(start + k, in));
  }
  return w;
}

struct PoolPlan {
  bool nhwc = false, max = true, exclusive = true, adaptive = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  Windows rows, cols;
  std::vector<int64_t> out_dims;
  int64_t At(int64_t i, int64_t ch, int64_t y, int64_t x, int64_t hh, int64_t ww) const {
    return nhwc ? ((i * hh + y) * ww + x) * c + ch : ((i * c + ch) * hh + y) * ww + x;
  }
};

PoolPlan Plan(KernelContext& ctx, const std::vector<int64_t>& d) {
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
  if (ctx.Attr<bool>("global_pooling")) {
    k = {p.h, p.w};
    pad = {0, 0};
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
  const bool ceil_mode = ctx.Attr<bool>("ceil_mode");
  p.rows = Slide(p.h, k[0], s[0], pad[0], pad[1], ceil_mode, p.adaptive, k[0]);
  p.cols = Slide(p.w, k[1], s[1], pad[2], pad[3], ceil_mode, p.adaptive, k[1]);
  const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
  p.out_dims = p.nhwc ? std::vector<int64_t>{p.n, oh, ow, p.c} : std::vector<int64_t>{p.n, p.c, oh, ow};
  return p;
}

// Calls fn(out_index, y0, y1, x0, x1, divisor) for each output position of each image and
// channel; the window is [y0, y1) x [x0, x1), non-empty.
template <class F>
void ForEachWindow(const PoolPlan& p, F fn) {
  const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t ch = 0; ch < p.c; ++ch) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t y0 = p.rows.begin[y], y1 = p.rows.end[y], x0 = p.cols.begin[x], x1 = p.cols.end[x];
          if (y1 <= y0 || x1 <= x0) throw Error("a pooling window lies wholly in the padding");
          const int64_t divisor = p.exclusive || p.adaptive ? (y1 - y0) * (x1 - x0) : p.rows.full * p.cols.full;
          fn(i, ch, p.At(i, ch, y, x, oh, ow), y0, y1, x0, x1, divisor);
        }
      }
    }
  }
}

template <class T>
void Pool2d(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const PoolPlan p = Plan(ctx, x.dims());
  const T* px = x.data<T>();
  std::vector<T> out(static_cast<size_t>(Product(p.out_dims, 0, 4)));
  ForEachWindow(p, [&](int64_t i, int64_t ch, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t divisor) {
    T acc = p.max ? -std::numeric_limits<T>::infinity() : T(0);
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t xx = x0; xx < x1; ++xx) {
        const T v = px[p.At(i, ch, y, xx, p.h, p.w)];
        acc = p.max ? std::max(acc, v) : acc + v;
      }
    }
    out[static_cast<size_t>(o)] = p.max ? acc : acc / static_cast<T>(divisor);
  });
  std::copy(out.begin(), out.end(), ctx.AllocateOutput<T>("Out", p.out_dims));
}

// max: each output's gradient to its window's first largest element; avg: spread evenly
// over the window's divisor.
template <class T>
void Pool2dGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const PoolPlan p = Plan(ctx, x.dims());
  const T* px = x.data<T>();
  const T* pg = ctx.Input("Out@GRAD").data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  ForEachWindow(p, [&](int64_t i, int64_t ch, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t divisor) {
    if (p.max) {
      int64_t best = p.At(i, ch, y0, x0, p.h, p.w);
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t xx = x0; xx < x1; ++xx) {
          if (px[p.At(i, ch, y, xx, p.h, p.w)] > px[best]) best = p.At(i, ch, y, xx, p.h, p.w);
        }
      }
      dx[best] += pg[o];
      return;
    }
    const T share = pg[o] / static_cast<T>(divisor);
    for (int64_t y = y0; y < y1; ++y) {
      for (int64_t xx = x0; xx < x1; ++xx) dx[p.At(i, ch, y, xx, p.h, p.w)] += share;
    }
  });
}

}  // namespace

void RegisterPool(Registrar& r) {
  const OpSchema pool2d = OpSchema("pool2d")
      .Doc("Out = the max or average of each ksize window of X (NCHW or NHWC), windows strides apart over X "
           "padded by paddings ([h, w] or [top, bottom, left, right]) or as padding_algorithm says; adaptive: "
           "ksize is Out's size and the windows split X evenly.")
      .Input("X", "[N, C, H, W] or [N, H, W, C]")
      .Output("Out", "the pooled X")
      .Attr("pooling_type", "max", "max or avg")
      .Attr("ksize", std::vector<int64_t>{1, 1}, "the window (adaptive: Out's size)")
      .Attr("global_pooling", false, "one window over all of H and W")
      .Attr("strides", std::vector<int64_t>{1, 1}, "the windows' step")
      .Attr("paddings", std::vector<int64_t>{0, 0}, "[h, w] or [top, bottom, left, right]")
      .Attr("exclusive", true, "an average counts only the elements inside X, not the padding")
      .Attr("adaptive", false, "windows that split X evenly into ksize")
      .Attr("ceil_mode", false, "a last partial window counts")
      .Attr("data_format", "NCHW", "NCHW or NHWC")
      .Attr("padding_algorithm", "EXPLICIT", "EXPLICIT (paddings), SAME or VALID")
      .KernelDtypeFrom("X")
      .Grad("pool2d_grad", "X,Out@GRAD", "X");
  r.Op(pool2d);
  r.Op(pool2d.MakeGradSchema());
  RegisterCpu<float, double>(r, "pool2d", [](auto t) { return &Pool2d<decltype(t)>; });
  RegisterCpu<float, double>(r, "pool2d_grad", [](auto t) { return &Pool2dGrad<decltype(t)>; });
}

}  // namespace rill::math
