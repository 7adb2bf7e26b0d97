// Unary elementwise ops: Fluid's activations (relu, sigmoid, tanh, square, exp, log, sqrt,
// abs, relu6, leaky_relu, gelu, swish, hard_swish, hard_sigmoid, clip, silu, logsigmoid,
// tanh_shrink, softshrink, hard_shrink, thresholded_relu, brelu, soft_relu, elu, softplus,
// softsign, mish, selu, stanh, pow, reciprocal, rsqrt, expm1, log1p, log2, log10, sin, cos,
// floor, ceil, round, sign); scale (Out = scale * X + bias, or scale * (X + bias)); cast (Out = X
// converted to out_dtype); and their gradients. An activation's Out keeps X's LoD.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "activation_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

using namespace activation;  // the functors, one per op

template <class Op, class T> void Unary(KernelContext& ctx) {
  static const Loops<Op, T> loops = LoopsFor<Op, T>();
  const Op op(ctx);
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  ParallelFor(x.numel(), 2.0 * sizeof(T) * x.numel(),
              [&](int64_t, int64_t begin, int64_t end) { loops.forward(op, px + begin, po + begin, end - begin); });
  ShareLoD(ctx, "X", "Out");
}

// The forward slot a gradient op of kGradFrom `from` reads, and the slots it reads in all.
constexpr const char* GradValueSlot(GradFrom from) {
  return from == GradFrom::kX ? "X" : from == GradFrom::kOut ? "Out" : "Out@GRAD";
}
constexpr const char* GradInputs(GradFrom from) {
  return from == GradFrom::kX ? "X,Out@GRAD" : from == GradFrom::kOut ? "Out,Out@GRAD" : "Out@GRAD";
}

template <class Op, class T> void UnaryGrad(KernelContext& ctx) {
  static const Loops<Op, T> loops = LoopsFor<Op, T>();
  const Op op(ctx);
  Tensor v = ctx.Input(GradValueSlot(Op::kGradFrom));
  Tensor g = ctx.Input("Out@GRAD");
  const T* pv = v.data<T>();
  const T* pg = g.data<T>();
  if (g.numel() != v.numel()) {
    throw Error(std::string("Out@GRAD ") + DimsString(g.dims()) + " is not shaped like " +
                GradValueSlot(Op::kGradFrom) + " " + DimsString(v.dims()));
  }
  T* dx = ctx.AllocateOutput<T>("X@GRAD", v.dims_data(), v.ndim());
  ParallelFor(v.numel(), 3.0 * sizeof(T) * v.numel(), [&](int64_t, int64_t begin, int64_t end) {
    loops.backward(op, pv + begin, pg + begin, dx + begin, end - begin);
  });
}

// Registers `type` and its gradient; `attrs` adds the op's attributes to its schema (the
// gradient's schema gets them too, as its kernel reads them), and may declare the gradient
// again where it reads more than GradInputs.
template <class Op, class... Ts>
void AddUnary(
    Registrar& r, const char* type, const std::string& formula,
    OpSchema& (*attrs)(OpSchema&) = [](OpSchema& s) -> OpSchema& { return s; }) {
  const std::string grad = std::string(type) + "_grad";
  OpSchema schema = OpSchema(type)
                        .Doc("Out = " + formula + ", elementwise.")
                        .Input("X", "input")
                        .Output("Out", "result, shaped like X")
                        .KernelDtypeFrom("X")
                        .Grad(grad, GradInputs(Op::kGradFrom), "X");
  attrs(schema);
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<Ts...>(r, type, [](auto t) { return &Unary<Op, decltype(t)>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &UnaryGrad<Op, decltype(t)>; });
}

// clip of integers (no gradient): the limits converted to T as Paddle converts them.
template <class T> void ClipIntegers(KernelContext& ctx) {
  const Clip op(ctx);
  const T lo = static_cast<T>(op.lo), hi = static_cast<T>(op.hi);
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  ParallelFor(x.numel(), 2.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) po[i] = std::min(std::max(px[i], lo), hi);
  });
}

// pow of integers (no gradient), as Paddle's: the factor truncated to an integer exponent
// (FactorTensor's too), X multiplied by itself, wrapping on overflow as numpy's power does.
template <class T> void PowIntegers(KernelContext& ctx) {
  const double factor = Pow(ctx).factor;
  if (factor < 0) throw Error("an integer X takes a factor of 0 or more, got " + std::to_string(factor));
  const auto exponent = static_cast<uint64_t>(factor);
  using U = std::make_unsigned_t<T>;
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  ParallelFor(x.numel(), 2.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      U result = 1, base = static_cast<U>(px[i]);
      for (uint64_t e = exponent; e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      po[i] = static_cast<T>(result);
    }
  });
}

