// roi_align, roi_align_grad: regions of a feature map pooled to a fixed size by bilinear
// sampling, with Paddle's contract (paddle/fluid/operators/roi_align_op.h).
//
// X is [N, C, H, W]; ROIs [R, 4] holds regions (x1, y1, x2, y2) in the image's pixels, each
// belonging to an image given by RoisNum (int32 [N], the regions of each image in order)
// or, without it, by ROIs' LoD. Region r, scaled by spatial_scale (and moved by -0.5 when
// aligned), is cut into pooled_height x pooled_width bins; bin (ph, pw) of channel c is the
// mean of a grid of gh x gw samples (sampling_ratio each way, or ceil(the region's size /
// the bins) when it is not positive), sample (iy, ix) at
//   y = y1 + ph * bin_h + (iy + 0.5) * bin_h / gh,  x = x1 + pw * bin_w + (ix + 0.5) * bin_w / gw
// read bilinearly from X; a sample beyond [-1, H] x [-1, W] reads 0, one within is clamped
// into the map. Unless aligned, a region is at least 1 x 1. Out is [R, C, pooled_height,
// pooled_width].
//
// The gradient spreads each bin's Out@GRAD over the same samples with the same weights:
// it is the exact adjoint of the forward (Paddle's kernel also widens aligned regions to
// 1 x 1 in the gradient alone; here forward and gradient agree).
#include <cmath>
#include <string>
#include <vector>

#include "boxes.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct RoiAlignAttrs {
  int64_t pooled_h, pooled_w, sampling_ratio;
  float spatial_scale;
  bool aligned;
};

RoiAlignAttrs AttrsOf(KernelContext& ctx) {
  RoiAlignAttrs a{ctx.Attr<int64_t>("pooled_height"), ctx.Attr<int64_t>("pooled_width"),
                  ctx.Attr<int64_t>("sampling_ratio"), ctx.Attr<float>("spatial_scale"), ctx.Attr<bool>("aligned")};
  if (a.pooled_h <= 0 || a.pooled_w <= 0) {
    throw Error("pooled_height and pooled_width must be positive, got " + std::to_string(a.pooled_h) + " and " +
                std::to_string(a.pooled_w));
  }
  if (!(a.spatial_scale > 0)) throw Error("spatial_scale must be positive, got " + std::to_string(a.spatial_scale));
  return a;
}

// One sample: the 4 neighbours' offsets in a channel plane and their weights (all 0 for a
// sample outside the map).
template <class T> struct Sample {
  int64_t pos[4];
  T w[4];
};

// A region's samples, bin by bin (gh * gw each, in the order of the formula above), and
// the count each bin's sum is divided by.
template <class T> struct RegionSamples {
  std::vector<Sample<T>> samples;
  int64_t per_bin;
  T count;
};

template <class T> RegionSamples<T> SamplesOf(const T* roi, const RoiAlignAttrs& a, int64_t height, int64_t width) {
  const T offset = a.aligned ? T(0.5) : T(0);
  const T scale = static_cast<T>(a.spatial_scale);
  const T x1 = roi[0] * scale - offset, y1 = roi[1] * scale - offset;
  T roi_w = roi[2] * scale - offset - x1, roi_h = roi[3] * scale - offset - y1;
  if (!a.aligned) {
    roi_w = std::max(roi_w, T(1));
    roi_h = std::max(roi_h, T(1));
  }
  const T bin_h = roi_h / static_cast<T>(a.pooled_h), bin_w = roi_w / static_cast<T>(a.pooled_w);
  const int64_t gh =
      a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(roi_h / static_cast<T>(a.pooled_h)));
  const int64_t gw =
      a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(roi_w / static_cast<T>(a.pooled_w)));
  RegionSamples<T> out{{}, gh * gw, static_cast<T>(std::max<int64_t>(gh * gw, 1))};
  out.samples.reserve(static_cast<size_t>(a.pooled_h * a.pooled_w * std::max<int64_t>(gh * gw, 0)));
  for (int64_t ph = 0; ph < a.pooled_h; ++ph) {
    for (int64_t pw = 0; pw < a.pooled_w; ++pw) {
      for (int64_t iy = 0; iy < gh; ++iy) {
        T y = y1 + static_cast<T>(ph) * bin_h + (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(gh);
        for (int64_t ix = 0; ix < gw; ++ix) {
          T x = x1 + static_cast<T>(pw) * bin_w + (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(gw);
          Sample<T> s{{0, 0, 0, 0}, {T(0), T(0), T(0), T(0)}};
          if (y >= T(-1) && y <= static_cast<T>(height) && x >= T(-1) && x <= static_cast<T>(width)) {
            T sy = y <= 0 ? T(0) : y, sx = x <= 0 ? T(0) : x;
            int64_t y_lo = static_cast<int64_t>(sy), x_lo = static_cast<int64_t>(sx), y_hi, x_hi;
            if (y_lo >= height - 1) {
              y_hi = y_lo = height - 1;
              sy = static_cast<T>(y_lo);
            } else {
              y_hi = y_lo + 1;
            }
            if (x_lo >= width - 1) {
              x_hi = x_lo = width - 1;
              sx = static_cast<T>(x_lo);
            } else {
              x_hi = x_lo + 1;
            }
            const T ly = sy - static_cast<T>(y_lo), lx = sx - static_cast<T>(x_lo), hy = 1 - ly, hx = 1 - lx;
            s = {{y_lo * width + x_lo, y_lo * width + x_hi, y_hi * width + x_lo, y_hi * width + x_hi},
                 {hy * hx, hy * lx, ly * hx, ly * lx}};
          }
          out.samples.push_back(s);
        }
      }
    }
  }
  return out;
}

template <class T> void RoiAlign(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor rois = ctx.Input("ROIs");
  const RoiAlignAttrs a = AttrsOf(ctx);
  const RoiShapes s = RoiShapesOf(x, rois);
  const std::vector<int64_t> image = ImageOfEachRoi(ctx, rois, s.batch);
  const T* in = x.data<T>();
  const T* roi = rois.data<T>();
  const int64_t plane = s.height * s.width, bins = a.pooled_h * a.pooled_w;
  T* out = ctx.AllocateOutput<T>("Out", {s.rois, s.channels, a.pooled_h, a.pooled_w});
  // One item per region; each bin reads 4 neighbours a sample, at least one sample a bin.
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(s.rois * s.channels * bins) * 4;
  ParallelFor(s.rois, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const RegionSamples<T> rs = SamplesOf(roi + r * 4, a, s.height, s.width);
      for (int64_t c = 0; c < s.channels; ++c) {
        const T* map = in + (image[static_cast<size_t>(r)] * s.channels + c) * plane;
        T* o = out + (r * s.channels + c) * bins;
        const Sample<T>* sample = rs.samples.data();
        for (int64_t bin = 0; bin < bins; ++bin) {
          T sum = 0;
          for (int64_t k = 0; k < rs.per_bin; ++k, ++sample) {
            for (int n = 0; n < 4; ++n) sum += sample->w[n] * map[sample->pos[n]];
          }
          o[bin] = sum / rs.count;
        }
      }
    }
  });
}

