// roi_pool, roi_pool_grad: regions of a feature map max-pooled to a fixed size, with
// Paddle's contract (paddle/fluid/operators/roi_pool_op.h).
//
// X is [N, C, H, W]; ROIs [R, 4] holds regions (x1, y1, x2, y2) in the image's pixels, each
// belonging to an image given by RoisNum (int32 [N]) or, without it, by ROIs' LoD (as
// roi_align's). Region r's corners, scaled by spatial_scale and rounded (half away from
// zero), span (x2 - x1 + 1) x (y2 - y1 + 1) cells (at least 1 x 1), cut into pooled_height
// x pooled_width bins: bin (ph, pw) covers rows [floor(ph * bin_h), ceil((ph + 1) * bin_h))
// from y1, and the same across, clipped to the map. Out is each bin's maximum (0 for a bin
// left empty by the clipping) and Argmax (int64) the h * W + w of the first cell holding it
// (-1 when empty). The gradient adds each bin's Out@GRAD to its Argmax cell.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "boxes.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct RoiPoolAttrs {
  int64_t pooled_h, pooled_w;
  float spatial_scale;
};

RoiPoolAttrs AttrsOf(KernelContext& ctx) {
  const RoiPoolAttrs a{ctx.Attr<int64_t>("pooled_height"), ctx.Attr<int64_t>("pooled_width"),
                       ctx.Attr<float>("spatial_scale")};
  if (a.pooled_h <= 0 || a.pooled_w <= 0) {
    throw Error("pooled_height and pooled_width must be positive, got " + std::to_string(a.pooled_h) + " and " +
                std::to_string(a.pooled_w));
  }
  if (!(a.spatial_scale > 0)) throw Error("spatial_scale must be positive, got " + std::to_string(a.spatial_scale));
  return a;
}

// The cells of one bin: [h0, h1) x [w0, w1) of the map, empty when h1 <= h0 or w1 <= w0.
struct Bin {
  int64_t h0, h1, w0, w1;
};

template <class T>
Bin BinOf(const T* roi, const RoiPoolAttrs& a, int64_t ph, int64_t pw, int64_t height, int64_t width) {
  const auto scaled = [&](T v) { return static_cast<int64_t>(std::round(v * static_cast<T>(a.spatial_scale))); };
  const int64_t x1 = scaled(roi[0]), y1 = scaled(roi[1]), x2 = scaled(roi[2]), y2 = scaled(roi[3]);
  const float bin_h = static_cast<float>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<float>(a.pooled_h);
  const float bin_w = static_cast<float>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<float>(a.pooled_w);
  const auto clip = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
  return Bin{clip(static_cast<int64_t>(std::floor(static_cast<float>(ph) * bin_h)) + y1, height),
             clip(static_cast<int64_t>(std::ceil(static_cast<float>(ph + 1) * bin_h)) + y1, height),
             clip(static_cast<int64_t>(std::floor(static_cast<float>(pw) * bin_w)) + x1, width),
             clip(static_cast<int64_t>(std::ceil(static_cast<float>(pw + 1) * bin_w)) + x1, width)};
}

// What the op and its gradient both read: the attributes, the shapes checked, each
// region's image and Out's dims.
struct RoiPoolSetup {
  RoiPoolAttrs a;
  RoiShapes s;
  std::vector<int64_t> image, out_dims;
};

RoiPoolSetup SetupOf(KernelContext& ctx, const Tensor& x, const Tensor& rois) {
  RoiPoolSetup u{AttrsOf(ctx), RoiShapesOf(x, rois), {}, {}};
  u.image = ImageOfEachRoi(ctx, rois, u.s.batch);
  u.out_dims = {u.s.rois, u.s.channels, u.a.pooled_h, u.a.pooled_w};
  return u;
}

