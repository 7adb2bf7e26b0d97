// nce: noise-contrastive estimation (Gutmann & Hyvarinen), the large-vocabulary loss of
// word2vec's variants, with Paddle's contract (paddle/fluid/operators/nce_op.*).
//
// Each row i of Input scores its true classes Label[i, :] and num_neg_samples classes
// drawn from a noise distribution Q (uniform; log-uniform over the class ids, Q(c) =
// log((c + 2) / (c + 1)) / log(classes), Zipf-like for ids sorted by frequency; or a custom
// one given as an alias table), or the
// custom_neg_classes listed; SampleLabels holds them, true ones first. For each sampled
// class c, o = sigmoid(Input[i] . Weight[c] + Bias[c]) (SampleLogits) and b = k Q(c):
// Cost[i] = SampleWeight[i] * (sum over true c of -log(o / (o + b)) + sum over noise c of
// -log(b / (o + b))). The gradient reaches Input, Weight and Bias only through the rows of
// the sampled classes; with is_sparse, Weight@GRAD is SelectedRows of those classes' rows.
#include <cmath>
#include <random>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "philox.h"
#include "reduction_loops.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// The noise distribution over [0, classes).
class Noise {
 public:
  Noise(KernelContext& ctx, int64_t classes) : classes_(classes), kind_(ctx.Attr<int64_t>("sampler")) {
    if (kind_ < 0 || kind_ > 2) {
      throw Error("sampler must be 0 (uniform), 1 (log-uniform) or 2 (custom), is " + std::to_string(kind_));
    }
    if (kind_ == 2) {
      Tensor probs = ctx.Input("CustomDistProbs"), alias = ctx.Input("CustomDistAlias"),
             alias_probs = ctx.Input("CustomDistAliasProbs");
      if (probs.numel() != classes || alias.numel() != classes || alias_probs.numel() != classes ||
          probs.dtype() != RILL_FP32 || alias.dtype() != RILL_INT32 || alias_probs.dtype() != RILL_FP32) {
        throw Error(
            "a custom sampler takes CustomDistProbs (fp32), CustomDistAlias (int32) and "
            "CustomDistAliasProbs (fp32) of num_total_classes (" +
            std::to_string(classes) + ") values each");
      }
      probs_.assign(probs.data<float>(), probs.data<float>() + classes);
      alias_.assign(alias.data<int32_t>(), alias.data<int32_t>() + classes);
      alias_probs_.assign(alias_probs.data<float>(), alias_probs.data<float>() + classes);
    }
  }

  double Probability(int64_t c) const {
    switch (kind_) {
      case 0: return 1.0 / static_cast<double>(classes_);
      case 1: return std::log((c + 2.0) / (c + 1.0)) / std::log(static_cast<double>(classes_));
      default: return probs_[static_cast<size_t>(c)];
    }
  }

  // A class from two uniform draws in [0, 1).
  int64_t Sample(double u1, double u2) const {
    switch (kind_) {
      case 0: return std::min<int64_t>(static_cast<int64_t>(u1 * static_cast<double>(classes_)), classes_ - 1);
      case 1: {  // inverse of the log-uniform CDF log(c + 1) / log(classes), over [0, classes - 1)
        const auto c = static_cast<int64_t>(std::exp(u1 * std::log(static_cast<double>(classes_)))) - 1;
        return std::min<int64_t>(std::max<int64_t>(c, 0), std::max<int64_t>(classes_ - 2, 0));
      }
      default: {  // Walker's alias method (an alias of -1: none, the bucket itself)
        const auto k = std::min<int64_t>(static_cast<int64_t>(u1 * static_cast<double>(classes_)), classes_ - 1);
        const int32_t alias = alias_[static_cast<size_t>(k)];
        return u2 > alias_probs_[static_cast<size_t>(k)] && alias >= 0 ? alias : k;
      }
    }
  }

 private:
  int64_t classes_, kind_;
  std::vector<float> probs_, alias_probs_;
  std::vector<int32_t> alias_;
};

struct NceShape {
  int64_t rows, dim, classes, num_true, num_neg, width;  // width: sampled classes a row
};

NceShape ShapeOf(KernelContext& ctx) {
  Tensor x = ctx.Input("Input"), label = ctx.Input("Label"), w = ctx.Input("Weight");
  NceShape s{};
  if (x.ndim() != 2) throw Error("Input must be [N, D], is " + DimsString(x.dims()));
  s.rows = x.dims()[0];
  s.dim = x.dims()[1];
  s.classes = ctx.Attr<int64_t>("num_total_classes");
  if (w.dims() != std::vector<int64_t>{s.classes, s.dim}) {
    throw Error("Weight must be [num_total_classes, D] = [" + std::to_string(s.classes) + ", " + std::to_string(s.dim) +
                "], is " + DimsString(w.dims()));
  }
  if (label.dtype() != RILL_INT64 || label.ndim() < 1 || label.dims()[0] != s.rows) {
    throw Error("Label must be int64 [N, num_true] with N = " + std::to_string(s.rows) + ", is " +
                DataTypeName(label.dtype()) + " " + DimsString(label.dims()));
  }
  s.num_true = label.ndim() == 2 ? label.dims()[1] : 1;
  const auto custom = ctx.Attr<std::vector<int64_t>>("custom_neg_classes");
  s.num_neg = custom.empty() ? ctx.Attr<int64_t>("num_neg_samples") : static_cast<int64_t>(custom.size());
  if (s.num_neg < 0) throw Error("num_neg_samples must not be negative, is " + std::to_string(s.num_neg));
  s.width = s.num_true + s.num_neg;
  return s;
}

