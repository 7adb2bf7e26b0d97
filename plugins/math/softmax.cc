// softmax (along `axis`, numerically stable) and cross_entropy (hard int64 labels or soft
// labels; Y[i] = -log X[i, label_i], or -sum_j label_ij * log X_ij), and their gradients.
#include <cmath>
#include <limits>

#include "broadcast.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void Softmax(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size());
  std::vector<T> out(static_cast<size_t>(x.numel()));
  const T* px = x.data<T>();
  for (int64_t i = 0; i < pre; ++i) {
    for (int64_t k = 0; k < post; ++k) {
      const int64_t base = i * n * post + k;
      T max = px[base];
      for (int64_t j = 1; j < n; ++j) max = std::max(max, px[base + j * post]);
      T total = 0;
      for (int64_t j = 0; j < n; ++j) total += out[base + j * post] = std::exp(px[base + j * post] - max);
      for (int64_t j = 0; j < n; ++j) out[base + j * post] /= total;
    }
  }
  T* po = ctx.AllocateOutput<T>("Out", d);
  std::copy(out.begin(), out.end(), po);
}

template <class T>
void CrossEntropy(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  const CrossEntropyShape shape = CheckCrossEntropy(x.dims(), label.dims(), soft);
  const int64_t rows = shape.rows, classes = shape.classes;
  const T* px = x.data<T>();
  std::vector<T> loss(static_cast<size_t>(rows));
  // Keeps log() finite for a probability that underflowed to 0 (Fluid's kApproInf guard).
  const auto safe_log = [](T p) { return std::log(std::max(p, std::numeric_limits<T>::min())); };
  if (soft) {
    const T* pl = label.data<T>();
    for (int64_t i = 0; i < rows; ++i) {
      T sum = 0;
      for (int64_t j = 0; j < classes; ++j) sum -= pl[i * classes + j] * safe_log(px[i * classes + j]);
      loss[i] = sum;
    }
  } else {
    const int64_t ignore = ctx.Attr<int64_t>("ignore_index");
    const int64_t* pl = label.data<int64_t>();
    for (int64_t i = 0; i < rows; ++i) {
      if (pl[i] == ignore) continue;
      if (pl[i] < 0 || pl[i] >= classes) {
        throw Error("Label[" + std::to_string(i) + "] = " + std::to_string(pl[i]) + " is not a class in [0, " +
                    std::to_string(classes) + ")");
      }
      loss[i] = -safe_log(px[i * classes + pl[i]]);
    }
  }
  T* po = ctx.AllocateOutput<T>("Y", shape.out_dims);
  std::copy(loss.begin(), loss.end(), po);
}

// X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out)) along axis.
template <class T>
void SoftmaxGrad(KernelContext& ctx) {
  Tensor out = ctx.Input("Out");
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = out.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size());
  const T* po = out.data<T>();
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", d);
  for (int64_t i = 0; i < pre; ++i) {
    for (int64_t k = 0; k < post; ++k) {
      const int64_t base = i * n * post + k;
      T dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += pg[base + j * post] * po[base + j * post];
      for (int64_t j = 0; j < n; ++j) dx[base + j * post] = po[base + j * post] * (pg[base + j * post] - dot);
    }
  }
}

// X@GRAD = -Y@GRAD / X at each row's label (hard), or -Y@GRAD * Label / X (soft).
template <class T>
void CrossEntropyGrad(KernelContext& ctx) {
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

}  // namespace

void RegisterSoftmax(Registrar& r) {
  const OpSchema softmax = OpSchema("softmax")
           .Doc("Out = exp(X) / sum(exp(X)) along `axis` (computed as exp(X - max)).")
           .Input("X", "logits")
           .Output("Out", "probabilities, shaped like X")
           .Attr("axis", int64_t{-1}, "the dimension normalized")
           .KernelDtypeFrom("X")
           .Grad("softmax_grad", "Out,Out@GRAD", "X");
  r.Op(softmax);
  r.Op(softmax.MakeGradSchema());
  RegisterCpu<float, double>(r, "softmax", [](auto t) { return &Softmax<decltype(t)>; });
  RegisterCpu<float, double>(r, "softmax_grad", [](auto t) { return &SoftmaxGrad<decltype(t)>; });
  const OpSchema xent = OpSchema("cross_entropy")
           .Doc("Y = -log X[label] per row (hard labels: int64 class indices, one per row) or "
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
