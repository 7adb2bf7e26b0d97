// warpctc: the Connectionist Temporal Classification loss (Graves et al. 2006), with
// Paddle's contract (paddle/fluid/operators/warpctc_op.*), computed here rather than by
// Baidu's warp-ctc library, which Debian does not package.
//
// Logits are unscaled: a sequence's frames [T, C + 1] (C classes and the blank) are
// log-softmaxed here. Loss[b] = -log p(label_b | frames_b), summed over every alignment
// of the label (blanks between and around its ids, an id repeated only across a blank) by
// the forward-backward recursion in log space (double accumulators). The forward pass also
// writes WarpCTCGrad, the loss's gradient by the logits, softmax(x) - the frames' posterior
// over classes, padded time-major [Tmax, B, C + 1] as Paddle keeps it; the gradient op
// scales it by Loss@GRAD (and 1/T with norm_by_times) back into Logits' layout. A label
// that no alignment of its frames can produce (too long for them) has loss 0 and a zero
// gradient, as warp-ctc gives it (PyTorch's ctc_loss with zero_infinity): it teaches
// nothing, rather than making the batch's loss infinite.
//
// Sequences come as LoD tensors (Logits [sum T, C + 1], Label int32 [sum L, 1]) or padded
// (Logits [Tmax, B, C + 1] with LogitsLength, Label [B, Lmax] with LabelLength, int64
// lengths).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogAdd(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  return std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)));
}

// Where each sequence's frames and label are.
struct CtcLayout {
  int64_t batch = 0, classes = 0, max_frames = 0;
  std::vector<int64_t> frames;                 // per sequence
  std::vector<int64_t> frame_row, frame_step;  // frame t of b is row frame_row[b] + t * frame_step
  std::vector<std::vector<int64_t>> labels;    // per sequence
};

std::vector<int64_t> Lengths(KernelContext& ctx, const char* slot, int64_t count, int64_t max) {
  Tensor t = ctx.Input(slot);
  if (t.dtype() != RILL_INT64 || t.numel() != count) {
    throw Error(std::string(slot) + " must hold one int64 length for each of the " + std::to_string(count) +
                " sequences, holds " + DataTypeName(t.dtype()) + " " + DimsString(t.dims()));
  }
  std::vector<int64_t> v(t.data<int64_t>(), t.data<int64_t>() + count);
  for (size_t b = 0; b < v.size(); ++b) {
    if (v[b] < 0 || v[b] > max) {
      throw Error(std::string(slot) + "[" + std::to_string(b) + "] = " + std::to_string(v[b]) + " is outside 0 .. " +
                  std::to_string(max));
    }
  }
  return v;
}