template <class T> void ScaleGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", g.dims_data(), g.ndim());
  const T scale = ScalarFromInput<T, float>(ctx, "ScaleTensor", "scale");
  ParallelFor(g.numel(), 2.0 * sizeof(T) * g.numel(), [&](int64_t, int64_t begin, int64_t end) {
    VecMap<T>(dx + begin, end - begin) = ConstVecMap<T>(pg + begin, end - begin) * scale;
  });
}

// X@GRAD = Out@GRAD converted back to X's dtype.
template <class From> void CastGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  VisitDataType<float, double>(x.dtype(), "cast_grad X", [&](auto to) {
    using To = decltype(to);
    VisitDataType<float, double>(g.dtype(), "cast_grad Out@GRAD", [&](auto from) {
      using G = decltype(from);
      const G* pg = g.data<G>();
      To* p = dx.Allocate<To>(g.dims());
      ParallelFor(g.numel(), static_cast<double>(sizeof(G) + sizeof(To)) * g.numel(),
                  [&](int64_t, int64_t begin, int64_t end) {
                    for (int64_t i = begin; i < end; ++i) p[i] = static_cast<To>(pg[i]);
                  });
    });
  });
}

// scale of SelectedRows X: SelectedRows of the same rows, their values scaled.
template <class T> void Scale(KernelContext& ctx) {
  const double scale = ScalarFromInput<double, float>(ctx, "ScaleTensor", "scale");
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T s = static_cast<T>(scale), b = static_cast<T>(bias);
  // Each element on its own (po may be px): the passes' team splits them.
  const auto write = [&](const T* px, T* po, int64_t n) {
    ParallelFor(n, 2.0 * sizeof(T) * n, [&](int64_t, int64_t begin, int64_t end) {
      if (after) {
        VecMap<T>(po + begin, end - begin) = ConstVecMap<T>(px + begin, end - begin) * s + b;
      } else {
        VecMap<T>(po + begin, end - begin) = (ConstVecMap<T>(px + begin, end - begin) + b) * s;
      }
    });
  };
  if (Variable xv = ctx.InputVar("X"); xv.IsSelectedRows()) {
    const Variable::SelectedRows sr = xv.selected_rows();
    // Out may be X: its rows and values are read before Out is remade.
    const std::vector<int64_t> rows(sr.rows, sr.rows + sr.count), dims = sr.value.dims();
    const std::vector<T> values(sr.value.data<T>(), sr.value.data<T>() + sr.value.numel());
    Tensor out = ctx.OutputVar("Out").SetSelectedRows(rows.data(), rows.size(), sr.height);
    write(values.data(), out.Allocate<T>(dims), static_cast<int64_t>(values.size()));
    return;
  }
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  write(px, ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim()), x.numel());
}

template <class From> void Cast(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const auto out_dtype = static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype"));
  const From* px = x.data<From>();
  const int64_t n = x.numel();
  // Each element converted on the passes' team (into scratch first when Out is X); fp16
  // through Eigen's half, rounding to nearest even.
  const auto convert = [&](auto to) {
    using To = decltype(to);
    WriteOutputBytes(ctx, "Out", {"X"}, out_dtype, x.dims(), [&](char* bytes) {
      To* po = reinterpret_cast<To*>(bytes);
      ParallelFor(n, static_cast<double>(sizeof(From) + sizeof(To)) * n, [&](int64_t, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          if constexpr (std::is_same_v<To, Eigen::half>) po[i] = Eigen::half(static_cast<float>(px[i]));
          else po[i] = static_cast<To>(px[i]);
        }
      });
    });
  };
  if (out_dtype == RILL_FP16) return convert(Eigen::half());
  VisitDataType<bool, int32_t, int64_t, float, double>(out_dtype, "cast out_dtype", convert);
}

}  // namespace

