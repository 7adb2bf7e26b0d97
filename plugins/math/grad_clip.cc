// The ops Fluid's gradient clipping and label smoothing emit, with Fluid's contracts:
// squared_l2_norm (Out = sum(X^2), [1]; with a gradient, as GradientClipByGlobalNorm
// differentiates nothing through it but regularizers may), clip_by_norm (Out = X scaled
// down to an L2 norm of max_norm when above it), label_smooth (Out = (1 - epsilon) * X +
// epsilon * PriorDist, the prior uniform over X's last dim when absent; with a gradient),
// and the finiteness checks: isfinite (Out: [1], every element finite), isinf and isnan
// (any element infinite, any NaN), and their _v2 (Paddle 2: elementwise).
#include <cmath>

#include "kernels.h"
#include "ops.h"
#include "reduction.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// out[0, n) = factor * in[0, n), on the passes' team.
template <class T> void Scaled(const T* in, T* out, int64_t n, T factor) {
  ParallelFor(n, 2.0 * sizeof(T) * n, [&](int64_t, int64_t begin, int64_t end) {
    VecMap<T>(out + begin, end - begin) = factor * ConstVecMap<T>(in + begin, end - begin);
  });
}

template <class T> void SquaredL2Norm(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const double sum = SumOfSquares(x.data<T>(), x.numel());
  *ctx.AllocateOutput<T>("Out", {1}) = static_cast<T>(sum);
}

template <class T> void SquaredL2NormGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  if (g.numel() != 1) throw Error("Out@GRAD must hold one value, it has " + std::to_string(g.numel()));
  const T scale = T(2) * g.data<T>()[0];
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"X"}, x.dims(), [&](T* dx) { Scaled(px, dx, x.numel(), scale); });
}

// The factor that brings values of L2 norm `norm` down to at most `max_norm`.
template <class T> T ClipFactor(double norm, double max_norm) {
  return static_cast<T>(norm > max_norm ? max_norm / norm : 1.0);
}

// SelectedRows X (a sparse gradient), as Paddle's: its repeated rows merged (summed) first,
// so the norm is the dense gradient's; Out holds each row once, ascending, clipped.
template <class T> void ClipRowsByNorm(KernelContext& ctx, const Variable::SelectedRows& sr, double max_norm) {
  const int64_t width = sr.count > 0 ? sr.value.numel() / static_cast<int64_t>(sr.count) : 0;
  const MergedRows<T> merged = MergeRows(sr.rows, sr.count, sr.value.data<T>(), width);
  const int64_t n = static_cast<int64_t>(merged.values.size());
  const T scale = ClipFactor<T>(std::sqrt(SumOfSquares(merged.values.data(), n)), max_norm);
  std::vector<int64_t> out_dims = sr.value.dims();
  if (!out_dims.empty()) out_dims[0] = static_cast<int64_t>(merged.rows.size());
  Tensor out = ctx.OutputVar("Out").SetSelectedRows(merged.rows.data(), merged.rows.size(), sr.height);
  Scaled(merged.values.data(), out.Allocate<T>(out_dims), n, scale);
}

template <class T> void ClipByNorm(KernelContext& ctx) {
  const double max_norm = ctx.Attr<float>("max_norm");
  if (!(max_norm > 0)) throw Error("max_norm must be positive, got " + std::to_string(max_norm));
  if (Variable xv = ctx.InputVar("X"); xv.IsSelectedRows()) return ClipRowsByNorm<T>(ctx, xv.selected_rows(), max_norm);
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  const T scale = ClipFactor<T>(std::sqrt(SumOfSquares(px, x.numel())), max_norm);
  WriteOutput<T>(ctx, "Out", {"X"}, x.dims(), [&](T* out) { Scaled(px, out, x.numel(), scale); });
}

template <class T> void LabelSmooth(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  if (x.ndim() == 0) throw Error("X has no class dim");
  const int64_t k = x.dims().back();
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  std::vector<T> prior(static_cast<size_t>(k), k > 0 ? T(1) / static_cast<T>(k) : T(0));
  if (ctx.HasInput("PriorDist")) {
    Tensor p = ctx.Input("PriorDist");
    if (p.numel() != k)
      throw Error("PriorDist " + DimsString(p.dims()) + " must hold X's " + std::to_string(k) + " classes");
    prior.assign(p.data<T>(), p.data<T>() + k);
  }
  const T* px = x.data<T>();
  const int64_t rows = k > 0 ? x.numel() / k : 0;
  const ConstVecMap<T> prior_row(prior.data(), k);
  WriteOutput<T>(ctx, "Out", {"X", "PriorDist"}, x.dims(), [&](T* out) {
    // Rows of k classes, the prior along each.
    ParallelFor(rows, 2.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        VecMap<T>(out + r * k, k) = (T(1) - eps) * ConstVecMap<T>(px + r * k, k) + eps * prior_row;
      }
    });
  });
}

template <class T> void LabelSmoothGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const T keep = T(1) - static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* pg = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, g.dims(), [&](T* dx) { Scaled(pg, dx, g.numel(), keep); });
}