template <class T> void RoiPool(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor rois = ctx.Input("ROIs");
  const RoiPoolSetup u = SetupOf(ctx, x, rois);
  const T* in = x.data<T>();
  const T* roi = rois.data<T>();
  const int64_t plane = u.s.height * u.s.width, bins = u.a.pooled_h * u.a.pooled_w;
  T* out = ctx.AllocateOutput<T>("Out", u.out_dims);
  int64_t* argmax = ctx.AllocateOutput<int64_t>("Argmax", u.out_dims);
  ParallelFor(u.s.rois, static_cast<double>(u.s.rois * u.s.channels * plane) * sizeof(T),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  for (int64_t ph = 0; ph < u.a.pooled_h; ++ph) {
                    for (int64_t pw = 0; pw < u.a.pooled_w; ++pw) {
                      const Bin b = BinOf(roi + r * 4, u.a, ph, pw, u.s.height, u.s.width);
                      const bool empty = b.h1 <= b.h0 || b.w1 <= b.w0;
                      for (int64_t c = 0; c < u.s.channels; ++c) {
                        const T* map = in + (u.image[static_cast<size_t>(r)] * u.s.channels + c) * plane;
                        T best = empty ? T(0) : -std::numeric_limits<T>::max();
                        int64_t at = -1;
                        for (int64_t h = b.h0; h < b.h1; ++h) {
                          for (int64_t w = b.w0; w < b.w1; ++w) {
                            if (map[h * u.s.width + w] > best) {
                              best = map[h * u.s.width + w];
                              at = h * u.s.width + w;
                            }
                          }
                        }
                        const int64_t o = (r * u.s.channels + c) * bins + ph * u.a.pooled_w + pw;
                        out[o] = best;
                        argmax[o] = at;
                      }
                    }
                  }
                }
              });
}

template <class T> void RoiPoolGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X");
  Tensor rois = ctx.Input("ROIs");
  const RoiPoolSetup u = SetupOf(ctx, x, rois);
  Tensor g = ctx.Input("Out@GRAD"), argmax = ctx.Input("Argmax");
  if (g.dims() != u.out_dims || argmax.dims() != u.out_dims || argmax.dtype() != RILL_INT64) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " and int64 Argmax " + DimsString(argmax.dims()) +
                " must be shaped like Out " + DimsString(u.out_dims));
  }
  const int64_t plane = u.s.height * u.s.width, bins = u.a.pooled_h * u.a.pooled_w;
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  const T* dout = g.data<T>();
  const int64_t* from = argmax.data<int64_t>();
  // Regions of one image add into the same planes: one pass, in region order.
  for (int64_t r = 0; r < u.s.rois; ++r) {
    for (int64_t c = 0; c < u.s.channels; ++c) {
      T* map = dx + (u.image[static_cast<size_t>(r)] * u.s.channels + c) * plane;
      for (int64_t o = (r * u.s.channels + c) * bins, e = o + bins; o < e; ++o) {
        if (from[o] < 0) continue;
        if (from[o] >= plane) throw Error("Argmax holds " + std::to_string(from[o]) + ", outside the map");
        map[from[o]] += dout[o];
      }
    }
  }
}

}  // namespace

void RegisterRoiPool(Registrar& r) {
  const OpSchema roi_pool =
      OpSchema("roi_pool")
          .Doc(
              "Each region of ROIs max-pooled from X to pooled_height x pooled_width bins, as Paddle defines it (see "
              "roi_pool.cc).")
          .Input("X", "the feature map, [N, C, H, W]")
          .Input("ROIs",
                 "[R, 4] regions (x1, y1, x2, y2) in the image's pixels; a LoD gives each image's, without RoisNum")
          .Input("RoisNum", "int32 [N]: each image's regions, in order", RILL_SLOT_OPTIONAL)
          .Output("Out", "[R, C, pooled_height, pooled_width]")
          .Output("Argmax", "int64, shaped like Out: the cell (h * W + w) each maximum came from, -1 for an empty bin")
          .Attr("pooled_height", int64_t{1}, "the bins down")
          .Attr("pooled_width", int64_t{1}, "the bins across")
          .Attr("spatial_scale", 1.0f, "the map's size over the image's")
          .KernelDtypeFrom("X")
          .Grad("roi_pool_grad", "X,ROIs,RoisNum,Argmax,Out@GRAD", "X");
  r.Op(roi_pool);
  r.Op(roi_pool.MakeGradSchema());
  RegisterCpu<float, double>(r, "roi_pool", [](auto t) { return &RoiPool<decltype(t)>; });
  RegisterCpu<float, double>(r, "roi_pool_grad", [](auto t) { return &RoiPoolGrad<decltype(t)>; });
}

}  // namespace rill::math