void RegisterActivation(Registrar& r) {
  AddUnary<Relu, float, double>(r, "relu", "max(X, 0)");
  AddUnary<Sigmoid, float, double>(r, "sigmoid", "1 / (1 + exp(-X))");
  AddUnary<Tanh, float, double>(r, "tanh", "tanh(X)");
  AddUnary<Square, RILL_MATH_NUMERIC_TYPES>(r, "square", "X * X");
  AddUnary<Exp, float, double>(r, "exp", "exp(X)");
  AddUnary<Log, float, double>(r, "log", "ln(X)");
  AddUnary<Sqrt, float, double>(r, "sqrt", "sqrt(X)");
  AddUnary<Abs, RILL_MATH_NUMERIC_TYPES>(r, "abs", "|X| (integers too; the most negative value stays itself)");
  AddUnary<Relu6, float, double>(r, "relu6", "min(max(X, 0), threshold)",
                                 [](OpSchema& s) -> OpSchema& { return s.Attr("threshold", 6.0, "the upper limit"); });
  AddUnary<LeakyRelu, float, double>(r, "leaky_relu", "X if X > 0, else alpha * X", [](OpSchema& s) -> OpSchema& {
    return s.Attr("alpha", 0.02, "the slope below 0");
  });
  AddUnary<Erf, float, double>(r, "erf", "erf(X), the error function");
  AddUnary<Gelu, float, double>(
      r, "gelu", "X * Phi(X), Phi the standard normal CDF (approximate: its tanh form)", [](OpSchema& s) -> OpSchema& {
        return s.Attr("approximate", false, "use 0.5 (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3)))");
      });
  AddUnary<Swish, float, double>(r, "swish", "X * sigmoid(beta * X)",
                                 [](OpSchema& s) -> OpSchema& { return s.Attr("beta", 1.0, "the sigmoid's scale"); });
  AddUnary<HardSwish, float, double>(r, "hard_swish", "X * min(max(X + offset, 0), threshold) / scale",
                                     [](OpSchema& s) -> OpSchema& {
                                       return s.Attr("threshold", 6.0, "the upper limit of X + offset")
                                           .Attr("scale", 6.0, "the divisor")
                                           .Attr("offset", 3.0, "added to X");
                                     });
  AddUnary<HardSigmoid, float, double>(
      r, "hard_sigmoid", "min(max(slope * X + offset, 0), 1)",
      [](OpSchema& s) -> OpSchema& { return s.Attr("slope", 0.2, "the slope").Attr("offset", 0.5, "the offset"); });
  AddUnary<Clip, float, double>(r, "clip", "min(max(X, min), max)", [](OpSchema& s) -> OpSchema& {
    return s.Input("Min", "the lower limit, one element; replaces min", RILL_SLOT_OPTIONAL)
        .Input("Max", "the upper limit, one element; replaces max", RILL_SLOT_OPTIONAL)
        .RequiredAttr("min", RILL_ATTR_FLOAT, "the lower limit")
        .RequiredAttr("max", RILL_ATTR_FLOAT, "the upper limit (at least min)")
        .Grad("clip_grad", "X,Min,Max,Out@GRAD", "X");
  });

  RegisterCpu<int32_t, int64_t>(r, "clip", [](auto t) { return &ClipIntegers<decltype(t)>; });
  AddUnary<Silu, float, double>(r, "silu", "X * sigmoid(X)");
  AddUnary<LogSigmoid, float, double>(r, "logsigmoid", "ln(1 / (1 + exp(-X)))");
  AddUnary<TanhShrink, float, double>(r, "tanh_shrink", "X - tanh(X)");
  AddUnary<SoftShrink, float, double>(r, "softshrink", "X - lambda if X > lambda, X + lambda if X < -lambda, else 0",
                                      [](OpSchema& s) -> OpSchema& { return s.Attr("lambda", 0.5, "the offset"); });
  AddUnary<HardShrink, float, double>(r, "hard_shrink", "X if |X| > threshold, else 0", [](OpSchema& s) -> OpSchema& {
    return s.Attr("threshold", 0.5, "the smallest |X| kept");
  });
  AddUnary<ThresholdedRelu, float, double>(
      r, "thresholded_relu", "X if X > threshold, else 0",
      [](OpSchema& s) -> OpSchema& { return s.Attr("threshold", 1.0, "the smallest X kept"); });
  AddUnary<BRelu, float, double>(r, "brelu", "min(max(X, t_min), t_max)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("t_min", 0.0, "the lower limit").Attr("t_max", 24.0, "the upper limit (at least t_min)");
  });
  AddUnary<SoftRelu, float, double>(
      r, "soft_relu", "ln(1 + exp(min(max(X, -threshold), threshold)))",
      [](OpSchema& s) -> OpSchema& { return s.Attr("threshold", 40.0, "X is clipped to [-threshold, threshold]"); });
  AddUnary<Elu, float, double>(r, "elu", "X if X > 0, else alpha * (exp(X) - 1)",
                               [](OpSchema& s) -> OpSchema& { return s.Attr("alpha", 1.0, "the scale below 0"); });
  AddUnary<Softplus, float, double>(
      r, "softplus", "ln(1 + exp(beta * X)) / beta, or X where beta * X > threshold", [](OpSchema& s) -> OpSchema& {
        return s.Attr("beta", 1.0, "the scale (not 0)").Attr("threshold", 20.0, "past it, Out is X");
      });
  AddUnary<Softsign, float, double>(r, "softsign", "X / (1 + |X|)");
  AddUnary<Mish, float, double>(
      r, "mish", "X * tanh(softplus(X)), softplus(X) = X if X > threshold else ln(1 + exp(X))",
      [](OpSchema& s) -> OpSchema& { return s.Attr("threshold", 20.0, "past it, softplus(X) is X"); });
  AddUnary<Selu, float, double>(r, "selu", "scale * (X if X > 0, else alpha * (exp(X) - 1))",
                                [](OpSchema& s) -> OpSchema& {
                                  return s.Attr("scale", 1.0507009873554804934193349852946, "the scale (positive)")
                                      .Attr("alpha", 1.6732632423543772848170429916717, "the scale below 0 (positive)");
                                });
  AddUnary<STanh, float, double>(r, "stanh", "scale_b * tanh(scale_a * X)", [](OpSchema& s) -> OpSchema& {
    return s.Attr("scale_a", 2.0 / 3.0, "the scale of X").Attr("scale_b", 1.7159, "the scale of Out");
  });
  AddUnary<Pow, float, double>(r, "pow", "X ^ factor", [](OpSchema& s) -> OpSchema& {
    return s.Input("FactorTensor", "the factor, one fp32 value; replaces the attribute", RILL_SLOT_OPTIONAL)
        .Attr("factor", 1.0, "the exponent")
        .Grad("pow_grad", "X,FactorTensor,Out@GRAD", "X");
  });
  RegisterCpu<int32_t, int64_t>(r, "pow", [](auto t) { return &PowIntegers<decltype(t)>; });
  AddUnary<Reciprocal, float, double>(r, "reciprocal", "1 / X");
  AddUnary<Rsqrt, float, double>(r, "rsqrt", "1 / sqrt(X)");
  AddUnary<Expm1, float, double>(r, "expm1", "exp(X) - 1");
  AddUnary<Log1p, float, double>(r, "log1p", "ln(1 + X)");
  AddUnary<LogBase<2>, float, double>(r, "log2", "log2(X)");
  AddUnary<LogBase<10>, float, double>(r, "log10", "log10(X)");
  AddUnary<Sin, float, double>(r, "sin", "sin(X)");
  AddUnary<Cos, float, double>(r, "cos", "cos(X)");
  AddUnary<Tan, float, double>(r, "tan", "tan(X)");
  AddUnary<Asin, float, double>(r, "asin", "asin(X)");
  AddUnary<Acos, float, double>(r, "acos", "acos(X)");
  AddUnary<Atan, float, double>(r, "atan", "atan(X)");
  AddUnary<Sinh, float, double>(r, "sinh", "sinh(X)");
  AddUnary<Cosh, float, double>(r, "cosh", "cosh(X)");
  AddUnary<Rounding<FloorStep>, float, double>(r, "floor", "the largest integer not above X (gradient 0)");
  AddUnary<Rounding<CeilStep>, float, double>(r, "ceil", "the smallest integer not below X (gradient 0)");
  AddUnary<Rounding<RoundStep>, float, double>(r, "round", "the nearest integer, halves away from 0 (gradient 0)");
  AddUnary<Rounding<SignStep>, float, double>(r, "sign", "1 for X > 0, -1 for X < 0, 0 for 0 (gradient 0)");

  const OpSchema scale =
      OpSchema("scale")
          .Doc(
              "Out = scale * X + bias (bias_after_scale) or scale * (X + bias); SelectedRows X gives SelectedRows of "
              "its rows.")
          .Input("X", "input, a tensor or SelectedRows")
          .Input("ScaleTensor", "the scale, one element; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "result, shaped like X")
          .Attr("scale", 1.0, "multiplier")
          .Attr("bias", 0.0, "offset")
          .Attr("bias_after_scale", true, "add bias after scaling (true) or before (false)")
          .KernelDtypeFrom("X")
          .Grad("scale_grad", "Out@GRAD,ScaleTensor", "X");
  r.Op(scale);
  r.Op(scale.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "scale", [](auto t) { return &Scale<decltype(t)>; });
  RegisterCpu<float, double>(r, "scale_grad", [](auto t) { return &ScaleGrad<decltype(t)>; });

  const OpSchema cast =
      OpSchema("cast")
          .Doc("Out = X converted to out_dtype (C++ conversion: floats truncate toward zero into ints).")
          .Input("X", "input")
          .Output("Out", "X as out_dtype")
          .Attr("in_dtype", int64_t{RILL_FP32}, "X's dtype (informational; X's actual dtype is used)")
          .Attr("out_dtype", int64_t{RILL_FP32}, "dtype of Out")
          .KernelDtypeFrom("X")
          .Grad("cast_grad", "X,Out@GRAD", "X");
  r.Op(cast);
  r.Op(cast.MakeGradSchema());
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "cast", [](auto t) { return &Cast<decltype(t)>; });
  RegisterCpu<float, double>(r, "cast_grad", [](auto t) { return &CastGrad<decltype(t)>; });
}

}  // namespace rill::math
