// yolo_box: a YOLOv3 head's raw output decoded into boxes and class scores, with Paddle's
// contract (paddle/fluid/operators/detection/yolo_box_op.h).
//
// X is [N, C, H, W] with C = A * (5 + class_num) for the A anchors (A = anchors / 2), and A
// more channels in front, one IoU prediction per anchor, when iou_aware. For anchor a at
// cell (k, l), channels (x, y, w, h, objectness, class scores...) of that anchor give
//   conf = sigmoid(objectness), or conf^(1 - f) * sigmoid(iou)^f when iou_aware (f the
//          iou_aware_factor);
//   centre (l + sigmoid(x) * s + b) * img_w / W and (k + sigmoid(y) * s + b) * img_h / H,
//          with s = scale_x_y and b = -(s - 1) / 2;
//   size   exp(w) * anchor_w * img_w / (ratio * W) and exp(h) * anchor_h * img_h / (ratio * H),
// where (img_h, img_w) is the image's row of ImgSize and ratio the downsample_ratio. Boxes
// [N, A*H*W, 4] holds (x1, y1, x2, y2), clipped to [0, img - 1] when clip_bbox; Scores
// [N, A*H*W, class_num] holds conf * sigmoid(class score). A box whose conf is below
// conf_thresh is all zeros in both. Box m of an image is anchor m / (H*W), cell m % (H*W).
#include <cmath>
#include <cstring>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

template <class T> T Sigmoid(T x) { return static_cast<T>(1.0 / (1.0 + std::exp(-x))); }

template <class T> void YoloBox(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor img_size = ctx.Input("ImgSize");
  const std::vector<int64_t> anchors = ctx.Attr<std::vector<int64_t>>("anchors");
  const int64_t class_num = ctx.Attr<int64_t>("class_num");
  const int64_t ratio = ctx.Attr<int64_t>("downsample_ratio");
  const T conf_thresh = static_cast<T>(ctx.Attr<float>("conf_thresh"));
  const bool clip = ctx.Attr<bool>("clip_bbox");
  const float scale = ctx.Attr<float>("scale_x_y");
  const bool iou_aware = ctx.Attr<bool>("iou_aware");
  const T iou_factor = static_cast<T>(ctx.Attr<float>("iou_aware_factor"));
  const T bias = static_cast<T>(-0.5 * (scale - 1.0));

  if (anchors.empty() || anchors.size() % 2 != 0) {
    throw Error("anchors must be (width, height) pairs, got " + std::to_string(anchors.size()) + " values");
  }
  if (class_num <= 0) throw Error("class_num must be positive, got " + std::to_string(class_num));
  if (ratio <= 0) throw Error("downsample_ratio must be positive, got " + std::to_string(ratio));
  const std::vector<int64_t> d = x.dims();
  const int64_t an_num = static_cast<int64_t>(anchors.size() / 2);
  const int64_t want_c = an_num * (5 + class_num) + (iou_aware ? an_num : 0);
  if (d.size() != 4 || d[1] != want_c) {
    throw Error("X must be [N, " + std::to_string(want_c) + ", H, W] for " + std::to_string(an_num) + " anchors and " +
                std::to_string(class_num) + " classes" + (iou_aware ? " (iou_aware)" : "") + ", got " + DimsString(d));
  }
  const int64_t n = d[0], h = d[2], w = d[3];
  if (img_size.dtype() != RILL_INT32 || img_size.dims() != std::vector<int64_t>{n, 2}) {
    throw Error("ImgSize must be int32 [" + std::to_string(n) + ", 2] (each image's height and width), got " +
                DimsString(img_size.dims()));
  }
  const int64_t stride = h * w, an_stride = (5 + class_num) * stride, box_num = an_num * stride;
  const T* in = x.data<T>();
  const int32_t* sizes = img_size.data<int32_t>();
  T* boxes = ctx.Output("Boxes").Allocate<T>({n, box_num, 4});
  T* scores = ctx.Output("Scores").Allocate<T>({n, box_num, class_num});
  std::fill(boxes, boxes + n * box_num * 4, T(0));
  std::fill(scores, scores + n * box_num * class_num, T(0));
  const T input_h = static_cast<T>(ratio * h), input_w = static_cast<T>(ratio * w);

  // One item per (image, anchor): each writes its own boxes and scores. The cost is the
  // exps of every cell's channels, so the bytes read stand for it.
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(x.numel());
  ParallelFor(n * an_num, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / an_num, a = item % an_num;
      const T img_h = static_cast<T>(sizes[2 * i]), img_w = static_cast<T>(sizes[2 * i + 1]);
      const T* image = in + i * want_c * stride;
      const T* ious = image;  // the IoU channels, when iou_aware
      const T* p = image + (iou_aware ? an_num * stride : 0) + a * an_stride;
      for (int64_t k = 0; k < h; ++k) {
        for (int64_t l = 0; l < w; ++l) {
          const int64_t cell = k * w + l;
          T conf = Sigmoid(p[4 * stride + cell]);
          if (iou_aware) {
            const T iou = Sigmoid(ious[a * stride + cell]);
            conf = std::pow(conf, T(1) - iou_factor) * std::pow(iou, iou_factor);
          }
          if (conf < conf_thresh) continue;
          const T cx =
              (static_cast<T>(l) + Sigmoid(p[cell]) * static_cast<T>(scale) + bias) * img_w / static_cast<T>(w);
          const T cy = (static_cast<T>(k) + Sigmoid(p[stride + cell]) * static_cast<T>(scale) + bias) * img_h /
                       static_cast<T>(h);
          const T bw = std::exp(p[2 * stride + cell]) * static_cast<T>(anchors[2 * a]) * img_w / input_w;
          const T bh = std::exp(p[3 * stride + cell]) * static_cast<T>(anchors[2 * a + 1]) * img_h / input_h;
          const int64_t m = i * box_num + a * stride + cell;
          T* b = boxes + m * 4;
          b[0] = cx - bw / 2;
          b[1] = cy - bh / 2;
          b[2] = cx + bw / 2;
          b[3] = cy + bh / 2;
          if (clip) {
            b[0] = b[0] > 0 ? b[0] : T(0);
            b[1] = b[1] > 0 ? b[1] : T(0);
            b[2] = b[2] < img_w - 1 ? b[2] : img_w - 1;
            b[3] = b[3] < img_h - 1 ? b[3] : img_h - 1;
          }
          T* s = scores + m * class_num;
          for (int64_t c = 0; c < class_num; ++c) s[c] = conf * Sigmoid(p[(5 + c) * stride + cell]);
        }
      }
    }
  });
}

}  // namespace

