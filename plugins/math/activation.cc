// Unary elementwise ops: relu, sigmoid, tanh, square; scale (Out = scale * X + bias, or
// scale * (X + bias)); cast (Out = X converted to out_dtype); and their gradients.
#include <cmath>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// Eval: the forward expression. Grad(v, g): X@GRAD from the incoming gradient g and v,
// which is Out for ops whose derivative is cheapest from the output (kGradFromOut) and
// X otherwise.
struct Relu {
  static constexpr bool kGradFromOut = true;
  template <class A> static auto Eval(const A& x) { return x.max(typename A::Scalar(0)); }
  template <class A, class B> static auto Grad(const A& out, const B& g) {
    return (out > typename A::Scalar(0)).select(g, typename A::Scalar(0));
  }
};
struct Sigmoid {
  static constexpr bool kGradFromOut = true;
  template <class A> static auto Eval(const A& x) { return (typename A::Scalar(1) + (-x).exp()).inverse(); }
  template <class A, class B> static auto Grad(const A& out, const B& g) {
    return g * out * (typename A::Scalar(1) - out);
  }
};
struct Tanh {
  static constexpr bool kGradFromOut = true;
  template <class A> static auto Eval(const A& x) { return x.tanh(); }
  template <class A, class B> static auto Grad(const A& out, const B& g) {
    return g * (typename A::Scalar(1) - out.square());
  }
};
struct Square {
  static constexpr bool kGradFromOut = false;
  template <class A> static auto Eval(const A& x) { return x.square(); }
  template <class A, class B> static auto Grad(const A& x, const B& g) { return typename A::Scalar(2) * x * g; }
};

template <class Op, class T>
void Unary(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
  VecMap<T>(po, x.numel()) = Op::Eval(ConstVecMap<T>(px, x.numel()));
}

template <class Op, class T>
void UnaryGrad(KernelContext& ctx) {
  Tensor v = ctx.Input(Op::kGradFromOut ? "Out" : "X");
  Tensor g = ctx.Input("Out@GRAD");
  const T* pv = v.data<T>();
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", v.dims_data(), v.ndim());
  VecMap<T>(dx, v.numel()) = Op::Grad(ConstVecMap<T>(pv, v.numel()), ConstVecMap<T>(pg, g.numel()));
}

template <class Op, class... Ts>
void AddUnary(Registrar& r, const char* type, const char* formula) {
  const std::string grad = std::string(type) + "_grad";
  const OpSchema schema = OpSchema(type)
      .Doc(std::string("Out = ") + formula + ", elementwise.")
      .Input("X", "input")
      .Output("Out", "result, shaped like X")
      .KernelDtypeFrom("X")
      .Grad(grad, Op::kGradFromOut ? "Out,Out@GRAD" : "X,Out@GRAD", "X");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<Ts...>(r, type, [](auto t) { return &Unary<Op, decltype(t)>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &UnaryGrad<Op, decltype(t)>; });
}

template <class T>
void ScaleGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", g.dims_data(), g.ndim());
  VecMap<T>(dx, g.numel()) = ConstVecMap<T>(pg, g.numel()) * static_cast<T>(ctx.Attr<float>("scale"));
}

// X@GRAD = Out@GRAD converted back to X's dtype.
template <class From>
void CastGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  Tensor dx = ctx.Output("X@GRAD");
  VisitDataType<float, double>(x.dtype(), "cast_grad X", [&](auto to) {
    using To = decltype(to);
    VisitDataType<float, double>(g.dtype(), "cast_grad Out@GRAD", [&](auto from) {
      using G = decltype(from);
      const G* pg = g.data<G>();
      To* p = dx.Allocate<To>(g.dims());
      for (int64_t i = 0; i < g.numel(); ++i) p[i] = static_cast<To>(pg[i]);
    });
  });
}

template <class T>
void Scale(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const double scale = ctx.Attr<float>("scale");
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T* px = x.data<T>();
  T* po = ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim());
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

  const OpSchema scale = OpSchema("scale")
      .Doc("Out = scale * X + bias (bias_after_scale) or scale * (X + bias).")
      .Input("X", "input")
      .Output("Out", "result, shaped like X")
      .Attr("scale", 1.0, "multiplier")
      .Attr("bias", 0.0, "offset")
      .Attr("bias_after_scale", true, "add bias after scaling (true) or before (false)")
      .KernelDtypeFrom("X")
      .Grad("scale_grad", "Out@GRAD", "X");
  r.Op(scale);
  r.Op(scale.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "scale", [](auto t) { return &Scale<decltype(t)>; });
  RegisterCpu<float, double>(r, "scale_grad", [](auto t) { return &ScaleGrad<decltype(t)>; });

  const OpSchema cast = OpSchema("cast")
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