template <class T> void Nce(KernelContext& ctx) {
  const NceShape s = ShapeOf(ctx);
  const Noise noise(ctx, s.classes);
  const T* x = ctx.Input("Input").data<T>();
  const T* w = ctx.Input("Weight").data<T>();
  const T* bias = nullptr;
  if (ctx.HasInput("Bias")) {
    Tensor b = ctx.Input("Bias");
    if (b.numel() != s.classes) {
      throw Error("Bias must hold num_total_classes (" + std::to_string(s.classes) + ") values, is " +
                  DimsString(b.dims()));
    }
    bias = b.data<T>();
  }
  const T* sample_weight = ctx.HasInput("SampleWeight") ? ctx.Input("SampleWeight").data<T>() : nullptr;
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  const auto custom = ctx.Attr<std::vector<int64_t>>("custom_neg_classes");
  const int64_t seed_attr = ctx.Attr<int64_t>("seed");
  const PhiloxKey key = PhiloxKeyOf(seed_attr != 0 ? static_cast<uint64_t>(seed_attr) : std::random_device{}());

  int64_t* samples = ctx.AllocateOutput<int64_t>("SampleLabels", {s.rows, s.width});
  T* logits = ctx.AllocateOutput<T>("SampleLogits", {s.rows, s.width});
  T* cost = ctx.AllocateOutput<T>("Cost", {s.rows, 1});
  // The rows in chunks on the passes' team, each writing its own samples, scores and cost (a
  // sample is drawn from its own Philox counter, whichever thread draws it; a chunk's error
  // is rethrown in chunk order, so the first bad row is the one named). The bytes: the
  // Weight rows the samples read.
  const double bytes = sizeof(T) * static_cast<double>(s.rows) * static_cast<double>(s.width * s.dim);
  ParallelFor(s.rows, bytes, [&](int64_t, int64_t first, int64_t last) {
    std::vector<double> o(static_cast<size_t>(s.width));  // a row's scores, unrounded for its cost
    for (int64_t i = first; i < last; ++i) {
      for (int64_t j = 0; j < s.width; ++j) {
        const int64_t at = i * s.width + j;
        int64_t c;
        if (j < s.num_true) {
          c = label[i * s.num_true + j];
        } else if (!custom.empty()) {
          c = custom[static_cast<size_t>(j - s.num_true)];
        } else {
          const auto r = Philox4x32({static_cast<uint32_t>(at), static_cast<uint32_t>(at >> 32), 0, 0}, key);
          c = noise.Sample((r[0] + r[1] * 4294967296.0) / 18446744073709551616.0, r[2] / 4294967296.0);
        }
        if (c < 0 || c >= s.classes) {
          throw Error("sampled class " + std::to_string(c) + " of row " + std::to_string(i) + " is outside [0, " +
                      std::to_string(s.classes) + ")");
        }
        samples[at] = c;
        double z = bias ? static_cast<double>(bias[c]) : 0.0;
        z += reduction::DotInDoubleFor<T>()(x + i * s.dim, w + c * s.dim, s.dim);
        o[static_cast<size_t>(j)] = 1.0 / (1.0 + std::exp(-z));
        logits[at] = static_cast<T>(o[static_cast<size_t>(j)]);
      }
      double total = 0;
      for (int64_t j = 0; j < s.width; ++j) {
        const double oj = o[static_cast<size_t>(j)];
        const double b = noise.Probability(samples[i * s.width + j]) * static_cast<double>(s.num_neg);
        total += j < s.num_true ? -std::log(oj / (oj + b)) : -std::log(b / (oj + b));
      }
      cost[i] = static_cast<T>((sample_weight ? static_cast<double>(sample_weight[i]) : 1.0) * total);
    }
  });
}

