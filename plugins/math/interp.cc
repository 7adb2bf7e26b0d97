// Resizing images, with Fluid's contracts: nearest_interp and bilinear_interp (Fluid 1.x)
// and their _v2 (Paddle 2), NCHW or NHWC, and their gradients. The output size comes from
// SizeTensor, else OutSize, else the scale (the Scale input, else the attribute) times the
// input's, else out_h and out_w. Output position k reads input position k * ratio, where
// ratio is (in - 1) / (out - 1) with align_corners, else in / out (v2: 1 / scale when a
// scale is given). Nearest takes that position rounded down (to nearest with
// align_corners); bilinear weighs the two neighbours along each axis, at k * ratio, or,
// with align_mode 0 and without align_corners, at the half-pixel (k + 0.5) * ratio - 0.5,
// clamped at 0.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Where output position k of one axis reads: lo and hi, weighted (1 - frac) and frac
// (nearest: lo alone).
struct Tap {
  int64_t lo = 0, hi = 0;
  double frac = 0;
};

struct InterpPlan {
  bool nhwc = false, nearest = false;
  int64_t n = 0, c = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::vector<Tap> rows, cols;
  std::vector<int64_t> OutDims() const {
    return nhwc ? std::vector<int64_t>{n, out_h, out_w, c} : std::vector<int64_t>{n, c, out_h, out_w};
  }
  int64_t At(int64_t i, int64_t ch, int64_t y, int64_t x, int64_t h, int64_t w) const {
    return nhwc ? ((i * h + y) * w + x) * c + ch : ((i * c + ch) * h + y) * w + x;
  }
};

// One axis' taps, positions computed in T (as torch does; Paddle computes them in float
// for fp64 too). `scale` > 0 when a scale was given (v2 reads its ratio from it).
template <class T>
std::vector<Tap> Taps(int64_t in, int64_t out, double scale, bool v2, bool nearest, bool align_corners,
                      int64_t align_mode) {
  const T ratio = out <= 1          ? T(0)
                  : align_corners   ? static_cast<T>(in - 1) / static_cast<T>(out - 1)
                  : v2 && scale > 0 ? static_cast<T>(1. / scale)
                                    : static_cast<T>(in) / static_cast<T>(out);
  std::vector<Tap> taps(static_cast<size_t>(out));
  const bool half_pixel = align_mode == 0 && !align_corners;
  for (int64_t k = 0; k < out; ++k) {
    Tap& t = taps[static_cast<size_t>(k)];
    const T at = static_cast<T>(k);
    if (nearest) {
      t.lo = std::min(static_cast<int64_t>(align_corners ? ratio * at + T(0.5) : ratio * at), in - 1);
      continue;
    }
    const T src = half_pixel ? std::max(ratio * (at + T(0.5)) - T(0.5), T(0)) : ratio * at;
    t.lo = std::min(static_cast<int64_t>(src), in - 1);
    t.hi = std::min(t.lo + 1, in - 1);
    t.frac = static_cast<double>(src - static_cast<T>(t.lo));
  }
  return taps;
}

