// softmax and log_softmax (along `axis`, numerically stable), cross_entropy (hard int64 labels or soft
// labels; Y[i] = -log X[i, label_i], or -sum_j label_ij * log X_ij), the two fused as
// softmax_with_cross_entropy, and their gradients. softmax's Out and cross_entropy's Y keep X's
// LoD, as Paddle's do.
#include <cmath>
#include <limits>

#include "activation_loops.h"
#include "broadcast.h"
#include "gather_rows.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "softmax_loops.h"

namespace rill::math {
namespace {

using softmax::Vectors;

Vectors VectorsAlong(const std::vector<int64_t>& d, size_t axis) {
  return Vectors{Product(d, 0, axis), d[axis], Product(d, axis + 1, d.size())};
}

// The loops of this CPU's instruction set over the blocks of `v`, on the passes' team.
template <class T, class F> void ForBlocks(const Vectors& v, F&& loop) {
  ParallelFor(v.pre, 2.0 * sizeof(T) * v.pre * v.n * v.post,
              [&](int64_t, int64_t first, int64_t last) { loop(first, last); });
}

// softmax (kLog false): Out = exp(X - max) / sum(exp(X - max)) along axis; log_softmax:
// Out = X - max - ln(sum(exp(X - max))), which neither overflows nor takes ln(0) for a
// probability that underflows.
template <class T, bool kLog> void SoftmaxOrLog(KernelContext& ctx) {
  static const softmax::Loops<T> loops = softmax::LoopsFor<T>();
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const Vectors v = VectorsAlong(d, NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size()));
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X"}, d, [&](T* out) {
    ForBlocks<T>(v, [&](int64_t first, int64_t last) { loops.forward(px, out, nullptr, v, first, last, kLog); });
  });
  ShareLoD(ctx, "X", "Out");
}

template <class T> void CrossEntropy(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  const CrossEntropyShape shape = CheckCrossEntropy(x.dims(), label.dims(), soft);
  const int64_t rows = shape.rows, classes = shape.classes;
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Y", shape.out_dims);
  ShareLoD(ctx, "X", "Y");
  // Keeps log() finite for a probability that underflowed to 0 (Fluid's kApproInf guard).
  const auto safe_log = [](T p) { return std::log(std::max(p, std::numeric_limits<T>::min())); };
  if (soft) {
    const T* pl = label.data<T>();
    for (int64_t i = 0; i < rows; ++i) {
      T sum = 0;
      for (int64_t j = 0; j < classes; ++j) sum -= pl[i * classes + j] * safe_log(px[i * classes + j]);
      po[i] = sum;
    }
    return;
  }
  // Each row's probability at its label (1, whose log is 0, where the label is ignored),
  // kept from 0 as above, then their logs in one pass of this CPU's widest log
  // (activation_loops.h), negated.
  const int64_t ignore = ctx.Attr<int64_t>("ignore_index");
  const int64_t* pl = label.data<int64_t>();
  for (int64_t i = 0; i < rows; ++i) {
    if (pl[i] != ignore && (pl[i] < 0 || pl[i] >= classes)) {
      throw Error("Label[" + std::to_string(i) + "] = " + std::to_string(pl[i]) + " is not a class in [0, " +
                  std::to_string(classes) + ")");
    }
  }
  // Each row's probability is a scattered read of X (one a row, rows apart): asked for
  // kPrefetchDistance rows ahead (gather_rows.h), so that many misses are in flight.
  const auto at_label = [&](int64_t i) { return pl[i] == ignore ? nullptr : px + i * classes + pl[i]; };
  for (int64_t i = 0; i < rows; ++i) {
    if (i + kPrefetchDistance < rows) {
      if (const T* ahead = at_label(i + kPrefetchDistance)) __builtin_prefetch(ahead);
    }
    const T* p = at_label(i);
    po[i] = p == nullptr ? T(1) : std::max(*p, std::numeric_limits<T>::min());
  }
  static const activation::Loops<activation::Log, T> logs = activation::LoopsFor<activation::Log, T>();
  logs.forward(activation::Log(ctx), po, po, rows);
  VecMap<T> v(po, rows);
  v = T(0) - v;  // 0 - 0: +0 for an ignored row
}

