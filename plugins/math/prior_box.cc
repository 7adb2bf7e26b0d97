// prior_box, density_prior_box: the anchor boxes of an SSD head, with Paddle's contract
// (paddle/fluid/operators/detection/prior_box_op.h, density_prior_box_op.h).
//
// Both read only the shapes of Input [N, C, H, W] (the feature map) and Image [N, C', IH,
// IW]. Cell (h, w) of the feature map is centred at ((w + offset) * step_w, (h + offset) *
// step_h) in the image's pixels, the steps being IW / W and IH / H unless both step_w and
// step_h are given. Each cell gets P boxes (x1, y1, x2, y2) as fractions of the image:
// Boxes is [H, W, P, 4] and Variances the same shape, every row the 4 `variances`.
//
// prior_box: for each min size s, with the aspect ratios expanded to 1, each given ratio
// r (unless within 1e-6 of one before) and 1 / r when flip: a box s*sqrt(r) wide and
// s/sqrt(r) high per ratio, and, when max_sizes are given, one square box sqrt(s * max)
// wide after them (before the ratios other than 1 when min_max_aspect_ratios_order, as
// Caffe orders them). Boxes are clipped to [0, 1] when clip.
//
// density_prior_box: for each fixed size s (with its density d) and each fixed ratio r, a
// d x d grid of boxes s*sqrt(r) wide and s/sqrt(r) high, centred at shifts of
// step_average / d (integer division, step_average = int((step_w + step_h) / 2)) from the
// cell's corner; each box is clipped to [0, 1] (always; clip clips again). With
// flatten_to_2d Boxes and Variances are [H*W*P, 4].
#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// The feature map's and the image's (H, W), checked.
struct Grid {
  int64_t feature_h, feature_w, image_h, image_w;
  double step_h, step_w, offset;
};

Grid GridOf(KernelContext& ctx) {
  const std::vector<int64_t> in = ctx.Input("Input").dims(), image = ctx.Input("Image").dims();
  if (in.size() != 4) throw Error("Input must be a 4-D NCHW feature map, got " + DimsString(in));
  if (image.size() != 4) throw Error("Image must be a 4-D NCHW image, got " + DimsString(image));
  const float step_w = ctx.Attr<float>("step_w"), step_h = ctx.Attr<float>("step_h");
  if (step_w < 0 || step_h < 0) {
    throw Error("step_w and step_h must be at least 0 (0: the image's size over the map's), got " +
                std::to_string(step_w) + " and " + std::to_string(step_h));
  }
  Grid g{in[2], in[3], image[2], image[3], step_h, step_w, ctx.Attr<float>("offset")};
  if (step_w == 0 || step_h == 0) {
    g.step_w = static_cast<double>(g.image_w) / static_cast<double>(g.feature_w);
    g.step_h = static_cast<double>(g.image_h) / static_cast<double>(g.feature_h);
  }
  return g;
}

std::vector<float> Variances(KernelContext& ctx) {
  const std::vector<float> v = ctx.Attr<std::vector<float>>("variances");
  if (v.size() != 4) throw Error("variances must hold 4 values, got " + std::to_string(v.size()));
  for (float x : v) {
    if (!(x > 0)) throw Error("variances must be positive, got " + std::to_string(x));
  }
  return v;
}

// Boxes clipped to [0, 1] when clip; Variances shaped like Boxes, every row `v`.
template <class T> void FinishBoxes(KernelContext& ctx, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  if (ctx.Attr<bool>("clip")) {
    Tensor boxes = ctx.Output("Boxes");
    T* all = boxes.mutable_data<T>();
    for (int64_t i = 0; i < boxes.numel(); ++i) all[i] = std::min(std::max(all[i], T(0)), T(1));
  }
  T* out = ctx.AllocateOutput<T>("Variances", dims);
  const int64_t rows = ctx.Output("Variances").numel() / 4;
  for (int64_t i = 0; i < rows; ++i) {
    for (int k = 0; k < 4; ++k) out[i * 4 + k] = static_cast<T>(v[static_cast<size_t>(k)]);
  }
}

// 1, then each ratio not within 1e-6 of one already there, and its inverse when flip.
std::vector<float> ExpandAspectRatios(const std::vector<float>& given, bool flip) {
  std::vector<float> out{1.0f};
  for (float r : given) {
    bool seen = false;
    for (float o : out) seen = seen || std::fabs(r - o) < 1e-6f;
    if (seen) continue;
    if (!(r > 0)) throw Error("aspect_ratios must be positive, got " + std::to_string(r));
    out.push_back(r);
    if (flip) out.push_back(1.0f / r);
  }
  return out;
}