CtcLayout LayoutOf(KernelContext& ctx) {
  Tensor logits = ctx.Input("Logits"), label = ctx.Input("Label");
  if (label.dtype() != RILL_INT32) throw Error(std::string("Label must be int32, is ") + DataTypeName(label.dtype()));
  CtcLayout l;
  const bool padded = ctx.HasInput("LogitsLength");
  if (padded != ctx.HasInput("LabelLength")) throw Error("give LogitsLength and LabelLength together, or neither");
  if (padded) {
    if (logits.ndim() != 3) throw Error("padded Logits must be [Tmax, B, C + 1], is " + DimsString(logits.dims()));
    l.max_frames = logits.dims()[0];
    l.batch = logits.dims()[1];
    l.classes = logits.dims()[2];
    l.frames = Lengths(ctx, "LogitsLength", l.batch, l.max_frames);
    for (int64_t b = 0; b < l.batch; ++b) {
      l.frame_row.push_back(b);
      l.frame_step.push_back(l.batch);
    }
    if (label.ndim() != 2 || label.dims()[0] != l.batch) {
      throw Error("padded Label must be [B, Lmax] with B = " + std::to_string(l.batch) + ", is " +
                  DimsString(label.dims()));
    }
    const std::vector<int64_t> lengths = Lengths(ctx, "LabelLength", l.batch, label.dims()[1]);
    for (int64_t b = 0; b < l.batch; ++b) {
      const int32_t* row = label.data<int32_t>() + b * label.dims()[1];
      l.labels.emplace_back(row, row + lengths[static_cast<size_t>(b)]);
    }
  } else {
    if (logits.ndim() != 2) throw Error("Logits must be [sum T, C + 1] with a LoD, is " + DimsString(logits.dims()));
    l.classes = logits.dims()[1];
    const SequenceRanges frames = RangesOfOffsets(SequenceOffsets(ctx.op(), "Logits", logits, 1));
    const SequenceRanges labels = RangesOfOffsets(SequenceOffsets(ctx.op(), "Label", label, 1));
    if (frames.size() != labels.size()) {
      throw Error("Logits pack " + std::to_string(frames.size()) + " sequences, Label " +
                  std::to_string(labels.size()));
    }
    l.batch = static_cast<int64_t>(frames.size());
    for (const auto& [begin, end] : frames) {
      l.frames.push_back(end - begin);
      l.frame_row.push_back(begin);
      l.frame_step.push_back(1);
      l.max_frames = std::max(l.max_frames, end - begin);
    }
    for (const auto& [begin, end] : labels)
      l.labels.emplace_back(label.data<int32_t>() + begin, label.data<int32_t>() + end);
  }
  const int64_t blank = ctx.Attr<int64_t>("blank");
  if (blank < 0 || blank >= l.classes) {
    throw Error("blank " + std::to_string(blank) + " is not one of the " + std::to_string(l.classes) + " classes");
  }
  for (size_t b = 0; b < l.labels.size(); ++b) {
    for (int64_t id : l.labels[b]) {
      if (id < 0 || id >= l.classes || id == blank) {
        throw Error("Label of sequence " + std::to_string(b) + " holds " + std::to_string(id) +
                    ", not a class other than the blank in [0, " + std::to_string(l.classes) + ")");
      }
    }
  }
  return l;
}

// One sequence: its loss, and its gradient by the logits into `grad` (frame t at
// grad + t * grad_step, each C + 1 wide), in log space: exact wherever a double's exponent
// holds the log-probabilities, at a log and an exp for each sum of two terms.
template <class T>
double SequenceLossInLogSpace(const T* x, int64_t x_step, int64_t frames, int64_t classes,
                              const std::vector<int64_t>& label, int64_t blank, T* grad, int64_t grad_step) {
  const int64_t c1 = classes;
  // Log-softmax of each frame.
  std::vector<double> lp(static_cast<size_t>(frames * c1));
  for (int64_t t = 0; t < frames; ++t) {
    const T* row = x + t * x_step * c1;
    double max = kNegInf;
    for (int64_t c = 0; c < c1; ++c) max = std::max(max, static_cast<double>(row[c]));
    double sum = 0;
    for (int64_t c = 0; c < c1; ++c) sum += std::exp(row[c] - max);
    const double log_sum = max + std::log(sum);
    for (int64_t c = 0; c < c1; ++c) lp[static_cast<size_t>(t * c1 + c)] = row[c] - log_sum;
  }
  // The label with blanks around and between its ids.
  const int64_t s_len = 2 * static_cast<int64_t>(label.size()) + 1;
  std::vector<int64_t> ext(static_cast<size_t>(s_len), blank);
  for (size_t i = 0; i < label.size(); ++i) ext[2 * i + 1] = label[i];
  const auto may_skip = [&](int64_t s) { return s >= 2 && ext[s] != blank && ext[s] != ext[s - 2]; };
  const auto at = [&](int64_t t, int64_t s) { return static_cast<size_t>(t * s_len + s); };

  double loglik = kNegInf;
  std::vector<double> alpha(static_cast<size_t>(frames * s_len), kNegInf), beta(alpha.size(), kNegInf);
  if (frames > 0) {
    alpha[at(0, 0)] = lp[static_cast<size_t>(blank)];
    if (s_len > 1) alpha[at(0, 1)] = lp[static_cast<size_t>(ext[1])];
    for (int64_t t = 1; t < frames; ++t) {
      for (int64_t s = 0; s < s_len; ++s) {
        double a = alpha[at(t - 1, s)];
        if (s >= 1) a = LogAdd(a, alpha[at(t - 1, s - 1)]);
        if (may_skip(s)) a = LogAdd(a, alpha[at(t - 1, s - 2)]);
        alpha[at(t, s)] = a == kNegInf ? kNegInf : a + lp[static_cast<size_t>(t * c1 + ext[s])];
      }
    }
    loglik = alpha[at(frames - 1, s_len - 1)];
    if (s_len > 1) loglik = LogAdd(loglik, alpha[at(frames - 1, s_len - 2)]);
  } else if (label.empty()) {
    loglik = 0;  // nothing to say, and nothing said
  }
  const bool feasible = loglik != kNegInf;
  for (int64_t t = 0; t < frames; ++t) {
    for (int64_t c = 0; c < c1; ++c) grad[t * grad_step * c1 + c] = T(0);
  }
  if (!feasible) return 0;
  if (frames == 0) return -loglik;

  const int64_t last = frames - 1;
  beta[at(last, s_len - 1)] = lp[static_cast<size_t>(last * c1 + ext[s_len - 1])];
  if (s_len > 1) beta[at(last, s_len - 2)] = lp[static_cast<size_t>(last * c1 + ext[s_len - 2])];
  for (int64_t t = last - 1; t >= 0; --t) {
    for (int64_t s = 0; s < s_len; ++s) {
      double b = beta[at(t + 1, s)];
      if (s + 1 < s_len) b = LogAdd(b, beta[at(t + 1, s + 1)]);
      if (s + 2 < s_len && ext[s] != blank && ext[s] != ext[s + 2]) b = LogAdd(b, beta[at(t + 1, s + 2)]);
      beta[at(t, s)] = b == kNegInf ? kNegInf : b + lp[static_cast<size_t>(t * c1 + ext[s])];
    }
  }
  // d loss / d x[t, c] = softmax[t, c] - sum over label positions s of class c of
  // exp(alpha + beta - lp - loglik): the posterior of class c at frame t.
  std::vector<double> posterior(static_cast<size_t>(c1));
  for (int64_t t = 0; t < frames; ++t) {
    std::fill(posterior.begin(), posterior.end(), 0.0);
    for (int64_t s = 0; s < s_len; ++s) {
      const double g = alpha[at(t, s)] + beta[at(t, s)];
      if (g == kNegInf) continue;
      posterior[static_cast<size_t>(ext[s])] += std::exp(g - lp[static_cast<size_t>(t * c1 + ext[s])] - loglik);
    }
    T* out = grad + t * grad_step * c1;
    for (int64_t c = 0; c < c1; ++c) {
      out[c] = static_cast<T>(std::exp(lp[static_cast<size_t>(t * c1 + c)]) - posterior[static_cast<size_t>(c)]);
    }
  }
  return -loglik;
}