// X@GRAD = Out@GRAD - exp(Out) * sum(Out@GRAD) (log_softmax), or Out * (Out@GRAD -
// sum(Out@GRAD * Out)) (softmax), along axis.
template <class T, bool kLog> void SoftmaxOrLogGrad(KernelContext& ctx) {
  static const softmax::Loops<T> loops = softmax::LoopsFor<T>();
  Tensor out = ctx.Input("Out");
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = out.dims();
  if (g.dims() != d) throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(d));
  const Vectors v = VectorsAlong(d, NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size()));
  const T* po = out.data<T>();
  const T* pg = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"Out", "Out@GRAD"}, d, [&](T* dx) {
    ForBlocks<T>(v, [&](int64_t first, int64_t last) { loops.backward(po, pg, dx, v, first, last, kLog); });
  });
}

// X@GRAD = -Y@GRAD / X at each row's label (hard), or -Y@GRAD * Label / X (soft).
template <class T> void CrossEntropyGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  Tensor g = ctx.Input("Y@GRAD");
  const int64_t classes = x.dims().back(), rows = x.numel() / classes;
  const T* px = x.data<T>();
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  const auto safe = [](T p) { return std::max(p, std::numeric_limits<T>::min()); };
  if (ctx.Attr<bool>("soft_label")) {
    const T* pl = label.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) dx[i] = -pg[i / classes] * pl[i] / safe(px[i]);
  } else {
    const int64_t ignore = ctx.Attr<int64_t>("ignore_index");
    const int64_t* pl = label.data<int64_t>();
    for (int64_t i = 0; i < rows; ++i) {
      if (pl[i] == ignore || pl[i] < 0 || pl[i] >= classes) continue;
      dx[i * classes + pl[i]] = -pg[i] / safe(px[i * classes + pl[i]]);
    }
  }
}

// softmax_with_cross_entropy over `axis` of Logits, seen as [pre, n, post]: Softmax, and
// Loss = -log Softmax[label] (hard labels: int64, with that axis of 1; a row whose label is
// ignore_index has loss 0) or -sum label * log Softmax (soft labels, Logits' shape). With
// use_softmax false, Logits are taken as the probabilities themselves.
struct XentPlan {
  std::vector<int64_t> dims, loss_dims;
  int64_t pre = 1, n = 1, post = 1;
};
XentPlan PlanXent(KernelContext& ctx, const std::vector<int64_t>& logits, const std::vector<int64_t>& label,
                  bool soft) {
  XentPlan p;
  p.dims = logits;
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), logits.size());
  p.pre = Product(logits, 0, axis);
  p.n = logits[axis];
  p.post = Product(logits, axis + 1, logits.size());
  p.loss_dims = logits;
  p.loss_dims[axis] = 1;
  if (label != (soft ? logits : p.loss_dims)) {
    throw Error("Label " + DimsString(label) + " must be " + DimsString(soft ? logits : p.loss_dims) + " for Logits " +
                DimsString(logits) + (soft ? " (soft labels: Logits' shape)" : " (hard labels: 1 along axis)"));
  }
  return p;
}

