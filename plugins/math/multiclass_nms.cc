// multiclass_nms, multiclass_nms2, multiclass_nms3: per-class non-maximum suppression of
// detections, with Paddle's contract (paddle/fluid/operators/detection/multiclass_nms_op.cc,
// nms_util.h).
//
// Two layouts: Scores [N, C, M] with BBoxes [N, M, 4] (M boxes an image, shared by the C
// classes), or Scores [M, C] with BBoxes [M, C, 4] (a box per class) split into images by
// RoisNum (multiclass_nms3) or BBoxes' LoD. For each image and each class but
// background_label, the boxes scoring above score_threshold, best first (ties in box order),
// at most nms_top_k of them (-1: all), are kept greedily: a box is kept when its IoU with
// every box kept before it is at most the threshold, which starts at nms_threshold and is
// multiplied by nms_eta after each kept box while above 0.5. IoU counts a pixel's width
// (+1) unless `normalized`. When an image keeps more than keep_top_k (-1: no limit), its
// best keep_top_k across classes remain (ties keep class order).
//
// Out holds, for each image in order, its detections as rows (label, score, x1, y1, x2,
// y2), by ascending label, each class's best first (the [M, C] layout: by box order). Out's
// LoD and NmsRoisNum give each image's count. Index (multiclass_nms2/3) is each row's box
// in the input: image * M + box for [N, C, M], box * C + label for [M, C]. When no image
// keeps anything Out is [0, 6] when Index is asked for, and otherwise one row [-1] with LoD
// {0, 1}, as Paddle's kernel returns.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "boxes.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

struct NmsAttrs {
  int64_t background, nms_top_k, keep_top_k;
  bool normalized;
  float score_threshold, nms_threshold, eta;
};