// The same in linear space, each step's variables rescaled to sum to 1 (Graves 2006, 4.1):
// products and sums only, the log-likelihood the sum of the scales' logs. nullopt where a
// scale, the final mass or a frame's posterior sum comes out 0 or not finite: a label no
// alignment produces, or probabilities beyond a double's range, for which the log-space
// pass decides. Otherwise it gives the log-space pass's result to rounding.
template <class T>
std::optional<double> SequenceLossScaled(const T* x, int64_t x_step, int64_t frames, int64_t classes,
                                         const std::vector<int64_t>& label, int64_t blank, T* grad, int64_t grad_step) {
  const int64_t c1 = classes, s_len = 2 * static_cast<int64_t>(label.size()) + 1;
  if (frames == 0) return std::nullopt;
  // y: the softmax of each frame.
  std::vector<double> y(static_cast<size_t>(frames * c1));
  for (int64_t t = 0; t < frames; ++t) {
    const T* row = x + t * x_step * c1;
    double* yt = y.data() + t * c1;
    double max = kNegInf, sum = 0;
    for (int64_t c = 0; c < c1; ++c) max = std::max(max, static_cast<double>(row[c]));
    for (int64_t c = 0; c < c1; ++c) sum += yt[c] = std::exp(row[c] - max);
    for (int64_t c = 0; c < c1; ++c) yt[c] /= sum;
  }
  std::vector<int64_t> ext(static_cast<size_t>(s_len), blank);
  for (size_t i = 0; i < label.size(); ++i) ext[2 * i + 1] = label[i];
  // skip[s]: whether position s is reached from s - 2 (an id unlike the one before its blank).
  std::vector<char> skip(static_cast<size_t>(s_len), 0);
  for (int64_t s = 2; s < s_len; ++s) skip[s] = ext[s] != blank && ext[s] != ext[s - 2];
  const auto usable = [](double v) { return v > 0 && std::isfinite(v); };
  // Rescales row[0, s_len) to sum to 1, answering the log of its sum (nullopt where unusable).
  const auto rescale = [&](double* row) -> std::optional<double> {
    double sum = 0;
    for (int64_t s = 0; s < s_len; ++s) sum += row[s];
    if (!usable(sum)) return std::nullopt;
    const double inverse = 1 / sum;
    for (int64_t s = 0; s < s_len; ++s) row[s] *= inverse;
    return std::log(sum);
  };
  std::vector<double> alpha(static_cast<size_t>(frames * s_len), 0.0), beta(alpha.size(), 0.0);
  double loglik = 0;
  alpha[0] = y[static_cast<size_t>(blank)];
  if (s_len > 1) alpha[1] = y[static_cast<size_t>(ext[1])];
  for (int64_t t = 0; t < frames; ++t) {
    double* a = alpha.data() + t * s_len;
    if (t > 0) {
      const double* prev = a - s_len;
      const double* yt = y.data() + t * c1;
      for (int64_t s = 0; s < s_len; ++s) {
        double v = prev[s];
        if (s >= 1) v += prev[s - 1];
        if (skip[s]) v += prev[s - 2];
        a[s] = v * yt[ext[s]];
      }
    }
    const std::optional<double> scale = rescale(a);
    if (!scale) return std::nullopt;
    loglik += *scale;
  }
  const double* a_last = alpha.data() + (frames - 1) * s_len;
  const double end = a_last[s_len - 1] + (s_len > 1 ? a_last[s_len - 2] : 0.0);
  if (!usable(end)) return std::nullopt;
  loglik += std::log(end);
  double* b_last = beta.data() + (frames - 1) * s_len;
  const double* y_last = y.data() + (frames - 1) * c1;
  b_last[s_len - 1] = y_last[ext[s_len - 1]];
  if (s_len > 1) b_last[s_len - 2] = y_last[ext[s_len - 2]];
  if (!rescale(b_last)) return std::nullopt;
  for (int64_t t = frames - 2; t >= 0; --t) {
    double* b = beta.data() + t * s_len;
    const double* next = b + s_len;
    const double* yt = y.data() + t * c1;
    for (int64_t s = 0; s < s_len; ++s) {
      double v = next[s];
      if (s + 1 < s_len) v += next[s + 1];
      if (s + 2 < s_len && skip[s + 2]) v += next[s + 2];
      b[s] = v * yt[ext[s]];
    }
    if (!rescale(b)) return std::nullopt;
  }
  // A frame's posterior over label positions is alpha beta / y up to a factor of the frame
  // (the scales), removed by dividing by its sum; the gradient is y less the posterior of
  // each class.
  std::vector<double> posterior(static_cast<size_t>(c1));
  for (int64_t t = 0; t < frames; ++t) {
    const double *a = alpha.data() + t * s_len, *b = beta.data() + t * s_len, *yt = y.data() + t * c1;
    std::fill(posterior.begin(), posterior.end(), 0.0);
    double total = 0;
    for (int64_t s = 0; s < s_len; ++s) {
      const double ab = a[s] * b[s];
      if (ab == 0) continue;
      const double w = ab / yt[ext[s]];
      posterior[static_cast<size_t>(ext[s])] += w;
      total += w;
    }
    if (!usable(total)) return std::nullopt;
    const double inverse = 1 / total;
    T* out = grad + t * grad_step * c1;
    for (int64_t c = 0; c < c1; ++c) out[c] = static_cast<T>(yt[c] - posterior[static_cast<size_t>(c)] * inverse);
  }
  return -loglik;
}