template <class T> void NceGrad(KernelContext& ctx) {
  const NceShape s = ShapeOf(ctx);
  const Noise noise(ctx, s.classes);
  const T* x = ctx.Input("Input").data<T>();
  const T* w = ctx.Input("Weight").data<T>();
  const T* logits = ctx.Input("SampleLogits").data<T>();
  const int64_t* samples = ctx.Input("SampleLabels").data<int64_t>();
  const T* cost_grad = ctx.Input("Cost@GRAD").data<T>();
  const T* sample_weight = ctx.HasInput("SampleWeight") ? ctx.Input("SampleWeight").data<T>() : nullptr;
  // d cost / d z for each sampled class (z its pre-sigmoid score).
  std::vector<double> dz(static_cast<size_t>(s.rows * s.width));
  for (int64_t i = 0; i < s.rows; ++i) {
    const double scale = (sample_weight ? static_cast<double>(sample_weight[i]) : 1.0) * cost_grad[i];
    for (int64_t j = 0; j < s.width; ++j) {
      const int64_t at = i * s.width + j;
      const double o = logits[at];
      const double b = noise.Probability(samples[at]) * static_cast<double>(s.num_neg);
      dz[static_cast<size_t>(at)] = scale * (j < s.num_true ? (b / (o + b)) * (o - 1) : o * (1 - o) / (o + b));
    }
  }
  if (ctx.HasOutput("Input@GRAD")) {
    T* dx = ctx.AllocateOutput<T>("Input@GRAD", {s.rows, s.dim});
    for (int64_t i = 0; i < s.rows; ++i) {
      for (int64_t d = 0; d < s.dim; ++d) {
        double sum = 0;
        for (int64_t j = 0; j < s.width; ++j) {
          sum += dz[static_cast<size_t>(i * s.width + j)] * w[samples[i * s.width + j] * s.dim + d];
        }
        dx[i * s.dim + d] = static_cast<T>(sum);
      }
    }
  }
  if (ctx.HasOutput("Weight@GRAD")) {
    TableGradient<T> dw(ctx.OutputVar("Weight@GRAD"), std::vector<int64_t>(samples, samples + s.rows * s.width),
                        s.classes, s.dim, ctx.Attr<bool>("is_sparse"));
    for (int64_t at = 0; at < s.rows * s.width; ++at) {
      const int64_t i = at / s.width;
      T* row = dw.Row(samples[at]);
      for (int64_t d = 0; d < s.dim; ++d) row[d] += static_cast<T>(dz[static_cast<size_t>(at)] * x[i * s.dim + d]);
    }
  }
  if (ctx.HasOutput("Bias@GRAD")) {  // shaped like Bias: [classes, 1] or [classes]
    T* db = ctx.AllocateOutput<T>("Bias@GRAD", ctx.Input("Bias").dims());
    std::fill(db, db + s.classes, T(0));
    for (int64_t at = 0; at < s.rows * s.width; ++at) db[samples[at]] += static_cast<T>(dz[static_cast<size_t>(at)]);
  }
}

}  // namespace

void RegisterNce(Registrar& r) {
  const OpSchema nce =
      OpSchema("nce")
          .Doc(
              "Cost = the noise-contrastive estimation loss of each row of Input for its Label classes against "
              "num_neg_samples classes drawn from the sampler's noise (or custom_neg_classes), [N, 1]; "
              "SampleLogits the sampled classes' sigmoid scores, SampleLabels the classes (true ones first). "
              "As Paddle's.")
          .Input("Input", "[N, D]")
          .Input("Label", "int64 [N, num_true]")
          .Input("Weight", "[num_total_classes, D]")
          .Input("Bias", "[num_total_classes, 1]", RILL_SLOT_OPTIONAL)
          .Input("SampleWeight", "[N, 1], each row's weight (default 1)", RILL_SLOT_OPTIONAL)
          .Input("CustomDistProbs", "fp32 [num_total_classes], the custom noise distribution", RILL_SLOT_OPTIONAL)
          .Input("CustomDistAlias", "int32 [num_total_classes], its alias table", RILL_SLOT_OPTIONAL)
          .Input("CustomDistAliasProbs", "fp32 [num_total_classes], its alias probabilities", RILL_SLOT_OPTIONAL)
          .Output("Cost", "[N, 1]")
          .Output("SampleLogits", "[N, num_true + num_neg], sigmoid scores")
          .Output("SampleLabels", "int64 [N, num_true + num_neg], the classes")
          .RequiredAttr("num_total_classes", RILL_ATTR_INT, "the number of classes")
          .Attr("num_neg_samples", int64_t{10}, "noise classes drawn per row")
          .Attr("sampler", int64_t{0}, "the noise: 0 uniform, 1 log-uniform, 2 custom")
          .Attr("seed", int64_t{0}, "the draws' seed; 0 draws one from the OS each run")
          .Attr("custom_neg_classes", std::vector<int64_t>{}, "fixed noise classes (tests)")
          .Attr("is_sparse", false, "Weight@GRAD as SelectedRows of the sampled classes' rows")
          .Attr("remote_prefetch", false, "Paddle's distributed prefetch (no effect)")
          .KernelDtypeFrom("Input")
          .Grad("nce_grad",
                "Input,Label,Weight,Bias,SampleWeight,CustomDistProbs,CustomDistAlias,CustomDistAliasProbs,"
                "SampleLogits,SampleLabels,Cost@GRAD",
                "Input,Weight,Bias");
  r.Op(nce);
  r.Op(nce.MakeGradSchema().KernelDtypeFrom("Input"));
  RegisterCpu<float, double>(r, "nce", [](auto t) { return &Nce<decltype(t)>; });
  RegisterCpu<float, double>(r, "nce_grad", [](auto t) { return &NceGrad<decltype(t)>; });
}

}  // namespace rill::math