template <class T> void PriorBox(KernelContext& ctx) {
  const Grid g = GridOf(ctx);
  const std::vector<float> min_sizes = ctx.Attr<std::vector<float>>("min_sizes");
  const std::vector<float> max_sizes = ctx.Attr<std::vector<float>>("max_sizes");
  const std::vector<float> ratios =
      ExpandAspectRatios(ctx.Attr<std::vector<float>>("aspect_ratios"), ctx.Attr<bool>("flip"));
  const std::vector<float> variances = Variances(ctx);
  const bool min_max_order = ctx.Attr<bool>("min_max_aspect_ratios_order");
  if (min_sizes.empty()) throw Error("min_sizes must hold at least one size");
  for (float s : min_sizes) {
    if (!(s > 0)) throw Error("min_sizes must be positive, got " + std::to_string(s));
  }
  if (!max_sizes.empty()) {
    if (max_sizes.size() != min_sizes.size()) {
      throw Error("max_sizes must hold one size per min size (" + std::to_string(min_sizes.size()) + "), got " +
                  std::to_string(max_sizes.size()));
    }
    for (size_t i = 0; i < max_sizes.size(); ++i) {
      if (!(max_sizes[i] > min_sizes[i])) {
        throw Error("max_sizes[" + std::to_string(i) + "] = " + std::to_string(max_sizes[i]) +
                    " must be greater than min_sizes[" + std::to_string(i) + "] = " + std::to_string(min_sizes[i]));
      }
    }
  }
  const int64_t priors = static_cast<int64_t>(ratios.size() * min_sizes.size() + max_sizes.size());
  const std::vector<int64_t> dims{g.feature_h, g.feature_w, priors, 4};
  T* b = ctx.AllocateOutput<T>("Boxes", dims);
  const double iw = static_cast<double>(g.image_w), ih = static_cast<double>(g.image_h);
  for (int64_t h = 0; h < g.feature_h; ++h) {
    for (int64_t w = 0; w < g.feature_w; ++w) {
      const double cx = (static_cast<double>(w) + g.offset) * g.step_w;
      const double cy = (static_cast<double>(h) + g.offset) * g.step_h;
      auto box = [&](double half_w, double half_h) {
        b[0] = static_cast<T>((cx - half_w) / iw);
        b[1] = static_cast<T>((cy - half_h) / ih);
        b[2] = static_cast<T>((cx + half_w) / iw);
        b[3] = static_cast<T>((cy + half_h) / ih);
        b += 4;
      };
      for (size_t s = 0; s < min_sizes.size(); ++s) {
        const double min_size = min_sizes[s];
        auto max_box = [&] {
          if (max_sizes.empty()) return;
          const double half = std::sqrt(min_size * max_sizes[s]) / 2;
          box(half, half);
        };
        if (min_max_order) {
          box(min_size / 2, min_size / 2);
          max_box();
          for (double r : ratios) {
            if (std::fabs(r - 1.0) < 1e-6) continue;
            box(min_size * std::sqrt(r) / 2, min_size / std::sqrt(r) / 2);
          }
        } else {
          for (double r : ratios) box(min_size * std::sqrt(r) / 2, min_size / std::sqrt(r) / 2);
          max_box();
        }
      }
    }
  }
  FinishBoxes<T>(ctx, dims, variances);
}