// One sequence's loss and gradient: the scaled pass, or the log-space one where it gives up.
template <class T>
double SequenceLoss(const T* x, int64_t x_step, int64_t frames, int64_t classes, const std::vector<int64_t>& label,
                    int64_t blank, T* grad, int64_t grad_step) {
  if (const auto loss = SequenceLossScaled(x, x_step, frames, classes, label, blank, grad, grad_step)) return *loss;
  return SequenceLossInLogSpace(x, x_step, frames, classes, label, blank, grad, grad_step);
}

template <class T> void WarpCtc(KernelContext& ctx) {
  const CtcLayout l = LayoutOf(ctx);
  const int64_t blank = ctx.Attr<int64_t>("blank");
  const T* x = ctx.Input("Logits").data<T>();
  T* loss = ctx.AllocateOutput<T>("Loss", {l.batch, 1});
  T* grad = ctx.AllocateOutput<T>("WarpCTCGrad", {l.max_frames, l.batch, l.classes});
  std::fill(grad, grad + l.max_frames * l.batch * l.classes, T(0));
  const double work = static_cast<double>(l.max_frames) * static_cast<double>(l.batch * l.classes) * sizeof(T) * 8;
  ParallelFor(l.batch, work, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const size_t i = static_cast<size_t>(b);
      loss[b] = static_cast<T>(SequenceLoss<T>(x + l.frame_row[i] * l.classes, l.frame_step[i], l.frames[i], l.classes,
                                               l.labels[i], blank, grad + b * l.classes, l.batch));
    }
  });
}

