// mul (Fluid's fully-connected product: X and Y flattened to matrices at x_num_col_dims /
// y_num_col_dims) and matmul (batched, with transposes and alpha), and their gradients.
// All run Gemm (gemm.h) on the tensors' memory.
#include "broadcast.h"
#include "gemm.h"
#include "matmul_shape.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// mul's x_num_col_dims and y_num_col_dims, each checked to split its operand into a
// matrix (a 1-D operand: 1) before it is used as a count of dims.
std::pair<size_t, size_t> NumColDims(KernelContext& ctx, const std::vector<int64_t>& xd,
                                     const std::vector<int64_t>& yd) {
  const int64_t xn = ctx.Attr<int64_t>("x_num_col_dims"), yn = ctx.Attr<int64_t>("y_num_col_dims");
  const auto splits = [](int64_t n, const std::vector<int64_t>& d) {
    return n >= 1 && n < static_cast<int64_t>(d.size()) + (d.size() == 1 ? 1 : 0);
  };
  if (!splits(xn, xd) || !splits(yn, yd)) {
    throw Error("x_num_col_dims " + std::to_string(xn) + " / y_num_col_dims " + std::to_string(yn) +
                " do not split X " + DimsString(xd) + " and Y " + DimsString(yd) + " into matrices");
  }
  return {static_cast<size_t>(xn), static_cast<size_t>(yn)};
}

template <class T> void Mul(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  const auto [xn, yn] = NumColDims(ctx, xd, yd);
  const int64_t m = Product(xd, 0, xn), k = Product(xd, xn, xd.size());
  const int64_t ky = Product(yd, 0, yn), n = Product(yd, yn, yd.size());
  if (k != ky) {
    throw Error("X " + DimsString(xd) + " flattens to [" + std::to_string(m) + ", " + std::to_string(k) + "] but Y " +
                DimsString(yd) + " flattens to [" + std::to_string(ky) + ", " + std::to_string(n) + "]");
  }
  std::vector<int64_t> out_dims(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(xn));
  out_dims.insert(out_dims.end(), yd.begin() + static_cast<std::ptrdiff_t>(yn), yd.end());
  WriteOutput<T>(ctx, "Out", {"X", "Y"}, out_dims,
                 [&](T* out) { Gemm<T>(false, false, m, n, k, T(1), x.data<T>(), y.data<T>(), T(0), out); });
  ShareLoD(ctx, "X", "Out");  // the rows of a LoD X stay the sequences' rows
}

template <class T, bool kV2> void MatMul(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const MatMulPlan plan = PlanMatMul(ctx, x.dims(), y.dims(), kV2);
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  const T alpha = static_cast<T>(plan.alpha);
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  WriteOutput<T>(ctx, "Out", {"X", "Y"}, MatMulOutDims(plan, x.dims(), y.dims()), [&](T* out) {
    for (int64_t i = 0; i < plan.batch; ++i) {
      Gemm<T>(plan.tx, plan.ty, m, n, k, alpha, px + plan.x_at[i] * m * k, py + plan.y_at[i] * k * n, T(0),
              out + i * m * n);
    }
  });
}

// fc: Out = act(Input * W + Bias) on Input flattened at in_num_col_dims.
template <class T> void Fc(KernelContext& ctx) {
  Tensor in = ctx.Input("Input");
  Tensor w = ctx.Input("W");
  const std::vector<int64_t> id = in.dims(), wd = w.dims();
  const std::string act = ctx.Attr<std::string>("activation_type");
  if (act != "" && act != "relu") throw Error("activation_type '" + act + "' is not supported (\"\" or \"relu\")");
  if (ctx.Attr<bool>("padding_weights")) throw Error("padding_weights is not supported");
  const auto cols = static_cast<size_t>(ctx.Attr<int64_t>("in_num_col_dims"));
  if (cols < 1 || cols >= id.size() || wd.size() != 2) {
    throw Error("in_num_col_dims " + std::to_string(cols) + " does not split Input " + DimsString(id) +
                " into a matrix, or W " + DimsString(wd) + " is not a matrix");
  }
  const int64_t m = Product(id, 0, cols), k = Product(id, cols, id.size()), n = wd[1];
  if (k != wd[0]) {
    throw Error("Input " + DimsString(id) + " flattens to [" + std::to_string(m) + ", " + std::to_string(k) +
                "] but W is " + DimsString(wd));
  }
  const T* bias = nullptr;
  if (ctx.HasInput("Bias")) {
    Tensor b = ctx.Input("Bias");
    if (b.numel() != n)
      throw Error("Bias " + DimsString(b.dims()) + " does not have W's " + std::to_string(n) + " columns");
    bias = b.data<T>();
  }
  std::vector<int64_t> out_dims(id.begin(), id.begin() + static_cast<std::ptrdiff_t>(cols));
  out_dims.push_back(n);
  WriteOutput<T>(ctx, "Out", {"Input", "W"}, out_dims, [&](T* out) {
    Gemm<T>(false, false, m, n, k, T(1), in.data<T>(), w.data<T>(), T(0), out);
    MatrixMap<T> om(out, m, n);
    if (bias != nullptr) om.rowwise() += ConstMatrixMap<T>(bias, 1, n).row(0);
    if (act == "relu") om = om.cwiseMax(T(0));
  });
  ShareLoD(ctx, "Input", "Out");
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD on the flattened matrices.
template <class T> void MulGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  const auto [xn, yn] = NumColDims(ctx, xd, yd);
  const int64_t m = Product(xd, 0, xn), k = Product(xd, xn, xd.size()), n = Product(yd, yn, yd.size());
  if (ctx.HasOutput("X@GRAD")) {
    Gemm<T>(false, true, m, k, n, T(1), g.data<T>(), y.data<T>(), T(0), ctx.AllocateOutput<T>("X@GRAD", xd));
  }
  if (ctx.HasOutput("Y@GRAD")) {
    Gemm<T>(true, false, k, n, m, T(1), x.data<T>(), g.data<T>(), T(0), ctx.AllocateOutput<T>("Y@GRAD", yd));
  }
}

