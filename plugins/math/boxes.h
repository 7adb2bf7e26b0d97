// plugins/math/boxes.h — what Paddle's detection ops share: box geometry (nms_util.h), and
// how rows of boxes are split into images.
//
// A box is 4 values (x1, y1, x2, y2), x2 >= x1 and y2 >= y1 for a proper one. With
// `normalized` the coordinates are fractions of the image and a box's width is x2 - x1;
// otherwise they are pixel indices and the width counts the last pixel, x2 - x1 + 1.
#ifndef RILL_PLUGINS_MATH_BOXES_H_
#define RILL_PLUGINS_MATH_BOXES_H_

#include <algorithm>
#include <string>
#include <vector>

#include "kernels.h"
#include "shape.h"

namespace rill::math {

// A box's area; 0 for a box with x2 < x1 or y2 < y1.
template <class T> T BoxArea(const T* b, bool normalized) {
  if (b[2] < b[0] || b[3] < b[1]) return T(0);
  const T w = b[2] - b[0], h = b[3] - b[1];
  return normalized ? w * h : (w + 1) * (h + 1);
}

// Intersection over union of two boxes (Paddle's JaccardOverlap): 0 when they do not meet.
template <class T> T JaccardOverlap(const T* a, const T* b, bool normalized) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return T(0);
  const T norm = normalized ? T(0) : T(1);
  const T iw = std::min(a[2], b[2]) - std::max(a[0], b[0]) + norm;
  const T ih = std::min(a[3], b[3]) - std::max(a[1], b[1]) + norm;
  const T inter = iw * ih;
  return inter / (BoxArea(a, normalized) + BoxArea(b, normalized) - inter);
}

// Where each image's rows of `rows` start, and where the last ends: from the op's RoisNum
// input (int32 [N], each image's count) when it has one, else from `rows`' LoD.
// `rows_name` names `rows` in the error when it has neither.
inline std::vector<int64_t> ImageStarts(KernelContext& ctx, const Tensor& rows, const std::string& rows_name) {
  std::vector<int64_t> starts{0};
  if (ctx.HasInput("RoisNum")) {
    for (int64_t count : IntsOf(ctx.Input("RoisNum"), "RoisNum")) {
      if (count < 0) throw Error("RoisNum holds a negative count, " + std::to_string(count));
      starts.push_back(starts.back() + count);
    }
    return starts;
  }
  const auto lod = rows.lod();
  if (lod.empty()) throw Error(rows_name + " needs RoisNum or a LoD that gives each image's rows");
  for (size_t k = 1; k < lod.back().size(); ++k) starts.push_back(static_cast<int64_t>(lod.back()[k]));
  return starts;
}

// The image of each region of `rois` (roi_align's and roi_pool's ROIs), from RoisNum or
// its LoD, checked against X's batch.
inline std::vector<int64_t> ImageOfEachRoi(KernelContext& ctx, const Tensor& rois, int64_t batch) {
  const int64_t count = rois.dims()[0];
  const std::vector<int64_t> starts = ImageStarts(ctx, rois, "ROIs");
  const int64_t images = static_cast<int64_t>(starts.size()) - 1;
  if (images != batch) {
    throw Error("the regions are given for " + std::to_string(images) + " images, X holds " + std::to_string(batch));
  }
  if (starts.back() != count) {
    throw Error("the images' region counts add up to " + std::to_string(starts.back()) + ", ROIs holds " +
                std::to_string(count));
  }
  std::vector<int64_t> image(static_cast<size_t>(count));
  for (int64_t i = 0; i < images; ++i) {
    for (int64_t r = starts[i]; r < starts[i + 1]; ++r) image[static_cast<size_t>(r)] = i;
  }
  return image;
}

// X [N, C, H, W] and ROIs [R, 4] of the region-pooling ops (roi_align, roi_pool), checked.
struct RoiShapes {
  int64_t batch, channels, height, width, rois;
};

inline RoiShapes RoiShapesOf(const Tensor& x, const Tensor& rois) {
  const std::vector<int64_t> xd = x.dims(), rd = rois.dims();
  if (xd.size() != 4) throw Error("X must be [N, C, H, W], got " + DimsString(xd));
  if (rd.size() != 2 || rd[1] != 4) throw Error("ROIs must be [R, 4] regions (x1, y1, x2, y2), got " + DimsString(rd));
  return {xd[0], xd[1], xd[2], xd[3], rd[0]};
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_BOXES_H_
