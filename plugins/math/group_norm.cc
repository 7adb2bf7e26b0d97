// group_norm and instance_norm, with Fluid's contracts, and their gradients. Each image's
// channels fall into `groups` groups (instance_norm: one channel each); a group's elements
// (its channels at every position) are normalized by their own mean and biased variance,
// then scaled and shifted per channel (Scale and Bias, 1 and 0 when absent). group_norm
// outputs each group's Mean and Variance ([N, groups]); instance_norm its SavedMean and
// SavedVariance, the latter as 1 / sqrt(variance + epsilon) ([N * C]), as Fluid's do.
#include <algorithm>
#include <cmath>
#include <vector>

#include "channel_layout.h"
#include "kernels.h"
#include "norm_loops.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction.h"

namespace rill::math {
namespace {

struct GroupPlan {
  ChannelLayout l;
  int64_t groups = 1, cg = 1;  // cg: channels a group
  int64_t count() const { return l.n * groups; }
  int64_t size() const { return cg * l.s; }  // elements a group
  // Calls fn(index in X, channel) for each element of group g of image i.
  template <class F> void ForEach(int64_t i, int64_t g, F fn) const {
    for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
      for (int64_t k = 0; k < l.s; ++k) fn(l.At(i, ch, k), ch);
    }
  }
};

template <bool kInstance> GroupPlan PlanOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  GroupPlan p;
  if constexpr (kInstance) {
    if (d.size() < 2) throw Error("X " + DimsString(d) + " has no channel dim");
    p.l.n = d[0];
    p.l.c = d[1];
    p.l.s = Product(d, 2, d.size());
    p.groups = p.l.c;
  } else {
    p.l = LayoutOf(ctx, d);
    p.groups = ctx.Attr<int64_t>("groups");
    if (p.groups < 1 || p.l.c % p.groups != 0) {
      throw Error("groups (" + std::to_string(p.groups) + ") must divide the " + std::to_string(p.l.c) + " channels");
    }
  }
  p.cg = p.groups > 0 ? p.l.c / p.groups : 1;
  return p;
}

// Group (i, g)'s mean and biased variance.
template <class T> void Moments(const GroupPlan& p, const T* px, int64_t i, int64_t g, T* mean, T* var) {
  const T m = static_cast<T>(std::max<int64_t>(p.size(), 1));
  if (!p.l.nhwc) {  // the group's channels' planes: one contiguous run
    const ConstVecMap<T> run(px + p.l.At(i, g * p.cg, 0), p.size());
    *mean = run.sum() / m;
    *var = (run - *mean).square().sum() / m;
    return;
  }
  T sum = 0, squares = 0;
  p.ForEach(i, g, [&](int64_t e, int64_t) { sum += px[e]; });
  const T mu = sum / m;
  p.ForEach(i, g, [&](int64_t e, int64_t) { squares += (px[e] - mu) * (px[e] - mu); });
  *mean = mu;
  *var = squares / m;
}

// Each group's mean and biased variance, group (i, g) at i * groups + g.
template <class T> void GroupStats(const GroupPlan& p, const T* px, std::vector<T>& mean, std::vector<T>& var) {
  mean.assign(static_cast<size_t>(p.count()), T(0));
  var.assign(mean.size(), T(0));
  ParallelFor(p.count(), static_cast<double>(sizeof(T)) * p.count() * p.size(),
              [&](int64_t, int64_t first, int64_t last) {
                for (int64_t at = first; at < last; ++at)
                  Moments(p, px, at / p.groups, at % p.groups, &mean[at], &var[at]);
              });
}

// Scale or Bias, per channel, or `fill` for each when the op leaves it out.
template <class T> std::vector<T> PerChannel(KernelContext& ctx, const char* slot, int64_t c, T fill) {
  if (!ctx.HasInput(slot)) return std::vector<T>(static_cast<size_t>(c), fill);
  const T* p = ChannelInput<T>(ctx, slot, c);
  return std::vector<T>(p, p + c);
}