template <class T> void RoiAlignGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X");
  Tensor rois = ctx.Input("ROIs");
  Tensor g = ctx.Input("Out@GRAD");
  const RoiAlignAttrs a = AttrsOf(ctx);
  const RoiShapes s = RoiShapesOf(x, rois);
  const std::vector<int64_t> image = ImageOfEachRoi(ctx, rois, s.batch);
  const int64_t plane = s.height * s.width, bins = a.pooled_h * a.pooled_w;
  if (g.dims() != std::vector<int64_t>{s.rois, s.channels, a.pooled_h, a.pooled_w}) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out [" + std::to_string(s.rois) + ", " +
                std::to_string(s.channels) + ", " + std::to_string(a.pooled_h) + ", " + std::to_string(a.pooled_w) +
                "]");
  }
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  const T* roi = rois.data<T>();
  const T* dout = g.data<T>();
  // Regions of one image add into the same planes: one pass, in region order.
  for (int64_t r = 0; r < s.rois; ++r) {
    const RegionSamples<T> rs = SamplesOf(roi + r * 4, a, s.height, s.width);
    for (int64_t c = 0; c < s.channels; ++c) {
      T* map = dx + (image[static_cast<size_t>(r)] * s.channels + c) * plane;
      const T* d = dout + (r * s.channels + c) * bins;
      const Sample<T>* sample = rs.samples.data();
      for (int64_t bin = 0; bin < bins; ++bin) {
        const T share = d[bin] / rs.count;
        for (int64_t k = 0; k < rs.per_bin; ++k, ++sample) {
          for (int n = 0; n < 4; ++n) map[sample->pos[n]] += sample->w[n] * share;
        }
      }
    }
  }
}

}  // namespace

void RegisterRoiAlign(Registrar& r) {
  const OpSchema roi_align =
      OpSchema("roi_align")
          .Doc(
              "Each region of ROIs pooled from X to pooled_height x pooled_width bins by bilinear sampling, as Paddle "
              "defines it (see roi_align.cc).")
          .Input("X", "the feature map, [N, C, H, W]")
          .Input("ROIs",
                 "[R, 4] regions (x1, y1, x2, y2) in the image's pixels; a LoD gives each image's, without RoisNum")
          .Input("RoisNum", "int32 [N]: each image's regions, in order", RILL_SLOT_OPTIONAL)
          .Output("Out", "[R, C, pooled_height, pooled_width]")
          .Attr("pooled_height", int64_t{1}, "the bins down")
          .Attr("pooled_width", int64_t{1}, "the bins across")
          .Attr("spatial_scale", 1.0f, "the map's size over the image's")
          .Attr("sampling_ratio", int64_t{-1}, "samples each way per bin (not positive: the bin's size, rounded up)")
          .Attr("aligned", false, "move regions by -0.5 pixel (pixel centres), and let them be under 1 pixel")
          .KernelDtypeFrom("X")
          .Grad("roi_align_grad", "X,ROIs,RoisNum,Out@GRAD", "X");
  r.Op(roi_align);
  r.Op(roi_align.MakeGradSchema());
  RegisterCpu<float, double>(r, "roi_align", [](auto t) { return &RoiAlign<decltype(t)>; });
  RegisterCpu<float, double>(r, "roi_align_grad", [](auto t) { return &RoiAlignGrad<decltype(t)>; });
}

}  // namespace rill::math