template <class T> void SoftmaxWithCrossEntropy(KernelContext& ctx) {
  static const softmax::Loops<T> loops = softmax::LoopsFor<T>();
  Tensor logits = ctx.Input("Logits");
  Tensor label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  const bool use_softmax = ctx.Attr<bool>("use_softmax");
  const int64_t ignore = ctx.Attr<int64_t>("ignore_index");
  const XentPlan p = PlanXent(ctx, logits.dims(), label.dims(), soft);
  const Vectors v{p.pre, p.n, p.post};
  const T* px = logits.data<T>();
  // -log softmax(x_j) of row r is shift[r] - x_j: no log of a probability that underflowed.
  std::vector<T> shift(static_cast<size_t>(p.pre * p.post)), loss(shift.size(), T(0));
  WriteOutput<T>(ctx, "Softmax", {"Logits", "Label"}, p.dims, [&](T* prob) {
    if (use_softmax) {
      ForBlocks<T>(v,
                   [&](int64_t first, int64_t last) { loops.forward(px, prob, shift.data(), v, first, last, false); });
    } else {
      std::copy(px, px + logits.numel(), prob);
    }
    for (int64_t i = 0; i < p.pre; ++i) {
      for (int64_t k = 0; k < p.post; ++k) {
        const int64_t base = i * p.n * p.post + k, row = i * p.post + k;
        const auto at = [&](int64_t j) { return base + j * p.post; };
        const auto neg_log = [&](int64_t j) { return use_softmax ? shift[row] - px[at(j)] : -std::log(prob[at(j)]); };
        T& l = loss[row];
        if (soft) {
          const T* pl = label.data<T>();
          for (int64_t j = 0; j < p.n; ++j) l += pl[at(j)] * neg_log(j);
        } else {
          const int64_t c = label.data<int64_t>()[row];
          if (c == ignore) continue;
          if (c < 0 || c >= p.n) {
            throw Error("Label " + std::to_string(c) + " at row " + std::to_string(row) + " is not a class in [0, " +
                        std::to_string(p.n) + ") nor ignore_index " + std::to_string(ignore));
          }
          l = neg_log(c);
        }
      }
    }
  });
  std::copy(loss.begin(), loss.end(), ctx.AllocateOutput<T>("Loss", p.loss_dims));
}

// Logits@GRAD = (Softmax * sum(label) - label) * Loss@GRAD (soft), or (Softmax - onehot) *
// Loss@GRAD (hard; 0 for an ignored row). Softmax-free (use_softmax false): -label / P.
template <class T> void SoftmaxWithCrossEntropyGrad(KernelContext& ctx) {
  Tensor prob = ctx.Input("Softmax");
  Tensor label = ctx.Input("Label");
  Tensor g = ctx.Input("Loss@GRAD");
  const bool soft = ctx.Attr<bool>("soft_label");
  const bool use_softmax = ctx.Attr<bool>("use_softmax");
  const int64_t ignore = ctx.Attr<int64_t>("ignore_index");
  const XentPlan p = PlanXent(ctx, prob.dims(), label.dims(), soft);
  const T* pp = prob.data<T>();
  const T* pg = g.data<T>();
  std::vector<T> dx(static_cast<size_t>(prob.numel()), T(0));
  for (int64_t i = 0; i < p.pre; ++i) {
    for (int64_t k = 0; k < p.post; ++k) {
      const int64_t base = i * p.n * p.post + k, row = i * p.post + k;
      const auto at = [&](int64_t j) { return base + j * p.post; };
      const T gr = pg[row];
      if (soft) {
        const T* pl = label.data<T>();
        T sum = 0;
        for (int64_t j = 0; j < p.n; ++j) sum += pl[at(j)];
        for (int64_t j = 0; j < p.n; ++j) {
          dx[at(j)] = use_softmax ? (pp[at(j)] * sum - pl[at(j)]) * gr : -pl[at(j)] / pp[at(j)] * gr;
        }
      } else {
        const int64_t c = label.data<int64_t>()[row];
        if (c == ignore) continue;
        if (use_softmax) {
          for (int64_t j = 0; j < p.n; ++j) dx[at(j)] = (pp[at(j)] - (j == c ? T(1) : T(0))) * gr;
        } else {
          dx[at(c)] = -gr / pp[at(c)];
        }
      }
    }
  }
  std::copy(dx.begin(), dx.end(), ctx.AllocateOutput<T>("Logits@GRAD", p.dims));
}

}  // namespace

