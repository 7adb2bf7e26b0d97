// norm, norm_grad: X divided by its L2 norm along one axis (Fluid's l2_normalize), with
// Paddle's contract (paddle/fluid/operators/norm_op.h).
//
// With X seen as [pre, n, post] around `axis`:
//   Norm[p, 0, q] = sqrt(sum_j X[p, j, q]^2 + epsilon)      (X's dims, 1 at axis)
//   Out[p, j, q]  = X[p, j, q] / Norm[p, 0, q]
// and the gradient, from the Norm the forward kept:
//   X@GRAD = (Out@GRAD - X * sum_j(X * Out@GRAD) / Norm^2) / Norm
#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct AxisView {
  int64_t pre, n, post;
  std::vector<int64_t> norm_dims;
};

AxisView ViewOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  if (d.empty()) throw Error("X must have at least one dim");
  const size_t a = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  AxisView v{Product(d, 0, a), d[a], Product(d, a + 1, d.size()), d};
  v.norm_dims[a] = 1;
  return v;
}

template <class T> void Norm(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const AxisView v = ViewOf(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* px = x.data<T>();
  T* norm = ctx.AllocateOutput<T>("Norm", v.norm_dims);
  T* out = ctx.AllocateOutput<T>("Out", x.dims());
  ParallelFor(v.pre, static_cast<double>(x.numel()) * sizeof(T) * 2, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      if (v.post == 1) {  // a contiguous vector: Eigen's vector loops (its row-major n x 1 view has none)
        const ConstVecMap<T> xs(px + p * v.n, v.n);
        norm[p] = std::sqrt(xs.square().sum() + eps);
        VecMap<T>(out + p * v.n, v.n) = xs / norm[p];
        continue;
      }
      const ConstMatrixMap<T> xs(px + p * v.n * v.post, v.n, v.post);
      Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> ns(norm + p * v.post, v.post);
      ns = (xs.array().square().colwise().sum() + eps).sqrt().matrix();
      MatrixMap<T>(out + p * v.n * v.post, v.n, v.post) = (xs.array().rowwise() / ns.array()).matrix();
    }
  });
}

template <class T> void NormGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X");
  const AxisView v = ViewOf(ctx, x.dims());
  Tensor norm = ctx.Input("Norm"), g = ctx.Input("Out@GRAD");
  if (norm.numel() != v.pre * v.post) {
    throw Error("Norm " + DimsString(norm.dims()) + " is not shaped like " + DimsString(v.norm_dims));
  }
  if (g.dims() != x.dims())
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const T *px = x.data<T>(), *pn = norm.data<T>(), *pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFor(v.pre, static_cast<double>(x.numel()) * sizeof(T) * 3, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      if (v.post == 1) {  // a contiguous vector, as in Norm
        const ConstVecMap<T> xs(px + p * v.n, v.n), gs(pg + p * v.n, v.n);
        const T dot = (xs * gs).sum() / (pn[p] * pn[p]);
        VecMap<T>(dx + p * v.n, v.n) = (gs - xs * dot) / pn[p];
        continue;
      }
      const auto xs = ConstMatrixMap<T>(px + p * v.n * v.post, v.n, v.post).array();
      const auto gs = ConstMatrixMap<T>(pg + p * v.n * v.post, v.n, v.post).array();
      const auto ns = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>(pn + p * v.post, v.post);
      const Eigen::Array<T, 1, Eigen::Dynamic> dot = (xs * gs).colwise().sum() / ns.square();
      MatrixMap<T>(dx + p * v.n * v.post, v.n, v.post) = ((gs - xs.rowwise() * dot).rowwise() / ns).matrix();
    }
  });
}

}  // namespace

void RegisterL2Norm(Registrar& r) {
  const OpSchema norm =
      OpSchema("norm")
          .Doc("Out = X / Norm, Norm = sqrt(the sum of X^2 along axis + epsilon): Fluid's l2_normalize.")
          .Input("X", "any shape")
          .Output("Out", "shaped like X")
          .Output("Norm", "X's dims with 1 at axis: the norms, kept for the gradient")
          .Attr("axis", int64_t{1}, "the dim normalized along (negative from the end)")
          .Attr("epsilon", 1e-10f, "added under the root")
          .KernelDtypeFrom("X")
          .Grad("norm_grad", "X,Norm,Out@GRAD", "X");
  r.Op(norm);
  r.Op(norm.MakeGradSchema());
  RegisterCpu<float, double>(r, "norm", [](auto t) { return &Norm<decltype(t)>; });
  RegisterCpu<float, double>(r, "norm_grad", [](auto t) { return &NormGrad<decltype(t)>; });
}

}  // namespace rill::math
