// mean_iou: the mean intersection-over-union of a segmentation's classes, with Paddle's
// contract (paddle/fluid/operators/mean_iou_op.h).
//
// Predictions and Labels (int32 or int64, the same numel) hold one class in
// [0, num_classes) per pixel. Per class, a pixel predicted right counts as correct; a wrong
// one counts as wrong for both its label and its prediction. OutCorrect and OutWrong (int32
// [num_classes]) are this batch's counts plus those of InCorrects and InWrongs (lists of
// earlier counts, optional), and
//   OutMeanIou = the sum of InMeanIou + the mean over the classes seen (correct + wrong > 0)
//                of correct / (correct + wrong)
// from those accumulated counts (0 when no class was seen). No gradient: it is a metric.
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// out = the sum of every tensor in list input `slot`, each of out.size() elements of U.
template <class U> void AddEach(KernelContext& ctx, const char* slot, std::vector<U>& out) {
  for (size_t i = 0; i < ctx.op().InputCount(slot); ++i) {
    Tensor t = ctx.Input(slot, i);
    if (t.dtype() != DataTypeOf<U>::value || t.numel() != static_cast<int64_t>(out.size())) {
      throw Error(std::string(slot) + "[" + std::to_string(i) + "] must be " + DataTypeName(DataTypeOf<U>::value) +
                  " with " + std::to_string(out.size()) + " elements, got " + DataTypeName(t.dtype()) + " " +
                  DimsString(t.dims()));
    }
    for (size_t k = 0; k < out.size(); ++k) out[k] += t.data<U>()[k];
  }
}

template <class T> void MeanIou(KernelContext& ctx) {
  Tensor pred = ctx.Input("Predictions"), label = ctx.Input("Labels");
  const int64_t classes = ctx.Attr<int64_t>("num_classes");
  if (classes <= 0) throw Error("num_classes must be positive, got " + std::to_string(classes));
  if (label.dtype() != pred.dtype() || label.numel() != pred.numel()) {
    throw Error(std::string("Labels (") + DataTypeName(label.dtype()) + " " + DimsString(label.dims()) +
                ") must match Predictions (" + DataTypeName(pred.dtype()) + " " + DimsString(pred.dims()) +
                ") in dtype and element count");
  }
  std::vector<int32_t> wrong(static_cast<size_t>(classes), 0), correct(static_cast<size_t>(classes), 0);
  std::vector<float> mean(1, 0.0f);
  AddEach(ctx, "InWrongs", wrong);
  AddEach(ctx, "InCorrects", correct);
  AddEach(ctx, "InMeanIou", mean);
  const T *p = pred.data<T>(), *l = label.data<T>();
  for (int64_t i = 0; i < pred.numel(); ++i) {
    if (p[i] < 0 || p[i] >= classes || l[i] < 0 || l[i] >= classes) {
      throw Error("element " + std::to_string(i) + " has prediction " + std::to_string(p[i]) + " and label " +
                  std::to_string(l[i]) + ": classes lie in [0, num_classes = " + std::to_string(classes) + ")");
    }
    if (p[i] == l[i]) {
      ++correct[static_cast<size_t>(p[i])];
    } else {
      ++wrong[static_cast<size_t>(l[i])];
      ++wrong[static_cast<size_t>(p[i])];
    }
  }
  float iou_sum = 0;
  int64_t seen = 0;
  for (size_t c = 0; c < correct.size(); ++c) {
    const int32_t total = correct[c] + wrong[c];
    if (total == 0) continue;
    ++seen;
    iou_sum += static_cast<float>(correct[c]) / static_cast<float>(total);
  }
  *ctx.AllocateOutput<float>("OutMeanIou", {1}) = mean[0] + (seen > 0 ? iou_sum / static_cast<float>(seen) : 0.0f);
  std::copy(wrong.begin(), wrong.end(), ctx.AllocateOutput<int32_t>("OutWrong", {classes}));
  std::copy(correct.begin(), correct.end(), ctx.AllocateOutput<int32_t>("OutCorrect", {classes}));
}

}  // namespace

void RegisterMeanIou(Registrar& r) {
  r.Op(OpSchema("mean_iou")
           .Doc("The mean IoU over the classes of a segmentation, with running counts, as Paddle defines it (see "
                "mean_iou.cc).")
           .Input("Predictions", "int32/int64: each pixel's predicted class")
           .Input("Labels", "its true class, same dtype and element count")
           .Input("InWrongs", "int32 [num_classes] earlier wrong counts, added",
                  RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Input("InCorrects", "int32 [num_classes] earlier correct counts, added",
                  RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Input("InMeanIou", "float [1] earlier mean IoUs, added", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Output("OutMeanIou", "float [1]")
           .Output("OutWrong", "int32 [num_classes]")
           .Output("OutCorrect", "int32 [num_classes]")
           .Attr("num_classes", int64_t{2}, "the classes")
           .KernelDtypeFrom("Predictions"));
  RegisterCpu<int32_t, int64_t>(r, "mean_iou", [](auto t) { return &MeanIou<decltype(t)>; });
}

}  // namespace rill::math