// Logits@GRAD = WarpCTCGrad scaled by each sequence's Loss@GRAD (and 1/T with
// norm_by_times), in Logits' layout.
template <class T> void WarpCtcGrad(KernelContext& ctx) {
  const CtcLayout l = LayoutOf(ctx);
  Tensor warp = ctx.Input("WarpCTCGrad");
  if (warp.dims() != std::vector<int64_t>{l.max_frames, l.batch, l.classes}) {
    throw Error("WarpCTCGrad " + DimsString(warp.dims()) + " is not [Tmax, B, C + 1] of Logits");
  }
  const T* g = warp.data<T>();
  const T* loss_grad = ctx.Input("Loss@GRAD").data<T>();
  const bool norm = ctx.Attr<bool>("norm_by_times");
  Tensor logits = ctx.Input("Logits");
  T* out = ctx.AllocateOutput<T>("Logits@GRAD", logits.dims());
  std::fill(out, out + logits.numel(), T(0));
  for (int64_t b = 0; b < l.batch; ++b) {
    const size_t i = static_cast<size_t>(b);
    const T scale = loss_grad[b] / (norm && l.frames[i] > 0 ? static_cast<T>(l.frames[i]) : T(1));
    for (int64_t t = 0; t < l.frames[i]; ++t) {
      const T* from = g + (t * l.batch + b) * l.classes;
      T* to = out + (l.frame_row[i] + t * l.frame_step[i]) * l.classes;
      for (int64_t c = 0; c < l.classes; ++c) to[c] = from[c] * scale;
    }
  }
  ctx.Output("Logits@GRAD").set_lod(logits.lod());
}

}  // namespace

void RegisterWarpCtc(Registrar& r) {
  const OpSchema ctc =
      OpSchema("warpctc")
          .Doc(
              "Loss = the CTC loss of each sequence of Logits (unscaled, softmaxed here; C classes and the blank) "
              "against its Label, [B, 1]; WarpCTCGrad its gradient by the logits, [Tmax, B, C + 1]. LoD "
              "sequences, or padded with LogitsLength and LabelLength. As Paddle's.")
          .Input("Logits", "[sum T, C + 1] with a LoD, or [Tmax, B, C + 1] padded")
          .Input("Label", "int32 [sum L, 1] with a LoD, or [B, Lmax] padded")
          .Input("LogitsLength", "int64 [B], padded Logits' lengths", RILL_SLOT_OPTIONAL)
          .Input("LabelLength", "int64 [B], padded Label's lengths", RILL_SLOT_OPTIONAL)
          .Output("WarpCTCGrad", "[Tmax, B, C + 1], the loss's gradient by the logits")
          .Output("Loss", "[B, 1]")
          .Attr("blank", int64_t{0}, "the blank's class")
          .Attr("norm_by_times", false, "divide each sequence's gradient by its length")
          .KernelDtypeFrom("Logits")
          .Grad("warpctc_grad", "WarpCTCGrad,Logits,Label,LogitsLength,LabelLength,Loss@GRAD", "Logits");
  r.Op(ctc);
  r.Op(ctc.MakeGradSchema().KernelDtypeFrom("Logits"));
  RegisterCpu<float, double>(r, "warpctc", [](auto t) { return &WarpCtc<decltype(t)>; });
  RegisterCpu<float, double>(r, "warpctc_grad", [](auto t) { return &WarpCtcGrad<decltype(t)>; });
}

}  // namespace rill::math
