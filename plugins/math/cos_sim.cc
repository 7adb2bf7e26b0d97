// cos_sim, cos_sim_grad: the cosine similarity of each row of X with the same row of Y, or
// with Y's one row broadcast to all of X's, with Paddle's contract
// (paddle/fluid/operators/cos_sim_op.*). X [N, ...] and Y [N or 1, ...] have the same
// rank (at least 2) and the same sizes after the first; each row is flattened:
//
//   XNorm[r] = sqrt(max(|x_r|^2, 1e-8)),  YNorm likewise,  Out[r] = <x_r, y_r> / (XNorm[r] YNorm[r])
//
// The squared norm is clamped before its root so that a zero row gives Out = 0, not NaN.
// Out [N, 1] carries X's LoD (the recommender net compares one row per sequence).
// The gradient, with the norms as the forward saved them:
//
//   dx_r = dOut[r] (y_r / (|x_r| |y_r|) - Out[r] x_r / |x_r|^2), dy_r alike with x and y swapped,
//
// summed over the rows for a broadcast Y.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

constexpr double kMinSquaredNorm = 1e-8;

// X and Y as [rows, width] matrices, after checking their shapes against each other.
struct CosSimShape {
  int64_t rows = 0, y_rows = 0, width = 0;
};

CosSimShape CheckedShape(const Tensor& x, const Tensor& y) {
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  const bool trailing_equal = xd.size() == yd.size() && std::equal(xd.begin() + 1, xd.end(), yd.begin() + 1);
  if (xd.size() < 2 || !trailing_equal || (yd[0] != xd[0] && yd[0] != 1)) {
    throw Error("X " + DimsString(xd) + " and Y " + DimsString(yd) +
                " must have the same rank (at least 2) and sizes after the first, and Y as many rows as X or one");
  }
  return {xd[0], yd[0], x.numel() / std::max<int64_t>(xd[0], 1)};
}

template <class T> void CosSimForward(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), y = ctx.Input("Y");
  const CosSimShape s = CheckedShape(x, y);
  const ConstMatrixMap<T> xm(x.data<T>(), s.rows, s.width), ym(y.data<T>(), s.y_rows, s.width);
  const auto norm = [](T squared) { return std::sqrt(std::max(squared, static_cast<T>(kMinSquaredNorm))); };
  WriteOutput<T>(ctx, "YNorm", {"X", "Y"}, {s.y_rows, 1}, [&](T* yn) {
    for (int64_t r = 0; r < s.y_rows; ++r) yn[r] = norm(ym.row(r).squaredNorm());
    WriteOutput<T>(ctx, "XNorm", {"X", "Y"}, {s.rows, 1}, [&](T* xn) {
      WriteOutput<T>(ctx, "Out", {"X", "Y"}, {s.rows, 1}, [&](T* out) {
        ParallelFor(s.rows, 2.0 * static_cast<double>(s.rows * s.width) * sizeof(T),
                    [&](int64_t, int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const int64_t yr = s.y_rows == 1 ? 0 : r;
                        xn[r] = norm(xm.row(r).squaredNorm());
                        out[r] = xm.row(r).dot(ym.row(yr)) / (xn[r] * yn[yr]);
                      }
                    });
      });
    });
  });
  ShareLoD(ctx, "X", "Out");
}

template <class T> void CosSimBackward(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), y = ctx.Input("Y"), out = ctx.Input("Out"), dout = ctx.Input("Out@GRAD");
  Tensor xnorm = ctx.Input("XNorm"), ynorm = ctx.Input("YNorm");
  const CosSimShape s = CheckedShape(x, y);
  if (out.numel() != s.rows || dout.numel() != s.rows || xnorm.numel() != s.rows || ynorm.numel() != s.y_rows) {
    throw Error("Out " + DimsString(out.dims()) + ", Out@GRAD " + DimsString(dout.dims()) + " and XNorm " +
                DimsString(xnorm.dims()) + " must hold one value per row of X, YNorm " + DimsString(ynorm.dims()) +
                " one per row of Y");
  }
  const ConstMatrixMap<T> xm(x.data<T>(), s.rows, s.width), ym(y.data<T>(), s.y_rows, s.width);
  const ConstVecMap<T> z(out.data<T>(), s.rows), dz(dout.data<T>(), s.rows);
  const ConstVecMap<T> xn(xnorm.data<T>(), s.rows), yn(ynorm.data<T>(), s.y_rows);
  const bool broadcast = s.y_rows == 1 && s.rows != 1;
  // d<a, b> / (|a| |b|) / da = b / (|a| |b|) - cos a / |a|^2, scaled by dOut.
  const auto grad_row = [&](auto&& into, const auto& a, const auto& b, int64_t r, T a_norm, T b_norm) {
    into = dz[r] * (b / (a_norm * b_norm) - z[r] * a / (a_norm * a_norm));
  };
  if (HasOutputVariable(ctx, "X@GRAD")) {
    WriteOutput<T>(ctx, "X@GRAD", {}, x.dims(), [&](T* dx) {
      MatrixMap<T> dxm(dx, s.rows, s.width);
      ParallelFor(s.rows, 3.0 * static_cast<double>(s.rows * s.width) * sizeof(T),
                  [&](int64_t, int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                      const int64_t yr = s.y_rows == 1 ? 0 : r;
                      grad_row(dxm.row(r), xm.row(r), ym.row(yr), r, xn[r], yn[yr]);
                    }
                  });
    });
  }
  if (!HasOutputVariable(ctx, "Y@GRAD")) return;
  WriteOutput<T>(ctx, "Y@GRAD", {}, y.dims(), [&](T* dy) {
    MatrixMap<T> dym(dy, s.y_rows, s.width);
    if (broadcast) {
      // The sum over rows of dOut (x_r / (|x_r| |y|) - Out[r] y / |y|^2): one product with X.
      const Vec<T> along_x = dz / (xn * yn[0]);
      dym.row(0) = along_x.matrix().transpose() * xm - ((dz * z).sum() / (yn[0] * yn[0])) * ym.row(0);
      return;
    }
    ParallelFor(s.rows, 3.0 * static_cast<double>(s.rows * s.width) * sizeof(T),
                [&](int64_t, int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) grad_row(dym.row(r), ym.row(r), xm.row(r), r, yn[r], xn[r]);
                });
  });
}

}  // namespace

void RegisterCosSim(Registrar& r) {
  const OpSchema cos_sim =
      OpSchema("cos_sim")
          .Doc(
              "The cosine similarity of each row of X with Y's same row, or with Y's one row: Out [N, 1], and "
              "the rows' norms (clamped at sqrt(1e-8)) XNorm [N, 1], YNorm [N or 1, 1]. As Paddle's.")
          .Input("X", "[N, ...]: each row flattened")
          .Input("Y", "[N or 1, ...]: sized like X after the first dimension")
          .Output("Out", "[N, 1], with X's LoD")
          .Output("XNorm", "[N, 1]: the norm of each row of X")
          .Output("YNorm", "[N or 1, 1]: the norm of each row of Y")
          .KernelDtypeFrom("X")
          .Grad("cos_sim_grad", "X,Y,Out,XNorm,YNorm,Out@GRAD", "X,Y");
  r.Op(cos_sim);
  r.Op(cos_sim.MakeGradSchema());
  RegisterCpu<float, double>(r, "cos_sim", [](auto t) { return &CosSimForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "cos_sim_grad", [](auto t) { return &CosSimBackward<decltype(t)>; });
}

}  // namespace rill::math
