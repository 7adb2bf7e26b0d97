// sigmoid_cross_entropy_with_logits, with Fluid's contract: per element, the cross entropy
// of the probability sigmoid(X) against Label (any value in [0, 1]),
//   Out = max(X, 0) - X * Label + ln(1 + exp(-|X|)),
// which neither overflows nor takes ln(0). An element whose Label is ignore_index gives 0
// and no gradient; `normalize` divides by the count of the others. Gradient:
// (sigmoid(X) - Label) * Out@GRAD, divided likewise.
#include <algorithm>

#include "kernels.h"
#include "loss_loops.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// The divisor of every element: 1, or with `normalize` the count of labels that are not
// ignore_index (at least Fluid's 1e-5, so an all-ignored batch divides 0 by it).
template <class T> T Divisor(KernelContext& ctx, const T* label, int64_t n, T ignore) {
  if (!ctx.Attr<bool>("normalize")) return T(1);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += label[i] != ignore;
  return std::max(static_cast<T>(kept), T(1e-5));
}

template <class T> void SigmoidCrossEntropy(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  if (label.dims() != x.dims()) {
    throw Error("Label " + DimsString(label.dims()) + " is not shaped like X " + DimsString(x.dims()));
  }
  const T ignore = static_cast<T>(ctx.Attr<int64_t>("ignore_index"));
  const T* px = x.data<T>();
  const T* pl = label.data<T>();
  const T div = Divisor(ctx, pl, x.numel(), ignore);
  const auto loops = loss::SigmoidCrossEntropyLoopsFor<T>();
  WriteOutput<T>(ctx, "Out", {"X", "Label"}, x.dims(), [&](T* out) {
    ParallelFor(x.numel(), 3.0 * sizeof(T) * x.numel(),
                [&](int64_t, int64_t begin, int64_t end) { loops.forward(px, pl, out, begin, end, ignore, div); });
  });
}

template <class T> void SigmoidCrossEntropyGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  Tensor g = ctx.Input("Out@GRAD");
  if (label.dims() != x.dims() || g.dims() != x.dims()) {
    throw Error("Label " + DimsString(label.dims()) + " and Out@GRAD " + DimsString(g.dims()) +
                " must be shaped like X " + DimsString(x.dims()));
  }
  const T ignore = static_cast<T>(ctx.Attr<int64_t>("ignore_index"));
  const T* px = x.data<T>();
  const T* pl = label.data<T>();
  const T* pg = g.data<T>();
  const T div = Divisor(ctx, pl, x.numel(), ignore);
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  const auto loops = loss::SigmoidCrossEntropyLoopsFor<T>();
  ParallelFor(x.numel(), 4.0 * sizeof(T) * x.numel(),
              [&](int64_t, int64_t begin, int64_t end) { loops.backward(px, pl, pg, dx, begin, end, ignore, div); });
}

}  // namespace

void RegisterSigmoidCrossEntropy(Registrar& r) {
  const OpSchema op =
      OpSchema("sigmoid_cross_entropy_with_logits")
          .Doc(
              "Out = max(X, 0) - X * Label + ln(1 + exp(-|X|)) elementwise: the cross entropy of sigmoid(X) "
              "against Label; 0 where Label is ignore_index; divided by the count of the others with normalize.")
          .Input("X", "the logits")
          .Input("Label", "the probabilities, shaped like X")
          .Output("Out", "the losses, shaped like X")
          .Attr("normalize", false, "divide by the count of labels that are not ignore_index")
          .Attr("ignore_index", int64_t{-100}, "a label value that gives no loss")
          .KernelDtypeFrom("X")
          .Grad("sigmoid_cross_entropy_with_logits_grad", "X,Label,Out@GRAD", "X");
  r.Op(op);
  r.Op(op.MakeGradSchema());
  RegisterCpu<float, double>(r, "sigmoid_cross_entropy_with_logits",
                             [](auto t) { return &SigmoidCrossEntropy<decltype(t)>; });
  RegisterCpu<float, double>(r, "sigmoid_cross_entropy_with_logits_grad",
                             [](auto t) { return &SigmoidCrossEntropyGrad<decltype(t)>; });
}

}  // namespace rill::math