// kNearest: nearest_interp (else bilinear); kV2: Paddle 2's op.
template <class T, bool kNearest, bool kV2> InterpPlan PlanOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  InterpPlan p;
  p.nearest = kNearest;
  const std::string method = ctx.Attr<std::string>("interp_method");
  if (method != (p.nearest ? "nearest" : "bilinear")) {
    throw Error("interp_method '" + method + "' does not match the op (" + (p.nearest ? "nearest" : "bilinear") + ")");
  }
  if (d.size() != 4) throw Error("X " + DimsString(d) + " must be a 4-D image");
  p.nhwc = IsNhwc(ctx.Attr<std::string>("data_layout"), "data_layout");
  p.n = d[0];
  p.c = p.nhwc ? d[3] : d[1];
  p.in_h = p.nhwc ? d[1] : d[2];
  p.in_w = p.nhwc ? d[2] : d[3];
  double scale_h = -1, scale_w = -1;
  std::vector<int64_t> size;
  if (ctx.HasInput("SizeTensor")) {
    for (size_t i = 0; i < ctx.op().InputCount("SizeTensor"); ++i) {
      const std::vector<int64_t> one = IntsOf(ctx.Input("SizeTensor", i), "SizeTensor");
      size.insert(size.end(), one.begin(), one.end());
    }
  } else {
    std::vector<double> scale;
    if (ctx.HasInput("Scale")) {
      Tensor s = ctx.Input("Scale");
      VisitDataType<float, double>(s.dtype(), "Scale", [&](auto t) {
        const auto* ps = s.data<decltype(t)>();
        scale.assign(ps, ps + s.numel());
      });
    } else if (kV2) {
      const std::vector<float> attr = ctx.Attr<std::vector<float>>("scale");
      scale.assign(attr.begin(), attr.end());
    } else {
      scale.push_back(ctx.Attr<float>("scale"));
    }
    if (scale.size() == 1) scale.push_back(scale[0]);
    if (scale.size() == 2 && scale[0] > 0 && scale[1] > 0) {
      scale_h = scale[0];
      scale_w = scale[1];
      const double h = static_cast<double>(p.in_h) * scale_h, w = static_cast<double>(p.in_w) * scale_w;
      if (!(h < 1e15 && w < 1e15)) {
        throw Error("scale [" + std::to_string(scale_h) + ", " + std::to_string(scale_w) + "] makes an image of " +
                        std::to_string(h) + " x " + std::to_string(w) + " pixels",
                    RILL_RESOURCE_EXHAUSTED);
      }
      size = {static_cast<int64_t>(h), static_cast<int64_t>(w)};
    } else if (scale.size() > 2) {
      throw Error("scale holds " + std::to_string(scale.size()) + " values; a 2-D resize takes 1 or 2");
    }
    if (ctx.HasInput("OutSize")) size = IntsOf(ctx.Input("OutSize"), "OutSize");
  }
  if (size.empty()) size = {ctx.Attr<int64_t>("out_h"), ctx.Attr<int64_t>("out_w")};
  if (size.size() != 2 || size[0] < 1 || size[1] < 1) {
    throw Error("the output size " + DimsString(size) +
                " must be two positive values (from SizeTensor, OutSize, "
                "scale, or out_h and out_w)");
  }
  p.out_h = size[0];
  p.out_w = size[1];
  if ((p.in_h == 0 || p.in_w == 0) && p.n * p.c > 0) throw Error("X " + DimsString(d) + " has no pixels to resize");
  const bool align_corners = ctx.Attr<bool>("align_corners");
  const int64_t align_mode = ctx.Attr<int64_t>("align_mode");
  p.rows = Taps<T>(p.in_h, p.out_h, scale_h, kV2, p.nearest, align_corners, align_mode);
  p.cols = Taps<T>(p.in_w, p.out_w, scale_w, kV2, p.nearest, align_corners, align_mode);
  return p;
}

// The taps' weights of each output pixel (y, x), in A: (1 - fy)(1 - fx), (1 - fy) fx,
// fy (1 - fx) and fy fx, worked out in double and rounded once (nearest: 1).
template <class A> std::vector<std::array<A, 4>> WeightsOf(const InterpPlan& p) {
  std::vector<std::array<A, 4>> w(static_cast<size_t>(p.out_h * p.out_w));
  for (int64_t y = 0; y < p.out_h; ++y) {
    const Tap& r = p.rows[static_cast<size_t>(y)];
    for (int64_t x = 0; x < p.out_w; ++x) {
      const Tap& q = p.cols[static_cast<size_t>(x)];
      w[static_cast<size_t>(y * p.out_w + x)] = {
          static_cast<A>((1 - r.frac) * (1 - q.frac)), static_cast<A>((1 - r.frac) * q.frac),
          static_cast<A>(r.frac * (1 - q.frac)), static_cast<A>(r.frac * q.frac)};
    }
  }
  return w;
}

// The units the passes split across the passes' team: a channel's plane (NCHW) or a whole
// image (NHWC), whose output and input pixels no other unit touches.
int64_t Units(const InterpPlan& p) { return p.nhwc ? p.n : p.n * p.c; }

