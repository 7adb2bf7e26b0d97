// Unary elementwise ops: relu, sigmoid, tanh, square; scale (Out = scale * X + bias, or
// scale * (X + bias)); cast (Out = X converted to out_dtype).
#include <cmath>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

struct Relu { template <class A> static auto Eval(const A& x) { return x.max(typename A::Scalar(0)); } };
struct Sigmoid {
  template <class A> static auto Eval(const A& x) { return (typename A::Scalar(1) + (-x).exp()).inverse(); }
};
struct Tanh { template <class A> static auto Eval(const A& x) { return x.tanh(); } };
struct Square { template <class A> static auto Eval(const A& x) { return x.square(); } };

template <class Op, class T>
void Unary(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.Output("Out").Allocate<T>(x.dims_data(), x.ndim());
  VecMap<T>(po, x.numel()) = Op::Eval(ConstVecMap<T>(px, x.numel()));
}

template <class Op, class... Ts>
void AddUnary(Registrar& r, const char* type, const char* formula) {
  r.Op(OpSchema(type)
           .Doc(std::string("Out = ") + formula + ", elementwise.")
           .Input("X", "input")
           .Output("Out", "result, shaped like X")
           .KernelDtypeFrom("X"));
  RegisterCpu<Ts...>(r, type, [](auto t) { return &Unary<Op, decltype(t)>; });
}

template <class T>
void Scale(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const double scale = ctx.Attr<float>("scale");
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T* px = x.data<T>();
  T* po = ctx.Output("Out").Allocate<T>(x.dims_data(), x.ndim());
  const T s = static_cast<T>(scale), b = static_cast<T>(bias);
  if (after) {
    VecMap<T>(po, x.numel()) = ConstVecMap<T>(px, x.numel()) * s + b;
  } else {
    VecMap<T>(po, x.numel()) = (ConstVecMap<T>(px, x.numel()) + b) * s;
  }
}

template <class From>
void Cast(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const auto out_dtype = static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype"));
  const From* px = x.data<From>();
  Tensor out = ctx.Output("Out");
  VisitDataType<bool, int32_t, int64_t, float, double>(out_dtype, "cast out_dtype", [&](auto to) {
    using To = decltype(to);
    // Out may be X: read everything before the allocation can replace X's memory.
    std::vector<To> converted(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) converted[i] = static_cast<To>(px[i]);
    To* po = out.Allocate<To>(x.dims());
    std::copy(converted.begin(), converted.end(), po);
  });
}

}  // namespace

void RegisterActivation(Registrar& r) {
  AddUnary<Relu, float, double>(r, "relu", "max(X, 0)");
  AddUnary<Sigmoid, float, double>(r, "sigmoid", "1 / (1 + exp(-X))");
  AddUnary<Tanh, float, double>(r, "tanh", "tanh(X)");
  AddUnary<Square, RILL_MATH_NUMERIC_TYPES>(r, "square", "X * X");

  r.Op(OpSchema("scale")
           .Doc("Out = scale * X + bias (bias_after_scale) or scale * (X + bias).")
           .Input("X", "input")
           .Output("Out", "result, shaped like X")
           .Attr("scale", 1.0, "multiplier")
           .Attr("bias", 0.0, "offset")
           .Attr("bias_after_scale", true, "add bias after scaling (true) or before (false)")
           .KernelDtypeFrom("X"));
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "scale", [](auto t) { return &Scale<decltype(t)>; });

  r.Op(OpSchema("cast")
           .Doc("Out = X converted to out_dtype (C++ conversion: floats truncate toward zero into ints).")
           .Input("X", "input")
           .Output("Out", "X as out_dtype")
           .Attr("in_dtype", int64_t{RILL_FP32}, "X's dtype (informational; X's actual dtype is used)")
           .Attr("out_dtype", int64_t{RILL_FP32}, "dtype of Out")
           .KernelDtypeFrom("X"));
  RegisterCpu<bool, RILL_MATH_NUMERIC_TYPES>(r, "cast", [](auto t) { return &Cast<decltype(t)>; });
}

}  // namespace rill::math
