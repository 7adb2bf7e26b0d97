// mul (Fluid's fully-connected product: X and Y flattened to matrices at x_num_col_dims /
// y_num_col_dims) and matmul (batched, with transposes and alpha), and their gradients.
// All run Eigen's GEMM on row-major maps of the tensors' memory.
#include "broadcast.h"
#include "matmul_shape.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// True when the output variable is one of the inputs, so results must not be written into
// memory still being read.
bool OutputAliasesInput(KernelContext& ctx) {
  RillVariable* out = ctx.OutputVar("Out").handle();
  return out == ctx.InputVar("X").handle() || out == ctx.InputVar("Y").handle();
}

template <class T>
void Mul(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  const auto xn = static_cast<size_t>(ctx.Attr<int64_t>("x_num_col_dims"));
  const auto yn = static_cast<size_t>(ctx.Attr<int64_t>("y_num_col_dims"));
  if (xn < 1 || xn >= xd.size() + (xd.size() == 1 ? 1 : 0) || yn < 1 || yn >= yd.size() + (yd.size() == 1 ? 1 : 0)) {
    throw Error("x_num_col_dims " + std::to_string(xn) + " / y_num_col_dims " + std::to_string(yn) +
                " do not split X " + DimsString(xd) + " and Y " + DimsString(yd) + " into matrices");
  }
  const int64_t m = Product(xd, 0, xn), k = Product(xd, xn, xd.size());
  const int64_t ky = Product(yd, 0, yn), n = Product(yd, yn, yd.size());
  if (k != ky) {
    throw Error("X " + DimsString(xd) + " flattens to [" + std::to_string(m) + ", " + std::to_string(k) + "] but Y " +
                DimsString(yd) + " flattens to [" + std::to_string(ky) + ", " + std::to_string(n) + "]");
  }
  std::vector<int64_t> out_dims(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(xn));
  out_dims.insert(out_dims.end(), yd.begin() + static_cast<std::ptrdiff_t>(yn), yd.end());
  const bool alias = OutputAliasesInput(ctx);
  Matrix<T> tmp;
  if (alias) tmp = ConstMatrixMap<T>(x.data<T>(), m, k) * ConstMatrixMap<T>(y.data<T>(), k, n);
  T* po = ctx.AllocateOutput<T>("Out", out_dims);
  if (alias) {
    MatrixMap<T>(po, m, n) = tmp;
  } else {
    MatrixMap<T>(po, m, n).noalias() = ConstMatrixMap<T>(x.data<T>(), m, k) * ConstMatrixMap<T>(y.data<T>(), k, n);
  }
}

template <class T, bool kV2>
void MatMul(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const auto [tx, ty, alpha_attr, a, b, batch, m, k, n] = PlanMatMul(ctx, x.dims(), y.dims(), kV2);
  const T alpha = static_cast<T>(alpha_attr);
  const std::vector<int64_t> out_dims = MatMulOutDims(a, b, x.dims(), y.dims());
  // Stored (untransposed) shapes of one matrix of each side.
  const int64_t xr = tx ? k : m, xc = tx ? m : k, yr = ty ? n : k, yc = ty ? k : n;
  // Built aside and copied, so Out may be X or Y.
  std::vector<T> result(static_cast<size_t>(batch * m * n));
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  for (int64_t i = 0; i < batch; ++i) {
    ConstMatrixMap<T> xm(px + (a.batch == 1 ? 0 : i) * xr * xc, xr, xc);
    ConstMatrixMap<T> ym(py + (b.batch == 1 ? 0 : i) * yr * yc, yr, yc);
    MatrixMap<T> om(result.data() + i * m * n, m, n);
    if (tx && ty) om.noalias() = alpha * (xm.transpose() * ym.transpose());
    else if (tx) om.noalias() = alpha * (xm.transpose() * ym);
    else if (ty) om.noalias() = alpha * (xm * ym.transpose());
    else om.noalias() = alpha * (xm * ym);
  }
  T* po = ctx.AllocateOutput<T>("Out", out_dims);
  std::copy(result.begin(), result.end(), po);
}

// fc: Out = act(Input * W + Bias) on Input flattened at in_num_col_dims.
template <class T>
void Fc(KernelContext& ctx) {
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
  std::vector<int64_t> out_dims(id.begin(), id.begin() + static_cast<std::ptrdiff_t>(cols));
  out_dims.push_back(n);
  Matrix<T> result = ConstMatrixMap<T>(in.data<T>(), m, k) * ConstMatrixMap<T>(w.data<T>(), k, n);
  if (ctx.HasInput("Bias")) {
    Tensor bias = ctx.Input("Bias");
    if (bias.numel() != n) throw Error("Bias " + DimsString(bias.dims()) + " does not have W's " + std::to_string(n) + " columns");
    result.rowwise() += ConstMatrixMap<T>(bias.data<T>(), 1, n).row(0);
  }
  if (act == "relu") result = result.cwiseMax(T(0));
  MatrixMap<T>(ctx.AllocateOutput<T>("Out", out_dims), m, n) = result;
}