// Calls fn(out_index, in_index, tap, pixel) for each tap (0 to 3; nearest: 0 alone) of
// each output element of unit u, channel by channel, each channel's pixels in row-major
// order; pixel (y * out_w + x) indexes WeightsOf's table.
template <class F> void ForEachTap(const InterpPlan& p, int64_t u, F fn) {
  const int64_t i = p.nhwc ? u : u / p.c;
  const int64_t ch_begin = p.nhwc ? 0 : u % p.c, ch_end = p.nhwc ? p.c : ch_begin + 1;
  for (int64_t ch = ch_begin; ch < ch_end; ++ch) {
    for (int64_t y = 0; y < p.out_h; ++y) {
      const Tap& r = p.rows[static_cast<size_t>(y)];
      for (int64_t x = 0; x < p.out_w; ++x) {
        const Tap& q = p.cols[static_cast<size_t>(x)];
        const int64_t o = p.At(i, ch, y, x, p.out_h, p.out_w);
        const auto in = [&](int64_t yy, int64_t xx) { return p.At(i, ch, yy, xx, p.in_h, p.in_w); };
        if (p.nearest) {
          fn(o, in(r.lo, q.lo), 0, y * p.out_w + x);
          continue;
        }
        fn(o, in(r.lo, q.lo), 0, y * p.out_w + x);
        fn(o, in(r.lo, q.hi), 1, y * p.out_w + x);
        fn(o, in(r.hi, q.lo), 2, y * p.out_w + x);
        fn(o, in(r.hi, q.hi), 3, y * p.out_w + x);
      }
    }
  }
}

template <class T, bool kNearest, bool kV2> void Interp(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  // Source coordinates in T, or in float for uint8 images, as Paddle computes them; uint8's
  // taps are summed in float, then truncated into T.
  using Coord = std::conditional_t<std::is_integral_v<T>, float, T>;
  const InterpPlan p = PlanOf<Coord, kNearest, kV2>(ctx, x.dims());
  // Nearest on planes copies pixels: no weights to look up.
  const std::vector<std::array<Coord, 4>> w =
      !p.nhwc && p.nearest ? std::vector<std::array<Coord, 4>>{} : WeightsOf<Coord>(p);
  const T* px = x.data<T>();
  const std::vector<int64_t> out_dims = p.OutDims();
  const int64_t n = Product(out_dims, 0, 4);
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(n + x.numel());
  WriteOutput<T>(ctx, "Out", {"X"}, out_dims, [&](T* out) {
    ParallelFor(Units(p), bytes, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        if (!p.nhwc && p.nearest) {  // a plane: each output row its input row's picked pixels
          const T* plane = px + u * p.in_h * p.in_w;
          T* o = out + u * p.out_h * p.out_w;
          for (int64_t y = 0; y < p.out_h; ++y) {
            T* row = o + y * p.out_w;
            const int64_t from = p.rows[static_cast<size_t>(y)].lo;
            if (y > 0 && from == p.rows[static_cast<size_t>(y - 1)].lo) {  // an upscaled row repeats
              std::copy(row - p.out_w, row, row);
              continue;
            }
            const T* in = plane + from * p.in_w;
            for (int64_t x = 0; x < p.out_w; ++x) row[x] = in[p.cols[static_cast<size_t>(x)].lo];
          }
          continue;
        }
        if (!p.nhwc) {  // bilinear on a plane: row pointers per output row, the same sums in the same order
          const T* plane = px + u * p.in_h * p.in_w;
          T* o = out + u * p.out_h * p.out_w;
          for (int64_t y = 0; y < p.out_h; ++y) {
            const Tap& r = p.rows[static_cast<size_t>(y)];
            const T* lo = plane + r.lo * p.in_w;
            const T* hi = plane + r.hi * p.in_w;
            const std::array<Coord, 4>* wy = w.data() + y * p.out_w;
            for (int64_t x = 0; x < p.out_w; ++x) {
              const Tap& q = p.cols[static_cast<size_t>(x)];
              const std::array<Coord, 4>& wx = wy[x];
              Coord sum = Coord(0) + wx[0] * static_cast<Coord>(lo[q.lo]);
              sum += wx[1] * static_cast<Coord>(lo[q.hi]);
              sum += wx[2] * static_cast<Coord>(hi[q.lo]);
              sum += wx[3] * static_cast<Coord>(hi[q.hi]);
              o[y * p.out_w + x] = static_cast<T>(sum);
            }
          }
          continue;
        }
        Coord sum = 0;
        ForEachTap(p, u, [&](int64_t o, int64_t i, int tap, int64_t pixel) {
          if (tap == 0) sum = 0;
          sum += w[static_cast<size_t>(pixel)][static_cast<size_t>(tap)] * static_cast<Coord>(px[i]);
          if (p.nearest || tap == 3) out[o] = static_cast<T>(sum);
        });
      }
    });
  });
}