// For Out = alpha * op(X) op(Y), per batch: with A = op(X), B = op(Y) and G = Out@GRAD,
// dA = alpha G B^T and dB = alpha A^T G, written in X's and Y's stored orientation
// (dX = dA^T when X is transposed, likewise Y). A matrix broadcast over several products
// sums their gradients: the first product writes it (beta 0), the others add (beta 1).
template <class T, bool kV2> void MatMulGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const MatMulPlan plan = PlanMatMul(ctx, x.dims(), y.dims(), kV2);
  const bool tx = plan.tx, ty = plan.ty;
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  const std::vector<int64_t> out_dims = MatMulOutDims(plan, x.dims(), y.dims());
  if (g.dims() != out_dims) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(out_dims));
  }
  const T alpha = static_cast<T>(plan.alpha);
  T* dx = ctx.HasOutput("X@GRAD") ? ctx.AllocateOutput<T>("X@GRAD", x.dims()) : nullptr;
  T* dy = ctx.HasOutput("Y@GRAD") ? ctx.AllocateOutput<T>("Y@GRAD", y.dims()) : nullptr;
  std::vector<bool> x_seen(static_cast<size_t>(plan.a.batch)), y_seen(static_cast<size_t>(plan.b.batch));
  for (int64_t i = 0; i < plan.batch; ++i) {
    const int64_t xo = plan.x_at[i] * m * k, yo = plan.y_at[i] * k * n;
    const T* xi = x.data<T>() + xo;
    const T* yi = y.data<T>() + yo;
    const T* gi = g.data<T>() + i * m * n;
    if (dx != nullptr) {
      const T beta = x_seen[plan.x_at[i]] ? T(1) : T(0);
      x_seen[plan.x_at[i]] = true;
      if (tx) Gemm<T>(ty, true, k, m, n, alpha, yi, gi, beta, dx + xo);
      else Gemm<T>(false, !ty, m, k, n, alpha, gi, yi, beta, dx + xo);
    }
    if (dy != nullptr) {
      const T beta = y_seen[plan.y_at[i]] ? T(1) : T(0);
      y_seen[plan.y_at[i]] = true;
      if (ty) Gemm<T>(true, tx, n, k, m, alpha, gi, xi, beta, dy + yo);
      else Gemm<T>(!tx, false, k, n, m, alpha, xi, gi, beta, dy + yo);
    }
  }
}

// bmm: X [B, M, K] times Y [B, K, N], matrix by matrix (Paddle's: no broadcast, no
// transposes), on matmul_v2's kernels once the shapes are checked.
void CheckBmmShapes(const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
  if (x.size() != 3 || y.size() != 3 || x[0] != y[0] || x[2] != y[1]) {
    throw Error("X " + DimsString(x) + " and Y " + DimsString(y) + " must be [B, M, K] and [B, K, N]");
  }
}
template <class T> void Bmm(KernelContext& ctx) {
  CheckBmmShapes(ctx.Input("X").dims(), ctx.Input("Y").dims());
  MatMul<T, true>(ctx);
}
template <class T> void BmmGrad(KernelContext& ctx) {
  CheckBmmShapes(ctx.Input("X").dims(), ctx.Input("Y").dims());
  MatMulGrad<T, true>(ctx);
}

}  // namespace