// X@GRAD = Out@GRAD * Y^T, Y@GRAD = X^T * Out@GRAD on the flattened matrices.
template <class T>
void MulGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  const auto xn = static_cast<size_t>(ctx.Attr<int64_t>("x_num_col_dims"));
  const auto yn = static_cast<size_t>(ctx.Attr<int64_t>("y_num_col_dims"));
  const int64_t m = Product(xd, 0, xn), k = Product(xd, xn, xd.size()), n = Product(yd, yn, yd.size());
  ConstMatrixMap<T> xm(x.data<T>(), m, k), ym(y.data<T>(), k, n), gm(g.data<T>(), m, n);
  if (ctx.HasOutput("X@GRAD")) MatrixMap<T>(ctx.AllocateOutput<T>("X@GRAD", xd), m, k).noalias() = gm * ym.transpose();
  if (ctx.HasOutput("Y@GRAD")) MatrixMap<T>(ctx.AllocateOutput<T>("Y@GRAD", yd), k, n).noalias() = xm.transpose() * gm;
}

// For Out = alpha * op(X) op(Y), per batch: with A = op(X), B = op(Y) and G = Out@GRAD,
// dA = alpha G B^T and dB = alpha A^T G, mapped back through the transposes; a side
// broadcast over the batch sums its gradient over the batch.
template <class T, bool kV2>
void MatMulGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const auto [tx, ty, alpha_attr, a, b, batch, m, k, n] = PlanMatMul(ctx, x.dims(), y.dims(), kV2);
  const T alpha = static_cast<T>(alpha_attr);
  const int64_t xr = tx ? k : m, xc = tx ? m : k, yr = ty ? n : k, yc = ty ? k : n;
  const bool want_x = ctx.HasOutput("X@GRAD"), want_y = ctx.HasOutput("Y@GRAD");
  std::vector<T> dx(want_x ? static_cast<size_t>(x.numel()) : 0, T(0));
  std::vector<T> dy(want_y ? static_cast<size_t>(y.numel()) : 0, T(0));
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t xo = (a.batch == 1 ? 0 : i) * xr * xc, yo = (b.batch == 1 ? 0 : i) * yr * yc;
    ConstMatrixMap<T> xm(x.data<T>() + xo, xr, xc), ym(y.data<T>() + yo, yr, yc);
    ConstMatrixMap<T> gm(g.data<T>() + i * m * n, m, n);
    const Matrix<T> am = tx ? Matrix<T>(xm.transpose()) : Matrix<T>(xm);
    const Matrix<T> bm = ty ? Matrix<T>(ym.transpose()) : Matrix<T>(ym);
    if (want_x) {
      const Matrix<T> da = alpha * (gm * bm.transpose());  // [m, k]
      MatrixMap<T> out(dx.data() + xo, xr, xc);
      if (tx) out += da.transpose(); else out += da;
    }
    if (want_y) {
      const Matrix<T> db = alpha * (am.transpose() * gm);  // [k, n]
      MatrixMap<T> out(dy.data() + yo, yr, yc);
      if (ty) out += db.transpose(); else out += db;
    }
  }
  if (want_x) std::copy(dx.begin(), dx.end(), ctx.AllocateOutput<T>("X@GRAD", x.dims()));
  if (want_y) std::copy(dy.begin(), dy.end(), ctx.AllocateOutput<T>("Y@GRAD", y.dims()));
}

}  // namespace

void RegisterMatMul(Registrar& r) {
  const OpSchema mul = OpSchema("mul")
           .Doc("Out = X * Y as matrices: X flattened to [prod(X.dims[:x_num_col_dims]), rest], Y to "
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
           .Doc("Out = alpha * op(X) * op(Y), op transposing when asked; leading dims are a batch "
                "(equal, or one side unbatched); a 1-D X is a row vector and a 1-D Y a column vector, "
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
  const OpSchema matmul_v2 = OpSchema("matmul_v2")
           .Doc("Out = op(X) * op(Y), op transposing when asked (Paddle 2.x's matmul); leading dims are a "
                "batch (equal, or one side unbatched); a 1-D X is a row vector and a 1-D Y a column vector, "
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

  const OpSchema fc = OpSchema("fc")
           .Doc("Out = activation(Input * W + Bias): Input flattened to [prod(Input.dims[:in_num_col_dims]), rest], "
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