void RegisterSoftmax(Registrar& r) {
  const OpSchema swce =
      OpSchema("softmax_with_cross_entropy")
          .Doc(
              "Softmax = softmax(Logits) along axis; Loss = -log Softmax[Label] (hard labels, int64 with that axis of "
              "1; "
              "0 where Label is ignore_index) or -sum(Label * log Softmax) (soft labels, Logits' shape).")
          .Input("Logits", "unnormalized scores (or probabilities when use_softmax is false)")
          .Input("Label", "int64 class indices, or a distribution per row (soft_label)")
          .Output("Softmax", "the probabilities, shaped like Logits")
          .Output("Loss", "the loss, Logits' shape with 1 along axis")
          .Attr("soft_label", false, "Label is a distribution")
          .Attr("ignore_index", int64_t{-100}, "a hard label whose row has loss 0 and no gradient")
          .Attr("numeric_stable_mode", true, "informational: always stable")
          .Attr("use_softmax", true, "apply softmax (false: Logits are probabilities already)")
          .Attr("axis", int64_t{-1}, "the class axis")
          .KernelDtypeFrom("Logits")
          .Grad("softmax_with_cross_entropy_grad", "Softmax,Label,Loss@GRAD", "Logits");
  r.Op(swce);
  r.Op(swce.MakeGradSchema());
  RegisterCpu<float, double>(r, "softmax_with_cross_entropy",
                             [](auto t) { return &SoftmaxWithCrossEntropy<decltype(t)>; });
  RegisterCpu<float, double>(r, "softmax_with_cross_entropy_grad",
                             [](auto t) { return &SoftmaxWithCrossEntropyGrad<decltype(t)>; });

  // softmax and log_softmax: one schema but for what Out holds; gradients from Out.
  const auto normalizing = [&r](const char* type, const char* doc, const char* out, auto forward, auto backward) {
    const OpSchema schema = OpSchema(type)
                                .Doc(doc)
                                .Input("X", "logits")
                                .Output("Out", out)
                                .Attr("axis", int64_t{-1}, "the dimension normalized")
                                .KernelDtypeFrom("X")
                                .Grad(std::string(type) + "_grad", "Out,Out@GRAD", "X");
    r.Op(schema);
    r.Op(schema.MakeGradSchema());
    RegisterCpu<float, double>(r, type, forward);
    RegisterCpu<float, double>(r, (std::string(type) + "_grad").c_str(), backward);
  };
  normalizing(
      "softmax", "Out = exp(X) / sum(exp(X)) along `axis` (computed as exp(X - max)).", "probabilities, shaped like X",
      [](auto t) { return &SoftmaxOrLog<decltype(t), false>; },
      [](auto t) { return &SoftmaxOrLogGrad<decltype(t), false>; });
  normalizing(
      "log_softmax", "Out = ln(softmax(X)) along `axis` (computed as X - max - ln(sum(exp(X - max)))).",
      "log-probabilities, shaped like X", [](auto t) { return &SoftmaxOrLog<decltype(t), true>; },
      [](auto t) { return &SoftmaxOrLogGrad<decltype(t), true>; });
  const OpSchema xent = OpSchema("cross_entropy")
                            .Doc(
                                "Y = -log X[label] per row (hard labels: int64 class indices, one per row) or "
                                "-sum(Label * log X) per row (soft_label). X holds probabilities [N, D]; Y is [N, 1].")
                            .Input("X", "probabilities [N, D]")
                            .Input("Label", "int64 [N, 1] class indices, or [N, D] soft labels")
                            .Output("Y", "loss [N, 1]")
                            .Attr("soft_label", false, "Label holds a distribution per row")
                            .Attr("ignore_index", int64_t{-100}, "hard label whose rows get loss 0")
                            .KernelDtypeFrom("X")
                            .Grad("cross_entropy_grad", "X,Label,Y@GRAD", "X");
  r.Op(xent);
  r.Op(xent.MakeGradSchema());
  RegisterCpu<float, double>(r, "cross_entropy", [](auto t) { return &CrossEntropy<decltype(t)>; });
  RegisterCpu<float, double>(r, "cross_entropy_grad", [](auto t) { return &CrossEntropyGrad<decltype(t)>; });
}

}  // namespace rill::math
