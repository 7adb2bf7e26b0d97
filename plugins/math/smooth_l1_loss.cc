// smooth_l1_loss, smooth_l1_loss_grad: the smooth L1 (Huber-like) loss of each row, with
// Paddle's contract (paddle/fluid/operators/smooth_l1_loss_op.h).
//
// X and Y are [N, ...] of one shape; InsideWeight and OutsideWeight (both or neither) are
// too. With s2 = sigma^2:
//   Diff = InsideWeight * (X - Y)                 (kept for the gradient)
//   f(d) = 0.5 * s2 * d^2 when |d| < 1 / s2, else |d| - 0.5 / s2
//   Out[i] = sum over row i of OutsideWeight * f(Diff)      ([N, 1])
// and, with f'(d) = s2 * d or sign(d) on the same two sides,
//   X@GRAD = Out@GRAD[i] * InsideWeight * OutsideWeight * f'(Diff),  Y@GRAD = -X@GRAD.
#include <string>
#include <vector>

#include "kernels.h"
#include "loss_loops.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// The weights, when both are given, checked against X's dims; null when neither is.
template <class T> struct Weights {
  const T* inside = nullptr;
  const T* outside = nullptr;
};

template <class T> Weights<T> WeightsOf(KernelContext& ctx, const std::vector<int64_t>& dims) {
  const bool in = ctx.HasInput("InsideWeight"), out = ctx.HasInput("OutsideWeight");
  if (in != out) throw Error("InsideWeight and OutsideWeight come together or not at all");
  if (!in) return {};
  for (const char* slot : {"InsideWeight", "OutsideWeight"}) {
    if (ctx.Input(slot).dims() != dims) {
      throw Error(std::string(slot) + " " + DimsString(ctx.Input(slot).dims()) + " must be shaped like X " +
                  DimsString(dims));
    }
  }
  return {ctx.Input("InsideWeight").data<T>(), ctx.Input("OutsideWeight").data<T>()};
}

template <class T> T Sigma2(KernelContext& ctx) {
  const T sigma = static_cast<T>(ctx.Attr<float>("sigma"));
  return sigma * sigma;
}

template <class T> void SmoothL1Loss(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), y = ctx.Input("Y");
  const std::vector<int64_t> d = x.dims();
  if (d.empty() || y.dims() != d) {
    throw Error("X " + DimsString(d) + " and Y " + DimsString(y.dims()) + " must be [N, ...] of one shape");
  }
  const Weights<T> w = WeightsOf<T>(ctx, d);
  const T s2 = Sigma2<T>(ctx);
  const int64_t rows = d[0], cols = rows > 0 ? x.numel() / rows : 0;
  const T *px = x.data<T>(), *py = y.data<T>();
  T* diff = ctx.AllocateOutput<T>("Diff", d);
  std::vector<T> loss(static_cast<size_t>(rows), T(0));
  const auto loops = loss::SmoothL1LoopsFor<T>();
  ParallelFor(rows, (w.inside != nullptr ? 5.0 : 3.0) * sizeof(T) * x.numel(),
              [&](int64_t, int64_t first, int64_t last) {
                loops.forward(px, py, w.inside, w.outside, diff, loss.data(), cols, first, last, s2);
              });
  std::copy(loss.begin(), loss.end(), ctx.AllocateOutput<T>("Out", {rows, 1}));
}

template <class T> void SmoothL1LossGrad(KernelContext& ctx) {
  Tensor diff = ctx.Input("Diff"), g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = diff.dims();
  if (d.empty() || g.numel() != d[0]) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " must hold one value per row of Diff " + DimsString(d));
  }
  const Weights<T> w = WeightsOf<T>(ctx, d);
  const T s2 = Sigma2<T>(ctx);
  const int64_t rows = d[0], cols = rows > 0 ? diff.numel() / rows : 0;
  const double bytes = (w.inside != nullptr ? 4.0 : 2.0) * sizeof(T) * static_cast<double>(diff.numel());
  const auto loops = loss::SmoothL1LoopsFor<T>();
  // X@GRAD from the inputs, in row chunks on the team; Y@GRAD its negation (from X@GRAD's
  // values when both are asked for, so that neither pass reads an input the other's
  // output may have replaced).
  const auto from_inputs = [&](T sign, T* out) {
    const T *pd = ctx.Input("Diff").data<T>(), *pg = ctx.Input("Out@GRAD").data<T>();
    ParallelFor(rows, bytes, [&](int64_t, int64_t first, int64_t last) {
      loops.backward(pd, pg, w.inside, w.outside, out, cols, first, last, s2, sign);
    });
  };
  const std::initializer_list<const char*> inputs = {"Diff", "Out@GRAD", "InsideWeight", "OutsideWeight"};
  const bool want_x = HasOutputVariable(ctx, "X@GRAD");
  if (want_x) WriteOutput<T>(ctx, "X@GRAD", inputs, d, [&](T* dx) { from_inputs(T(1), dx); });
  if (!HasOutputVariable(ctx, "Y@GRAD")) return;
  if (!want_x) return WriteOutput<T>(ctx, "Y@GRAD", inputs, d, [&](T* dy) { from_inputs(T(-1), dy); });
  WriteOutput<T>(ctx, "Y@GRAD", {}, d, [&](T* dy) {  // reads X@GRAD alone
    const T* dx = ctx.Output("X@GRAD").data<T>();
    ParallelFor(diff.numel(), 2.0 * sizeof(T) * static_cast<double>(diff.numel()),
                [&](int64_t, int64_t begin, int64_t end) {
                  VecMap<T>(dy + begin, end - begin) = -ConstVecMap<T>(dx + begin, end - begin);
                });
  });
}

}  // namespace

void RegisterSmoothL1Loss(Registrar& r) {
  const OpSchema smooth_l1 =
      OpSchema("smooth_l1_loss")
          .Doc(
              "Out[i] = the sum over row i of OutsideWeight * f(InsideWeight * (X - Y)), f(d) = 0.5 sigma^2 d^2 "
              "where |d| < 1 / sigma^2, else |d| - 0.5 / sigma^2.")
          .Input("X", "[N, ...]")
          .Input("Y", "the target, shaped like X")
          .Input("InsideWeight", "shaped like X; weights X - Y (with OutsideWeight)", RILL_SLOT_OPTIONAL)
          .Input("OutsideWeight", "shaped like X; weights each term (with InsideWeight)", RILL_SLOT_OPTIONAL)
          .Output("Diff", "InsideWeight * (X - Y), kept for the gradient")
          .Output("Out", "[N, 1] losses")
          .Attr("sigma", 1.0f, "where the loss turns from quadratic to linear: |d| = 1 / sigma^2")
          .KernelDtypeFrom("X")
          .Grad("smooth_l1_loss_grad", "Diff,Out@GRAD,InsideWeight,OutsideWeight", "X,Y");
  r.Op(smooth_l1);
  r.Op(smooth_l1.MakeGradSchema());
  RegisterCpu<float, double>(r, "smooth_l1_loss", [](auto t) { return &SmoothL1Loss<decltype(t)>; });
  RegisterCpu<float, double>(r, "smooth_l1_loss_grad", [](auto t) { return &SmoothL1LossGrad<decltype(t)>; });
}

}  // namespace rill::math