template <class T, bool kInstance> void GroupNorm(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const GroupPlan p = PlanOf<kInstance>(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const std::vector<T> scale = PerChannel<T>(ctx, "Scale", p.l.c, T(1));
  const std::vector<T> bias = PerChannel<T>(ctx, "Bias", p.l.c, T(0));
  const T* px = x.data<T>();
  std::vector<T> mean, var;
  GroupStats(p, px, mean, var);
  WriteOutput<T>(ctx, "Y", {"X"}, x.dims(), [&](T* y) {
    ParallelFor(p.count(), 2.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t at = first; at < last; ++at) {
        const int64_t i = at / p.groups, g = at % p.groups;
        const T mu = mean[static_cast<size_t>(at)], inv = T(1) / std::sqrt(var[static_cast<size_t>(at)] + eps);
        if (p.l.nhwc) {
          p.ForEach(i, g, [&](int64_t e, int64_t ch) { y[e] = (px[e] - mu) * inv * scale[ch] + bias[ch]; });
          continue;
        }
        for (int64_t ch = g * p.cg; ch < (g + 1) * p.cg; ++ch) {  // a channel's plane at a time
          const int64_t e = p.l.At(i, ch, 0);
          VecMap<T>(y + e, p.l.s) = (ConstVecMap<T>(px + e, p.l.s) - mu) * inv * scale[ch] + bias[ch];
        }
      }
    });
  });
  if constexpr (kInstance) {
    for (T& v : var) v = T(1) / std::sqrt(v + eps);
  }
  const std::vector<int64_t> stats =
      kInstance ? std::vector<int64_t>{p.count()} : std::vector<int64_t>{p.l.n, p.groups};
  const char* mean_slot = kInstance ? "SavedMean" : "Mean";
  const char* var_slot = kInstance ? "SavedVariance" : "Variance";
  if (ctx.HasOutput(mean_slot)) std::copy(mean.begin(), mean.end(), ctx.AllocateOutput<T>(mean_slot, stats));
  if (ctx.HasOutput(var_slot)) std::copy(var.begin(), var.end(), ctx.AllocateOutput<T>(var_slot, stats));
}