template <class T> void DensityPriorBox(KernelContext& ctx) {
  const Grid g = GridOf(ctx);
  const std::vector<float> sizes = ctx.Attr<std::vector<float>>("fixed_sizes");
  const std::vector<float> ratios = ctx.Attr<std::vector<float>>("fixed_ratios");
  const std::vector<int64_t> densities = ctx.Attr<std::vector<int64_t>>("densities");
  const std::vector<float> variances = Variances(ctx);
  if (sizes.size() != densities.size()) {
    throw Error("fixed_sizes (" + std::to_string(sizes.size()) + ") and densities (" +
                std::to_string(densities.size()) + ") must have one value each per size");
  }
  for (float s : sizes) {
    if (!(s > 0)) throw Error("fixed_sizes must be positive, got " + std::to_string(s));
  }
  for (float r : ratios) {
    if (!(r > 0)) throw Error("fixed_ratios must be positive, got " + std::to_string(r));
  }
  int64_t priors = 0;
  for (int64_t d : densities) {
    if (d <= 0) throw Error("densities must be positive, got " + std::to_string(d));
    priors += static_cast<int64_t>(ratios.size()) * d * d;
  }
  const std::vector<int64_t> dims = ctx.Attr<bool>("flatten_to_2d")
                                        ? std::vector<int64_t>{g.feature_h * g.feature_w * priors, 4}
                                        : std::vector<int64_t>{g.feature_h, g.feature_w, priors, 4};
  T* b = ctx.AllocateOutput<T>("Boxes", dims);
  const double iw = static_cast<double>(g.image_w), ih = static_cast<double>(g.image_h);
  // The grid's step and shifts are whole pixels, as Paddle's kernel makes them.
  const int64_t step_average = static_cast<int64_t>((g.step_w + g.step_h) * 0.5);
  for (int64_t h = 0; h < g.feature_h; ++h) {
    for (int64_t w = 0; w < g.feature_w; ++w) {
      const double cx = (static_cast<double>(w) + g.offset) * g.step_w;
      const double cy = (static_cast<double>(h) + g.offset) * g.step_h;
      for (size_t s = 0; s < sizes.size(); ++s) {
        const int64_t density = densities[s], shift = step_average / density;
        const double corner = -static_cast<double>(step_average) / 2 + static_cast<double>(shift) / 2;
        for (float r : ratios) {
          const double half_w = sizes[s] * std::sqrt(static_cast<double>(r)) / 2;
          const double half_h = sizes[s] / std::sqrt(static_cast<double>(r)) / 2;
          for (int64_t di = 0; di < density; ++di) {
            for (int64_t dj = 0; dj < density; ++dj) {
              const double x = cx + corner + static_cast<double>(dj * shift);
              const double y = cy + corner + static_cast<double>(di * shift);
              b[0] = static_cast<T>(std::max((x - half_w) / iw, 0.));
              b[1] = static_cast<T>(std::max((y - half_h) / ih, 0.));
              b[2] = static_cast<T>(std::min((x + half_w) / iw, 1.));
              b[3] = static_cast<T>(std::min((y + half_h) / ih, 1.));
              b += 4;
            }
          }
        }
      }
    }
  }
  FinishBoxes<T>(ctx, dims, variances);
}

OpSchema PriorSchema(const char* type, const char* doc) {
  return OpSchema(type)
      .Doc(doc)
      .Input("Input", "the feature map, [N, C, H, W] (only its shape is read)")
      .Input("Image", "the image, [N, C, IH, IW] (only its shape is read)")
      .Output("Boxes", "[H, W, P, 4]: each cell's P boxes (x1, y1, x2, y2) as fractions of the image")
      .Output("Variances", "shaped like Boxes, each row the 4 variances")
      .Attr("variances", std::vector<float>{}, "4 positive values, each box's variances")
      .Attr("clip", true, "clip the boxes to [0, 1]")
      .Attr("step_w", 0.0f, "the cells' horizontal step in pixels (0, or step_h 0: IW / W)")
      .Attr("step_h", 0.0f, "the cells' vertical step in pixels (0, or step_w 0: IH / H)")
      .Attr("offset", 0.5f, "a cell's centre, in steps from its corner")
      .KernelDtypeFrom("Input");
}

}  // namespace

void RegisterPriorBox(Registrar& r) {
  r.Op(PriorSchema("prior_box",
                   "SSD's prior boxes, as Paddle defines them (see prior_box.cc): per cell, a box per min size "
                   "and aspect ratio, and a square of sqrt(min * max) per max size.")
           .Attr("min_sizes", std::vector<float>{}, "the boxes' sizes in pixels, positive")
           .Attr("max_sizes", std::vector<float>{}, "one per min size, greater: adds a square box sqrt(min * max)")
           .Attr("aspect_ratios", std::vector<float>{}, "width over height (1 is always there)")
           .Attr("flip", true, "add 1 / r for each ratio r")
           .Attr("min_max_aspect_ratios_order", false,
                 "order the boxes min, max, other ratios (Caffe's) instead of ratios, max"));
  r.Op(PriorSchema("density_prior_box",
                   "Dense prior boxes, as Paddle defines them (see prior_box.cc): per cell, fixed size and fixed "
                   "ratio, a density x density grid of boxes.")
           .Attr("fixed_sizes", std::vector<float>{}, "the boxes' sizes in pixels, positive")
           .Attr("fixed_ratios", std::vector<float>{}, "width over height, positive")
           .Attr("densities", std::vector<int64_t>{}, "one per fixed size: the grid's side")
           .Attr("flatten_to_2d", false, "Boxes and Variances [H*W*P, 4]"));
  RegisterCpu<float, double>(r, "prior_box", [](auto t) { return &PriorBox<decltype(t)>; });
  RegisterCpu<float, double>(r, "density_prior_box", [](auto t) { return &DensityPriorBox<decltype(t)>; });
}

}  // namespace rill::math
