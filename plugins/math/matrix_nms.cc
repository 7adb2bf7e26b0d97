// matrix_nms: Matrix NMS (SOLOv2, arXiv:2003.10152) of batched detections, with Paddle's
// contract (paddle/fluid/operators/detection/matrix_nms_op.cc).
//
// BBoxes [N, M, 4] and Scores [N, C, M]: M boxes an image, scored for each of C classes.
// For each image and each class but background_label, the boxes scoring above
// score_threshold, best first (ties in box order), at most nms_top_k (-1: all), decay
// instead of being suppressed: box i's score is multiplied by
//   min over better boxes j of  f(iou(i, j), max_iou(j)),
// where max_iou(j) is j's largest IoU with a box better than j, and f is
//   (1 - iou) / (1 - max_iou)                 (linear), or
//   exp((max_iou^2 - iou^2) * gaussian_sigma) (use_gaussian).
// The best box keeps its score. Boxes whose decayed score is at most post_threshold are
// dropped; of the rest, an image keeps its best keep_top_k across classes (-1: all), best
// first (ties in class, then box order). IoU is Paddle's JaccardOverlap (boxes.h).
//
// Out holds each image's detections in turn as rows (label, decayed score, x1, y1, x2, y2),
// with each image's count as LoD and in RoisNum; Index [rows, 1] is each row's box in the
// input, image * M + box.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "boxes.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

struct MatrixNmsAttrs {
  int64_t background, nms_top_k, keep_top_k;
  bool normalized, gaussian;
  float score_threshold, post_threshold, sigma;
};

// A detection: its class, its box in the image, its decayed score.
template <class T> struct Detection {
  int64_t label, box;
  T score;
};

// One class's decayed detections of one image, appended to `out`. `score` is the class's
// M scores, `boxes` the image's M boxes.
template <class T>
void MatrixNmsClass(int64_t label, const T* score, const T* boxes, int64_t m, const MatrixNmsAttrs& a,
                    std::vector<Detection<T>>* out) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < m; ++i) {
    if (score[i] > static_cast<T>(a.score_threshold)) order.push_back(i);
  }
  if (order.empty()) return;
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return score[x] > score[y]; });
  if (a.nms_top_k > -1 && static_cast<int64_t>(order.size()) > a.nms_top_k)
    order.resize(static_cast<size_t>(a.nms_top_k));
  const size_t n = order.size();
  // iou[i * (i - 1) / 2 + j]: the IoU of the i-th and j-th best, j < i.
  std::vector<T> iou(n * (n - 1) / 2), max_iou(n, T(0));
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      const T v = JaccardOverlap(boxes + order[i] * 4, boxes + order[j] * 4, a.normalized);
      iou[i * (i - 1) / 2 + j] = v;
      max_iou[i] = std::max(max_iou[i], v);
    }
  }
  const T post = static_cast<T>(a.post_threshold), sigma = static_cast<T>(a.sigma);
  if (score[order[0]] > post) out->push_back({label, order[0], score[order[0]]});
  for (size_t i = 1; i < n; ++i) {
    T decay = 1;
    for (size_t j = 0; j < i; ++j) {
      const T v = iou[i * (i - 1) / 2 + j], mx = max_iou[j];
      decay = std::min(decay, a.gaussian ? std::exp((mx * mx - v * v) * sigma) : (1 - v) / (1 - mx));
    }
    const T decayed = decay * score[order[i]];
    if (decayed > post) out->push_back({label, order[i], decayed});
  }
}