template <class T, bool kNearest, bool kV2> void InterpGrad(KernelContext& ctx) {
  const std::vector<int64_t> d = ctx.Input("X").dims();
  Tensor g = ctx.Input("Out@GRAD");
  const InterpPlan p = PlanOf<T, kNearest, kV2>(ctx, d);
  if (g.dims() != p.OutDims()) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(p.OutDims()));
  }
  const std::vector<std::array<T, 4>> w = WeightsOf<T>(p);
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", d);
  ParallelFill(dx, Product(d, 0, 4), T(0));
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(g.numel() + Product(d, 0, 4));
  ParallelFor(Units(p), bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      if (!p.nhwc) {  // a plane: row pointers per output row, the same sums in the same order
        const T* gu = pg + u * p.out_h * p.out_w;
        T* plane = dx + u * p.in_h * p.in_w;
        for (int64_t y = 0; y < p.out_h; ++y) {
          const Tap& r = p.rows[static_cast<size_t>(y)];
          T* lo = plane + r.lo * p.in_w;
          T* hi = plane + r.hi * p.in_w;
          const std::array<T, 4>* wy = w.data() + y * p.out_w;
          const T* gy = gu + y * p.out_w;
          for (int64_t x = 0; x < p.out_w; ++x) {
            const Tap& q = p.cols[static_cast<size_t>(x)];
            const std::array<T, 4>& wx = wy[x];
            lo[q.lo] += wx[0] * gy[x];
            if (!p.nearest) {
              lo[q.hi] += wx[1] * gy[x];
              hi[q.lo] += wx[2] * gy[x];
              hi[q.hi] += wx[3] * gy[x];
            }
          }
        }
        continue;
      }
      ForEachTap(p, u, [&](int64_t o, int64_t i, int tap, int64_t pixel) {
        dx[i] += w[static_cast<size_t>(pixel)][static_cast<size_t>(tap)] * pg[o];
      });
    }
  });
}

OpSchema InterpSchema(const char* type, bool v2, const char* method) {
  OpSchema s =
      OpSchema(type)
          .Doc(std::string("Out = X resized by ") + method + " interpolation (see the size and alignment attributes).")
          .Input("X", "[N, C, H, W] or [N, H, W, C]")
          .Input("OutSize", "[out_h, out_w], int32; replaces scale and out_h, out_w", RILL_SLOT_OPTIONAL)
          .Input("SizeTensor", "out_h and out_w, one [1] int32 each; replaces everything else",
                 RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("Scale", "the scale, 1 or 2 values; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the resized image")
          .Attr("data_layout", "NCHW", "NCHW or NHWC")
          .Attr("out_d", int64_t{-1}, "unused by 2-D resizes")
          .Attr("out_h", int64_t{-1}, "the output height, when nothing else sets it")
          .Attr("out_w", int64_t{-1}, "the output width, when nothing else sets it")
          .Attr("interp_method", method, "the op's method")
          .Attr("align_corners", true, "map the corner pixels onto each other")
          .Attr("align_mode", int64_t{1}, "without align_corners: 0 half-pixel centres, 1 k * ratio")
          .KernelDtypeFrom("X")
          .Grad(std::string(type) + "_grad", "X,OutSize,SizeTensor,Scale,Out@GRAD", "X");
  if (v2) s.Attr("scale", std::vector<float>{}, "[scale_h, scale_w] (or one for both); used when positive");
  else s.Attr("scale", 0.0, "the scale of both dims; used when positive");
  return s;
}

// Registers one of the four ops and its gradient.
template <bool kNearest, bool kV2> void RegisterOneInterp(Registrar& r) {
  const char* method = kNearest ? "nearest" : "bilinear";
  const std::string type = std::string(method) + (kV2 ? "_interp_v2" : "_interp");
  const OpSchema schema = InterpSchema(type.c_str(), kV2, method);
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<float, double, uint8_t>(r, type.c_str(), [](auto t) { return &Interp<decltype(t), kNearest, kV2>; });
  if constexpr (kNearest && kV2) {  // Paddle 2.x's nearest_interp_v2 also copies integers
    RegisterCpu<int32_t, int64_t>(r, type.c_str(), [](auto t) { return &Interp<decltype(t), kNearest, kV2>; });
  }
  RegisterCpu<float, double>(r, (type + "_grad").c_str(),
                             [](auto t) { return &InterpGrad<decltype(t), kNearest, kV2>; });
}

}  // namespace

void RegisterInterp(Registrar& r) {
  RegisterOneInterp<true, false>(r);
  RegisterOneInterp<false, false>(r);
  RegisterOneInterp<true, true>(r);
  RegisterOneInterp<false, true>(r);
}

}  // namespace rill::math
