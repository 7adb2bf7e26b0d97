// Normalization: layer_norm with Fluid's contract (each row of X flattened at
// begin_norm_axis normalized to mean 0 and variance 1, then scaled and shifted), and its
// gradient.
#include <cmath>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// X seen as [rows, width] at begin_norm_axis; Scale and Bias, when given, hold `width`.
struct NormShape {
  int64_t rows = 1, width = 1;
};
NormShape LayerNormShape(KernelContext& ctx, const std::vector<int64_t>& xd) {
  const int64_t axis = ctx.Attr<int64_t>("begin_norm_axis");
  if (axis < 1 || axis >= static_cast<int64_t>(xd.size()) + (xd.size() == 1 ? 1 : 0)) {
    throw Error("begin_norm_axis " + std::to_string(axis) + " is out of range [1, " + std::to_string(xd.size()) +
                ") for X " + DimsString(xd));
  }
  NormShape s{Product(xd, 0, static_cast<size_t>(axis)), Product(xd, static_cast<size_t>(axis), xd.size())};
  for (const char* slot : {"Scale", "Bias"}) {
    if (ctx.HasInput(slot) && ctx.Input(slot).numel() != s.width) {
      throw Error(std::string(slot) + " " + DimsString(ctx.Input(slot).dims()) + " does not hold the " +
                  std::to_string(s.width) + " values a row of X " + DimsString(xd) + " has from begin_norm_axis");
    }
  }
  return s;
}

// X as [rows, width] arrays.
template <class T> using Rows = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using ConstRowsMap = Eigen::Map<const Rows<T>>;
template <class T> using RowsMap = Eigen::Map<Rows<T>>;

// The row of `slot` (Scale or Bias) as a [1, width] array.
template <class T>
Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>> RowOf(KernelContext& ctx, const char* slot, int64_t width) {
  return {ctx.Input(slot).data<T>(), width};
}

template <class T>
void LayerNorm(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const NormShape s = LayerNormShape(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const ConstRowsMap<T> xm(x.data<T>(), s.rows, s.width);
  const Vec<T> mean = xm.rowwise().mean();
  Rows<T> y = xm.colwise() - mean;
  const Vec<T> var = y.square().rowwise().mean();
  y.colwise() /= (var + eps).sqrt();
  if (ctx.HasInput("Scale")) y.rowwise() *= RowOf<T>(ctx, "Scale", s.width);
  if (ctx.HasInput("Bias")) y.rowwise() += RowOf<T>(ctx, "Bias", s.width);
  RowsMap<T>(ctx.AllocateOutput<T>("Y", x.dims()), s.rows, s.width) = y;
  if (ctx.HasOutput("Mean")) VecMap<T>(ctx.AllocateOutput<T>("Mean", {s.rows}), s.rows) = mean;
  if (ctx.HasOutput("Variance")) VecMap<T>(ctx.AllocateOutput<T>("Variance", {s.rows}), s.rows) = var;
}

// With xhat = (x - mean) / sigma per row and dxhat = dy * scale:
// dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sigma; dscale = sum over rows of
// dy * xhat; dbias = sum over rows of dy. Mean and variance are recomputed from X.
template <class T>
void LayerNormGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const NormShape s = LayerNormShape(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const ConstRowsMap<T> xm(x.data<T>(), s.rows, s.width);
  const ConstRowsMap<T> dy(ctx.Input("Y@GRAD").data<T>(), s.rows, s.width);
  const Vec<T> mean = xm.rowwise().mean();
  Rows<T> xhat = xm.colwise() - mean;
  const Vec<T> inv_sigma = (xhat.square().rowwise().mean() + eps).rsqrt();
  xhat.colwise() *= inv_sigma;
  Rows<T> dxhat = dy;
  if (ctx.HasInput("Scale")) dxhat.rowwise() *= RowOf<T>(ctx, "Scale", s.width);
  if (ctx.HasOutput("X@GRAD")) {
    const Vec<T> mean_d = dxhat.rowwise().mean();
    const Vec<T> mean_dx = (dxhat * xhat).rowwise().mean();
    Rows<T> dx = dxhat.colwise() - mean_d;
    dx -= xhat.colwise() * mean_dx;
    dx.colwise() *= inv_sigma;
    RowsMap<T>(ctx.AllocateOutput<T>("X@GRAD", x.dims()), s.rows, s.width) = dx;
  }
  if (ctx.HasOutput("Scale@GRAD")) {
    VecMap<T>(ctx.AllocateOutput<T>("Scale@GRAD", ctx.Input("Scale").dims()), s.width) =
        (dy * xhat).colwise().sum().transpose();
  }
  if (ctx.HasOutput("Bias@GRAD")) {
    VecMap<T>(ctx.AllocateOutput<T>("Bias@GRAD", ctx.Input("Bias").dims()), s.width) = dy.colwise().sum().transpose();
  }
}

}  // namespace

void RegisterNorm(Registrar& r) {
  const OpSchema layer_norm = OpSchema("layer_norm")
      .Doc("Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, mean and variance over each row of X "
           "flattened at begin_norm_axis; Mean and Variance hold them per row.")
      .Input("X", "the input")
      .Input("Scale", "per element of a row, [prod(X.dims[begin_norm_axis:])]", RILL_SLOT_OPTIONAL)
      .Input("Bias", "per element of a row, likewise", RILL_SLOT_OPTIONAL)
      .Output("Y", "the normalized X")
      .Output("Mean", "each row's mean", RILL_SLOT_OPTIONAL)
      .Output("Variance", "each row's (biased) variance", RILL_SLOT_OPTIONAL)
      .Attr("epsilon", 1e-5, "added to the variance")
      .Attr("begin_norm_axis", int64_t{1}, "the first dim of a row")
      .KernelDtypeFrom("X")
      .Grad("layer_norm_grad", "X,Scale,Bias,Y@GRAD", "X,Scale,Bias");
  r.Op(layer_norm);
  r.Op(layer_norm.MakeGradSchema());
  RegisterCpu<float, double>(r, "layer_norm", [](auto t) { return &LayerNorm<decltype(t)>; });
  RegisterCpu<float, double>(r, "layer_norm_grad", [](auto t) { return &LayerNormGrad<decltype(t)>; });
}

}  // namespace rill::math