// One image's detections: class -> kept boxes, in output order. `score(c, m)` and
// `box(c, m)` read box m's score and coordinates for class c.
template <class T, class ScoreAt, class BoxAt>
std::map<int64_t, std::vector<int64_t>> NmsImage(int64_t classes, int64_t boxes, const NmsAttrs& a, bool box_order,
                                                 ScoreAt score, BoxAt box) {
  std::map<int64_t, std::vector<int64_t>> kept;
  int64_t total = 0;
  for (int64_t c = 0; c < classes; ++c) {
    if (c == a.background) continue;
    std::vector<std::pair<T, int64_t>> order;
    for (int64_t m = 0; m < boxes; ++m) {
      if (score(c, m) > static_cast<T>(a.score_threshold)) order.emplace_back(score(c, m), m);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    if (a.nms_top_k > -1 && a.nms_top_k < static_cast<int64_t>(order.size())) order.resize(a.nms_top_k);
    std::vector<int64_t>& selected = kept[c];
    T threshold = static_cast<T>(a.nms_threshold);
    for (const auto& [s, m] : order) {
      bool keep = true;
      for (int64_t k : selected) {
        if (JaccardOverlap(box(c, m), box(c, k), a.normalized) > threshold) {
          keep = false;
          break;
        }
      }
      if (!keep) continue;
      selected.push_back(m);
      if (a.eta < 1 && threshold > T(0.5)) threshold *= static_cast<T>(a.eta);
    }
    if (box_order) std::stable_sort(selected.begin(), selected.end());
    total += static_cast<int64_t>(selected.size());
  }
  if (a.keep_top_k > -1 && total > a.keep_top_k) {
    std::vector<std::pair<T, std::pair<int64_t, int64_t>>> all;
    for (const auto& [c, ms] : kept) {
      for (int64_t m : ms) all.push_back({score(c, m), {c, m}});
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    all.resize(static_cast<size_t>(a.keep_top_k));
    std::map<int64_t, std::vector<int64_t>> best;
    for (const auto& [s, cm] : all) best[cm.first].push_back(cm.second);
    if (box_order) {
      for (auto& [c, ms] : best) std::stable_sort(ms.begin(), ms.end());
    }
    kept.swap(best);
  }
  for (auto it = kept.begin(); it != kept.end();) it = it->second.empty() ? kept.erase(it) : std::next(it);
  return kept;
}

template <class T> void MulticlassNms(KernelContext& ctx) {
  Tensor bboxes = ctx.Input("BBoxes");
  Tensor scores = ctx.Input("Scores");
  const NmsAttrs a{ctx.Attr<int64_t>("background_label"),
                   ctx.Attr<int64_t>("nms_top_k"),
                   ctx.Attr<int64_t>("keep_top_k"),
                   ctx.Attr<bool>("normalized"),
                   ctx.Attr<float>("score_threshold"),
                   ctx.Attr<float>("nms_threshold"),
                   ctx.Attr<float>("nms_eta")};
  const std::vector<int64_t> bd = bboxes.dims(), sd = scores.dims();
  const bool per_image = sd.size() == 3;  // Scores [N, C, M]; else [M, C]
  if (!per_image && sd.size() != 2) throw Error("Scores must be [N, C, M] or [M, C], got " + DimsString(sd));
  if (bd.size() != 3 || bd[2] != 4) {
    throw Error("BBoxes must be [N, M, 4] or [M, C, 4] (x1, y1, x2, y2; polygon boxes are not supported), got " +
                DimsString(bd));
  }
  if (per_image ? (bd[0] != sd[0] || bd[1] != sd[2]) : (bd[0] != sd[0] || bd[1] != sd[1])) {
    throw Error(
        "BBoxes " + DimsString(bd) + " does not match Scores " + DimsString(sd) +
        (per_image ? ": want BBoxes [N, M, 4] for Scores [N, C, M]" : ": want BBoxes [M, C, 4] for Scores [M, C]"));
  }
  const T* box_data = bboxes.data<T>();
  const T* score_data = scores.data<T>();

  // Each image's rows of the input: [N, C, M] images are its first dim; [M, C] rows are
  // split by RoisNum or BBoxes' LoD.
  std::vector<int64_t> starts{0};
  if (per_image) {
    for (int64_t i = 1; i <= sd[0]; ++i) starts.push_back(i);
  } else {
    starts = ImageStarts(ctx, bboxes, "BBoxes [M, C, 4]");
  }
  if (!per_image && starts.back() != sd[0]) {
    throw Error("the images' box counts add up to " + std::to_string(starts.back()) + ", but Scores has " +
                std::to_string(sd[0]) + " rows");
  }
  const int64_t images = static_cast<int64_t>(starts.size()) - 1;
  const int64_t classes = sd[1];

  struct Row {
    int64_t label, index;
    const T* box;
    T score;
  };
  std::vector<std::vector<Row>> rows(static_cast<size_t>(images));
  for (int64_t i = 0; i < images; ++i) {
    const int64_t first = starts[i], count = starts[i + 1] - starts[i];
    std::map<int64_t, std::vector<int64_t>> kept;
    if (per_image) {
      const int64_t m_all = sd[2];
      const T* s = score_data + i * classes * m_all;
      const T* b = box_data + i * m_all * 4;
      kept = NmsImage<T>(
          classes, m_all, a, false, [&](int64_t c, int64_t m) { return s[c * m_all + m]; },
          [&](int64_t, int64_t m) { return b + m * 4; });
      for (const auto& [c, ms] : kept) {
        for (int64_t m : ms) rows[i].push_back({c, i * m_all + m, b + m * 4, s[c * m_all + m]});
      }
    } else {
      const T* s = score_data + first * classes;
      const T* b = box_data + first * classes * 4;
      kept = NmsImage<T>(
          classes, count, a, true, [&](int64_t c, int64_t m) { return s[m * classes + c]; },
          [&](int64_t c, int64_t m) { return b + (m * classes + c) * 4; });
      for (const auto& [c, ms] : kept) {
        for (int64_t m : ms) {
          rows[i].push_back({c, (first + m) * classes + c, b + (m * classes + c) * 4, s[m * classes + c]});
        }
      }
    }
  }

  std::vector<uint64_t> lod{0};
  for (const auto& r : rows) lod.push_back(lod.back() + r.size());
  const int64_t total = static_cast<int64_t>(lod.back());
  const bool want_index = ctx.HasOutput("Index");
  Tensor out = ctx.Output("Out");
  if (total == 0 && !want_index) {
    out.Allocate<T>({1, 1})[0] = T(-1);
    out.set_lod({{0, 1}});
  } else {
    T* o = out.Allocate<T>({total, 6});
    int32_t* index = want_index ? ctx.Output("Index").Allocate<int32_t>({total, 1}) : nullptr;
    for (const auto& image : rows) {
      for (const Row& r : image) {
        o[0] = static_cast<T>(r.label);
        o[1] = r.score;
        std::copy(r.box, r.box + 4, o + 2);
        o += 6;
        if (index) *index++ = static_cast<int32_t>(r.index);
      }
    }
    out.set_lod({lod});
    if (want_index) ctx.Output("Index").set_lod({lod});
  }
  if (ctx.HasOutput("NmsRoisNum")) {
    int32_t* counts = ctx.Output("NmsRoisNum").Allocate<int32_t>({images});
    for (int64_t i = 0; i < images; ++i) counts[i] = static_cast<int32_t>(rows[i].size());
  }
}

OpSchema NmsSchema(const char* type, int version) {
  OpSchema s = OpSchema(type)
                   .Doc(
                       "Per-class non-maximum suppression as Paddle defines it (see multiclass_nms.cc): each image's "
                       "kept detections as rows (label, score, x1, y1, x2, y2), by label, best first; Out's LoD gives "
                       "each image's rows.")
                   .Input("BBoxes", "[N, M, 4] boxes an image, or [M, C, 4] a box per class (with RoisNum or a LoD)")
                   .Input("Scores", "[N, C, M], or [M, C]");
  if (version >= 3) s.Input("RoisNum", "int32 [N]: each image's rows of [M, C] Scores", RILL_SLOT_OPTIONAL);
  s.Output("Out", "[detections, 6] rows (label, score, x1, y1, x2, y2), with each image's count as LoD");
  if (version >= 2) s.Output("Index", "int32 [detections, 1]: each row's box in the input", RILL_SLOT_OPTIONAL);
  if (version >= 3) s.Output("NmsRoisNum", "int32 [N]: each image's detections", RILL_SLOT_OPTIONAL);
  return s.Attr("background_label", int64_t{0}, "the class left out (-1: none)")
      .Attr("score_threshold", 0.0f, "boxes scoring at most this are dropped")
      .Attr("nms_top_k", int64_t{-1}, "each class's best boxes considered (-1: all)")
      .Attr("nms_threshold", 0.3f, "the IoU above which a box is suppressed")
      .Attr("nms_eta", 1.0f, "adaptive NMS: the threshold's factor after each kept box while above 0.5")
      .Attr("keep_top_k", int64_t{-1}, "an image's detections kept across classes (-1: all)")
      .Attr("normalized", true, "coordinates in [0, 1]; otherwise pixels, a box's width counting its last pixel")
      .KernelDtypeFrom("Scores");
}

}  // namespace

void RegisterMulticlassNms(Registrar& r) {
  const char* types[] = {"multiclass_nms", "multiclass_nms2", "multiclass_nms3"};
  for (int v = 1; v <= 3; ++v) {
    r.Op(NmsSchema(types[v - 1], v));
    RegisterCpu<float, double>(r, types[v - 1], [](auto t) { return &MulticlassNms<decltype(t)>; });
  }
}

}  // namespace rill::math