void RegisterMatMul(Registrar& r) {
  const OpSchema mul = OpSchema("mul")
                           .Doc(
                               "Out = X * Y as matrices: X flattened to [prod(X.dims[:x_num_col_dims]), rest], Y to "
                               "[prod(Y.dims[:y_num_col_dims]), rest]; Out has dims X.dims[:x_num_col_dims] + "
                               "Y.dims[y_num_col_dims:].")
                           .Input("X", "left operand")
                           .Input("Y", "right operand")
                           .Output("Out", "the product")
                           .Attr("x_num_col_dims", int64_t{1}, "leading dims of X that form the rows")
                           .Attr("y_num_col_dims", int64_t{1}, "leading dims of Y that form the rows")
                           .KernelDtypeFrom("X")
                           .Grad("mul_grad", "X,Y,Out@GRAD", "X,Y");
  r.Op(mul);
  r.Op(mul.MakeGradSchema());
  RegisterCpu<float, double>(r, "mul", [](auto t) { return &Mul<decltype(t)>; });
  RegisterCpu<float, double>(r, "mul_grad", [](auto t) { return &MulGrad<decltype(t)>; });
  const OpSchema matmul = OpSchema("matmul")
                              .Doc(
                                  "Out = alpha * op(X) * op(Y), op transposing when asked; leading dims are a batch "
                                  "(broadcast as numpy's); a 1-D X is a row vector and a 1-D Y a column vector, "
                                  "their dimension dropped from Out.")
                              .Input("X", "left operand")
                              .Input("Y", "right operand")
                              .Output("Out", "the product")
                              .Attr("transpose_X", false, "transpose the last two dims of X")
                              .Attr("transpose_Y", false, "transpose the last two dims of Y")
                              .Attr("alpha", 1.0, "scale of the product")
                              .KernelDtypeFrom("X")
                              .Grad("matmul_grad", "X,Y,Out@GRAD", "X,Y");
  r.Op(matmul);
  r.Op(matmul.MakeGradSchema());
  RegisterCpu<float, double>(r, "matmul", [](auto t) { return &MatMul<decltype(t), false>; });
  RegisterCpu<float, double>(r, "matmul_grad", [](auto t) { return &MatMulGrad<decltype(t), false>; });
  const OpSchema matmul_v2 =
      OpSchema("matmul_v2")
          .Doc(
              "Out = op(X) * op(Y), op transposing when asked (Paddle 2.x's matmul); leading dims are a "
              "batch (broadcast as numpy's); a 1-D X is a row vector and a 1-D Y a column vector, "
              "their dimension dropped from Out.")
          .Input("X", "left operand")
          .Input("Y", "right operand")
          .Output("Out", "the product")
          .Attr("trans_x", false, "transpose the last two dims of X")
          .Attr("trans_y", false, "transpose the last two dims of Y")
          .KernelDtypeFrom("X")
          .Grad("matmul_v2_grad", "X,Y,Out@GRAD", "X,Y");
  r.Op(matmul_v2);
  r.Op(matmul_v2.MakeGradSchema());
  RegisterCpu<float, double>(r, "matmul_v2", [](auto t) { return &MatMul<decltype(t), true>; });
  RegisterCpu<float, double>(r, "matmul_v2_grad", [](auto t) { return &MatMulGrad<decltype(t), true>; });
  const OpSchema bmm = OpSchema("bmm")
                           .Doc("Out[b] = X[b] * Y[b]: X [B, M, K] and Y [B, K, N], matrix by matrix. As Paddle's.")
                           .Input("X", "[B, M, K]")
                           .Input("Y", "[B, K, N]")
                           .Output("Out", "[B, M, N]")
                           .Attr("trans_x", false, "matmul_v2's; bmm leaves it false")
                           .Attr("trans_y", false, "matmul_v2's; bmm leaves it false")
                           .KernelDtypeFrom("X")
                           .Grad("bmm_grad", "X,Y,Out@GRAD", "X,Y");
  r.Op(bmm);
  r.Op(bmm.MakeGradSchema());
  RegisterCpu<float, double>(r, "bmm", [](auto t) { return &Bmm<decltype(t)>; });
  RegisterCpu<float, double>(r, "bmm_grad", [](auto t) { return &BmmGrad<decltype(t)>; });

  const OpSchema fc =
      OpSchema("fc")
          .Doc(
              "Out = activation(Input * W + Bias): Input flattened to [prod(Input.dims[:in_num_col_dims]), rest], "
              "W [rest, N], Bias [N] or [1, N]; Out has dims Input.dims[:in_num_col_dims] + [N]. Fluid's fused "
              "inference op: it has no gradient.")
          .Input("Input", "the input")
          .Input("W", "the weights, [K, N]")
          .Input("Bias", "added to every row, [N]", RILL_SLOT_OPTIONAL)
          .Output("Out", "the result")
          .Attr("in_num_col_dims", int64_t{1}, "leading dims of Input that form the rows")
          .Attr("activation_type", "", "\"\" or \"relu\"")
          .Attr("padding_weights", false, "W padded by 4 rows and columns (not supported: must be false)")
          .KernelDtypeFrom("Input");
  r.Op(fc);
  RegisterCpu<float, double>(r, "fc", [](auto t) { return &Fc<decltype(t)>; });
}

}  // namespace rill::math