enum class Check { kFinite, kInf, kNan };

template <class T, Check kCheck> bool Holds(T v) {
  if constexpr (kCheck == Check::kFinite) return std::isfinite(v);
  else if constexpr (kCheck == Check::kInf) return std::isinf(v);
  else return std::isnan(v);
}

// v1: one bool for all of X (isfinite: all finite; isinf, isnan: any); v2: per element.
template <class T, Check kCheck, bool kV2> void Finiteness(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  if constexpr (kV2) {
    const int64_t n = x.numel();
    WriteOutputBytes(ctx, "Out", {"X"}, RILL_BOOL, x.dims(), [&](char* bytes) {
      ParallelFor(n, static_cast<double>(sizeof(T) + 1) * n, [&](int64_t, int64_t begin, int64_t end) {
        const T* in = px + begin;  // locals: a bool store may alias what the captures point to
        bool* out = reinterpret_cast<bool*>(bytes) + begin;
        for (int64_t i = 0; i < end - begin; ++i) out[i] = Holds<T, kCheck>(in[i]);
      });
    });
  } else {
    const int64_t n = x.numel();
    const int64_t holding = ParallelCount(px, n, [](T v) { return Holds<T, kCheck>(v); });
    *ctx.AllocateOutput<bool>("Out", {1}) = kCheck == Check::kFinite ? holding == n : holding > 0;
  }
}

template <Check kCheck> void AddFiniteness(Registrar& r, const char* name, const char* v1_doc, const char* v2_doc) {
  for (const bool v2 : {false, true}) {
    const std::string type = std::string(name) + (v2 ? "_v2" : "");
    r.Op(OpSchema(type)
             .Doc(v2 ? v2_doc : v1_doc)
             .Input("X", "the tensor checked")
             .Output("Out", v2 ? "bool, shaped like X" : "bool [1]")
             .KernelDtypeFrom("X"));
    if (v2) {
      RegisterCpu<float, double>(r, type.c_str(), [](auto t) { return &Finiteness<decltype(t), kCheck, true>; });
    } else {
      RegisterCpu<float, double>(r, type.c_str(), [](auto t) { return &Finiteness<decltype(t), kCheck, false>; });
    }
  }
}

}  // namespace

void RegisterGradClip(Registrar& r) {
  const OpSchema squared = OpSchema("squared_l2_norm")
                               .Doc("Out = the sum of X's squared elements, [1].")
                               .Input("X", "the tensor")
                               .Output("Out", "[1]")
                               .KernelDtypeFrom("X")
                               .Grad("squared_l2_norm_grad", "X,Out@GRAD", "X");
  r.Op(squared);
  r.Op(squared.MakeGradSchema());
  RegisterCpu<float, double>(r, "squared_l2_norm", [](auto t) { return &SquaredL2Norm<decltype(t)>; });
  RegisterCpu<float, double>(r, "squared_l2_norm_grad", [](auto t) { return &SquaredL2NormGrad<decltype(t)>; });
  r.Op(OpSchema("clip_by_norm")
           .Doc("Out = X * max_norm / norm(X) where X's L2 norm is above max_norm, else X.")
           .Input("X", "the tensor (a gradient); or SelectedRows, whose repeated rows are summed first")
           .Output("Out", "X, its norm at most max_norm; SelectedRows of X's rows, each once, ascending")
           .RequiredAttr("max_norm", RILL_ATTR_FLOAT, "the largest L2 norm kept (positive)")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double>(r, "clip_by_norm", [](auto t) { return &ClipByNorm<decltype(t)>; });
  const OpSchema smooth =
      OpSchema("label_smooth")
          .Doc("Out = (1 - epsilon) * X + epsilon * PriorDist, the prior uniform over X's last dim when absent.")
          .Input("X", "one-hot (or soft) labels [..., K]")
          .Input("PriorDist", "the prior over the K classes", RILL_SLOT_OPTIONAL)
          .Output("Out", "the smoothed labels, shaped like X")
          .Attr("epsilon", 0.0, "the weight of the prior")
          .KernelDtypeFrom("X")
          .Grad("label_smooth_grad", "Out@GRAD", "X");
  r.Op(smooth);
  r.Op(smooth.MakeGradSchema());
  RegisterCpu<float, double>(r, "label_smooth", [](auto t) { return &LabelSmooth<decltype(t)>; });
  RegisterCpu<float, double>(r, "label_smooth_grad", [](auto t) { return &LabelSmoothGrad<decltype(t)>; });
  AddFiniteness<Check::kFinite>(r, "isfinite", "Out = whether every element of X is finite.",
                                "Out = whether each element of X is finite.");
  AddFiniteness<Check::kInf>(r, "isinf", "Out = whether any element of X is infinite.",
                             "Out = whether each element of X is infinite.");
  AddFiniteness<Check::kNan>(r, "isnan", "Out = whether any element of X is NaN.",
                             "Out = whether each element of X is NaN.");
}

}  // namespace rill::math