void RegisterYoloBox(Registrar& r) {
  r.Op(OpSchema("yolo_box")
           .Doc("A YOLOv3 head's output X [N, A*(5+class_num), H, W] (A = anchors/2; A more channels in "
                "front when iou_aware) decoded, as Paddle defines it, into Boxes [N, A*H*W, 4] (x1, y1, x2, y2 "
                "in the image's pixels) and Scores [N, A*H*W, class_num] (objectness times class "
                "probability); boxes below conf_thresh are zeros.")
           .Input("X", "the head's output, [N, C, H, W]")
           .Input("ImgSize", "each image's height and width, int32 [N, 2]")
           .Output("Boxes", "[N, A*H*W, 4]")
           .Output("Scores", "[N, A*H*W, class_num]")
           .Attr("anchors", std::vector<int64_t>{}, "the anchors' (width, height) pairs, in pixels of the input")
           .Attr("class_num", int64_t{1}, "the classes")
           .Attr("conf_thresh", 0.01f, "boxes whose confidence is below it are left zero")
           .Attr("downsample_ratio", int64_t{32}, "the input's size over the head's (H, W)")
           .Attr("clip_bbox", true, "clip boxes to the image")
           .Attr("scale_x_y", 1.0f, "the centre's scale (s above)")
           .Attr("iou_aware", false, "X has an IoU channel per anchor in front")
           .Attr("iou_aware_factor", 0.5f, "the IoU's weight in the confidence")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double>(r, "yolo_box", [](auto t) { return &YoloBox<decltype(t)>; });
}

}  // namespace rill::math