// With xh = (X - mean) * inv and dyh = Y@GRAD * Scale, over a group of m elements:
// X@GRAD = inv * (dyh - mean(dyh) - xh * mean(dyh * xh)); per channel, Scale@GRAD =
// sum(Y@GRAD * xh) and Bias@GRAD = sum(Y@GRAD). The statistics are the forward op's, or,
// where its program left them out, computed again from X.
template <class T, bool kInstance> void GroupNormGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor dy = ctx.Input("Y@GRAD");
  if (dy.dims() != x.dims())
    throw Error("Y@GRAD " + DimsString(dy.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const GroupPlan p = PlanOf<kInstance>(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const std::vector<T> scale = PerChannel<T>(ctx, "Scale", p.l.c, T(1));
  const char* mean_slot = kInstance ? "SavedMean" : "Mean";
  const char* var_slot = kInstance ? "SavedVariance" : "Variance";
  const T* px = x.data<T>();
  std::vector<T> mean, inv;
  if (ctx.HasInput(mean_slot) && ctx.HasInput(var_slot)) {
    Tensor mean_t = ctx.Input(mean_slot), var_t = ctx.Input(var_slot);
    if (mean_t.numel() != p.count() || var_t.numel() != p.count()) {
      throw Error(std::string(mean_slot) + " and " + var_slot + " must hold " + std::to_string(p.count()) +
                  " values, one per group of each image");
    }
    mean.assign(mean_t.data<T>(), mean_t.data<T>() + p.count());
    inv.assign(var_t.data<T>(), var_t.data<T>() + p.count());
    if (!kInstance) {
      for (T& v : inv) v = T(1) / std::sqrt(v + eps);
    }
  } else {
    GroupStats(p, px, mean, inv);
    for (T& v : inv) v = T(1) / std::sqrt(v + eps);
  }
  const T* pg = dy.data<T>();
  T* dx = ctx.HasOutput("X@GRAD") ? ctx.AllocateOutput<T>("X@GRAD", x.dims()) : nullptr;
  // Scale@GRAD and Bias@GRAD per image and channel (each group's own), then summed over the
  // images (reduction.h): the same bits for any thread budget.
  std::vector<T> dscale_part(static_cast<size_t>(p.l.n * p.l.c), T(0)), dbias_part(dscale_part.size(), T(0));
  const T m = static_cast<T>(std::max<int64_t>(p.size(), 1));
  static const norm::GradLoops<T> loops = norm::GradLoopsFor<T>();
  ParallelFor(p.count(), 3.0 * sizeof(T) * static_cast<double>(x.numel()), [&](int64_t, int64_t first, int64_t last) {
    for (int64_t at = first; at < last; ++at) {
      const int64_t i = at / p.groups, g = at % p.groups;
      const T mu = mean[static_cast<size_t>(at)], k = inv[static_cast<size_t>(at)];
      T* ds = dscale_part.data() + i * p.l.c;
      T* db = dbias_part.data() + i * p.l.c;
      T sum = 0, weighted = 0;
      if (!p.l.nhwc) {  // a channel's plane at a time, contiguous
        for (int64_t ch = g * p.cg; ch < (g + 1) * p.cg; ++ch) {
          const int64_t e = p.l.At(i, ch, 0);
          T dot, total;
          loops.sums(px + e, pg + e, p.l.s, mu, k, &dot, &total);
          sum += total * scale[static_cast<size_t>(ch)];
          weighted += dot * scale[static_cast<size_t>(ch)];
          ds[ch] = dot;
          db[ch] = total;
        }
        if (dx == nullptr) continue;
        // dx = k (g scale - sum / m - (x - mu) k weighted / m)
        for (int64_t ch = g * p.cg; ch < (g + 1) * p.cg; ++ch) {
          const int64_t e = p.l.At(i, ch, 0);
          loops.dx(px + e, pg + e, p.l.s, mu, k * scale[static_cast<size_t>(ch)], -k * k * (weighted / m),
                   -k * (sum / m), dx + e);
        }
        continue;
      }
      p.ForEach(i, g, [&](int64_t e, int64_t ch) {
        const T xh = (px[e] - mu) * k, dyh = pg[e] * scale[static_cast<size_t>(ch)];
        sum += dyh;
        weighted += dyh * xh;
        ds[ch] += pg[e] * xh;
        db[ch] += pg[e];
      });
      if (dx == nullptr) continue;
      p.ForEach(i, g, [&](int64_t e, int64_t ch) {
        const T xh = (px[e] - mu) * k;
        dx[e] = k * (pg[e] * scale[static_cast<size_t>(ch)] - sum / m - xh * (weighted / m));
      });
    }
  });
  const ReducePlan over_images = PlanReduction({p.l.n, p.l.c}, {true, false}, false);
  const auto sum_images = [&](const std::vector<T>& part, const char* slot) {
    ReduceInto<Reduction::kSum>(part.data(), over_images, ctx.AllocateOutput<T>(slot, {p.l.c}));
  };
  if (ctx.HasOutput("Scale@GRAD")) sum_images(dscale_part, "Scale@GRAD");
  if (ctx.HasOutput("Bias@GRAD")) sum_images(dbias_part, "Bias@GRAD");
}

}  // namespace

void RegisterGroupNorm(Registrar& r) {
  const OpSchema group_norm =
      OpSchema("group_norm")
          .Doc(
              "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, mean and variance over each group of channels "
              "of each image.")
          .Input("X", "[N, C, ...] or [N, ..., C]")
          .Input("Scale", "[C]", RILL_SLOT_OPTIONAL)
          .Input("Bias", "[C]", RILL_SLOT_OPTIONAL)
          .Output("Y", "shaped like X")
          .Output("Mean", "[N, groups]", RILL_SLOT_OPTIONAL)
          .Output("Variance", "[N, groups], the biased variance", RILL_SLOT_OPTIONAL)
          .Attr("epsilon", 1e-5, "added to the variance")
          .Attr("groups", int64_t{1}, "groups of channels (dividing C)")
          .Attr("data_layout", "NCHW", "NCHW (channels at dim 1) or NHWC (the last)")
          .KernelDtypeFrom("X")
          .Grad("group_norm_grad", "X,Scale,Bias,Mean,Variance,Y@GRAD", "X,Scale,Bias");
  const OpSchema instance_norm =
      OpSchema("instance_norm")
          .Doc(
              "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, mean and variance over each channel of each "
              "image.")
          .Input("X", "[N, C, ...]")
          .Input("Scale", "[C]", RILL_SLOT_OPTIONAL)
          .Input("Bias", "[C]", RILL_SLOT_OPTIONAL)
          .Output("Y", "shaped like X")
          .Output("SavedMean", "[N * C]", RILL_SLOT_OPTIONAL)
          .Output("SavedVariance", "[N * C], 1 / sqrt(variance + epsilon)", RILL_SLOT_OPTIONAL)
          .Attr("epsilon", 1e-5, "added to the variance")
          .KernelDtypeFrom("X")
          .Grad("instance_norm_grad", "X,Scale,Bias,SavedMean,SavedVariance,Y@GRAD", "X,Scale,Bias");
  r.Op(group_norm);
  r.Op(group_norm.MakeGradSchema());
  r.Op(instance_norm);
  r.Op(instance_norm.MakeGradSchema());
  RegisterCpu<float, double>(r, "group_norm", [](auto t) { return &GroupNorm<decltype(t), false>; });
  RegisterCpu<float, double>(r, "group_norm_grad", [](auto t) { return &GroupNormGrad<decltype(t), false>; });
  RegisterCpu<float, double>(r, "instance_norm", [](auto t) { return &GroupNorm<decltype(t), true>; });
  RegisterCpu<float, double>(r, "instance_norm_grad", [](auto t) { return &GroupNormGrad<decltype(t), true>; });
}

}  // namespace rill::math