template <class T> void MatrixNms(KernelContext& ctx) {
  Tensor bboxes = ctx.Input("BBoxes");
  Tensor scores = ctx.Input("Scores");
  const MatrixNmsAttrs a{ctx.Attr<int64_t>("background_label"), ctx.Attr<int64_t>("nms_top_k"),
                         ctx.Attr<int64_t>("keep_top_k"),       ctx.Attr<bool>("normalized"),
                         ctx.Attr<bool>("use_gaussian"),        ctx.Attr<float>("score_threshold"),
                         ctx.Attr<float>("post_threshold"),     ctx.Attr<float>("gaussian_sigma")};
  const std::vector<int64_t> bd = bboxes.dims(), sd = scores.dims();
  if (sd.size() != 3) throw Error("Scores must be [N, C, M], got " + DimsString(sd));
  if (bd.size() != 3 || bd[2] != 4 || bd[0] != sd[0] || bd[1] != sd[2]) {
    throw Error("BBoxes must be [N, M, 4] = [" + std::to_string(sd[0]) + ", " + std::to_string(sd[2]) +
                ", 4] for Scores " + DimsString(sd) + ", got " + DimsString(bd));
  }
  const int64_t images = sd[0], classes = sd[1], m = sd[2];
  const T* box_data = bboxes.data<T>();
  const T* score_data = scores.data<T>();
  std::vector<std::vector<Detection<T>>> kept(static_cast<size_t>(images));
  for (int64_t i = 0; i < images; ++i) {
    std::vector<Detection<T>>& image = kept[static_cast<size_t>(i)];
    for (int64_t c = 0; c < classes; ++c) {
      if (c == a.background) continue;
      MatrixNmsClass(c, score_data + (i * classes + c) * m, box_data + i * m * 4, m, a, &image);
    }
    std::stable_sort(image.begin(), image.end(), [](const auto& x, const auto& y) { return x.score > y.score; });
    if (a.keep_top_k > -1 && static_cast<int64_t>(image.size()) > a.keep_top_k)
      image.resize(static_cast<size_t>(a.keep_top_k));
  }

  std::vector<uint64_t> lod{0};
  for (const auto& image : kept) lod.push_back(lod.back() + image.size());
  const int64_t total = static_cast<int64_t>(lod.back());
  T* o = ctx.AllocateOutput<T>("Out", {total, 6});
  int32_t* index = ctx.AllocateOutput<int32_t>("Index", {total, 1});
  for (int64_t i = 0; i < images; ++i) {
    for (const Detection<T>& d : kept[static_cast<size_t>(i)]) {
      o[0] = static_cast<T>(d.label);
      o[1] = d.score;
      std::copy(box_data + (i * m + d.box) * 4, box_data + (i * m + d.box + 1) * 4, o + 2);
      o += 6;
      *index++ = static_cast<int32_t>(i * m + d.box);
    }
  }
  ctx.Output("Out").set_lod({lod});
  ctx.Output("Index").set_lod({lod});
  if (ctx.HasOutput("RoisNum")) {
    int32_t* counts = ctx.AllocateOutput<int32_t>("RoisNum", {images});
    for (int64_t i = 0; i < images; ++i) counts[i] = static_cast<int32_t>(kept[static_cast<size_t>(i)].size());
  }
}

}  // namespace

void RegisterMatrixNms(Registrar& r) {
  r.Op(OpSchema("matrix_nms")
           .Doc("Matrix NMS as Paddle defines it (see matrix_nms.cc): scores decay by their boxes' overlaps with "
                "better ones instead of being suppressed; each image's kept detections as rows (label, score, x1, "
                "y1, x2, y2), best first, with Out's LoD giving each image's rows.")
           .Input("BBoxes", "[N, M, 4] boxes an image")
           .Input("Scores", "[N, C, M]: each class's score of each box")
           .Output("Out", "[detections, 6] rows (label, score, x1, y1, x2, y2), with each image's count as LoD")
           .Output("Index", "int32 [detections, 1]: each row's box in the input, image * M + box")
           .Output("RoisNum", "int32 [N]: each image's detections", RILL_SLOT_OPTIONAL)
           .Attr("background_label", int64_t{0}, "the class left out (-1: none)")
           .Attr("score_threshold", 0.0f, "boxes scoring at most this are left out")
           .Attr("post_threshold", 0.0f, "detections whose decayed score is at most this are dropped")
           .Attr("nms_top_k", int64_t{-1}, "each class's best boxes considered (-1: all)")
           .Attr("keep_top_k", int64_t{-1}, "an image's detections kept across classes (-1: all)")
           .Attr("normalized", true, "coordinates in [0, 1]; otherwise pixels, a box's width counting its last pixel")
           .Attr("use_gaussian", false, "decay by the Gaussian instead of linearly")
           .Attr("gaussian_sigma", 2.0f, "the Gaussian's sigma")
           .KernelDtypeFrom("Scores"));
  RegisterCpu<float, double>(r, "matrix_nms", [](auto t) { return &MatrixNms<decltype(t)>; });
}

}  // namespace rill::math
