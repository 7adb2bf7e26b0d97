// Tensors an op makes from its attributes and its inputs' shapes, with Fluid's contracts:
// fill_constant (a tensor of `shape` and `dtype` filled with `value`); fill_any_like and
// fill_zeros_like (the same, shaped like X: the backward pass's seeds);
// fill_constant_batch_size_like (`shape` with one dim taken from Input's); assign_value
// (the values listed in the attribute of its dtype); shape (Input's dims); is_empty
// (whether X holds no element); range (Start, Start + Step, ... short of End).
#include <cmath>
#include <limits>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// Reads its attributes once per op instance: fills run in every loop step. The shape and
// value may come as tensors instead (ShapeTensor, ShapeTensorList, ValueTensor), read each
// run; `str_value`, when set, is the value (Paddle keeps large and int64 values exactly
// there).
template <class T> class FillConstant {
 public:
  explicit FillConstant(const OpInfo& op)
      : out_(op.OutputSlot("Out")),
        shape_(op.Attr<std::vector<int64_t>>("shape")),
        value_(ValueOf(op)),
        from_inputs_(op.InputCount("ShapeTensor") + op.InputCount("ShapeTensorList") + op.InputCount("ValueTensor") >
                     0) {}
  // A loop's or a go block's constant one.
  bool Scalar(const RillScalar*, RillScalar* out) const {
    if (!scalar_ || from_inputs_) return false;
    WriteScalar<T>(out[0], value_);
    return true;
  }
  void Compute(KernelContext& ctx) {
    std::vector<int64_t> shape = shape_;
    T value = value_;
    if (from_inputs_) {
      shape = IntsFromInputs(ctx, "ShapeTensor", "ShapeTensorList", "shape");
      if (ctx.HasInput("ValueTensor")) value = static_cast<T>(ScalarOf(ctx.Input("ValueTensor"), "ValueTensor"));
    }
    Tensor out = OutputValue(ctx, out_);
    T* p = out.Allocate<T>(shape);
    ParallelFill(p, out.numel(), value);
  }

 private:
  static T ValueOf(const OpInfo& op) {
    const std::string text = op.Attr<std::string>("str_value");
    if (text.empty()) return static_cast<T>(static_cast<double>(op.Attr<float>("value")));
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      try {
        size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used == text.size()) return static_cast<T>(v);
      } catch (const std::exception&) {}
    }
    try {
      return static_cast<T>(std::stod(text));
    } catch (const std::exception&) {
      throw Error("str_value '" + text + "' is not a number");
    }
  }

  const Slot out_;
  const std::vector<int64_t> shape_;
  const T value_;
  const bool from_inputs_;
  const bool scalar_ = shape_.size() == 1 && shape_[0] == 1;
};

// Out = a tensor shaped like X filled with `value`, of `dtype` (-1: X's dtype). A value
// the dtype cannot hold (NaN, or beyond its range, as an overflowing FLOAT's infinity is)
// is an error, as in Paddle.
template <class T> void FillLike(KernelContext& ctx, double value) {
  const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
  const double highest = static_cast<double>(std::numeric_limits<T>::max());
  if (!(value >= lowest && value <= highest)) {
    throw Error("value " + std::to_string(value) + " is not a value of " + DataTypeName(DataTypeOf<T>::value) +
                " (from " + std::to_string(lowest) + " to " + std::to_string(highest) + ")");
  }
  Tensor x = ctx.Input("X");
  ParallelFill(ctx.AllocateOutput<T>("Out", x.dims_data(), x.ndim()), x.numel(), static_cast<T>(value));
}

template <bool kZeros> void FillAnyLike(KernelContext& ctx) {
  const int32_t x_dtype = ctx.Input("X").dtype();
  const int64_t want = kZeros ? -1 : ctx.Attr<int64_t>("dtype");
  const double value = kZeros ? 0.0 : ctx.Attr<float>("value");
  VisitDataType<bool, int32_t, int64_t, float, double>(want < 0 ? x_dtype : static_cast<int32_t>(want),
                                                       ctx.op().type().c_str(),
                                                       [&](auto t) { FillLike<decltype(t)>(ctx, value); });
}

template <class T> void FillBatchSizeLike(KernelContext& ctx) {
  const std::vector<int64_t> shape = BatchSizeLikeShape(ctx);
  T* p = ctx.Output("Out").Allocate<T>(shape);
  ParallelFill(p, CheckedCount(shape, sizeof(T), "shape"),
               static_cast<T>(static_cast<double>(ctx.Attr<float>("value"))));
}

// assign_value: Out = the values of the attribute that holds its dtype's (bool_values,
// int32_values, int64_values or fp32_values, Fluid's four), as many as `shape` has.
template <class T, class A> void AssignValue(KernelContext& ctx, const char* attr) {
  const std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  const std::vector<A> values = ctx.Attr<std::vector<A>>(attr);
  const int64_t n = CheckedCount(shape, sizeof(T), "shape");
  if (static_cast<int64_t>(values.size()) != n) {
    throw Error(std::string(attr) + " holds " + std::to_string(values.size()) + " values, shape " + DimsString(shape) +
                " takes " + std::to_string(n));
  }
  T* p = ctx.Output("Out").Allocate<T>(shape);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(values[static_cast<size_t>(i)]);
}

void AssignValueOfDtype(KernelContext& ctx) {
  switch (ctx.Attr<int64_t>("dtype")) {
    case RILL_BOOL: return AssignValue<bool, int64_t>(ctx, "bool_values");
    case RILL_INT32: return AssignValue<int32_t, int64_t>(ctx, "int32_values");
    case RILL_INT64: return AssignValue<int64_t, int64_t>(ctx, "int64_values");
    case RILL_FP32: return AssignValue<float, float>(ctx, "fp32_values");
    default:
      throw Error("dtype " + std::to_string(ctx.Attr<int64_t>("dtype")) +
                  " is none of BOOL (0), INT32 (2), INT64 (3) and FP32 (5)");
  }
}

void Shape(KernelContext& ctx) {
  Variable in = ctx.InputVar("Input");
  const std::vector<int64_t> d = in.IsSelectedRows() ? in.selected_rows().value.dims() : in.tensor().dims();
  int32_t* p = ctx.AllocateOutput<int32_t>("Out", {static_cast<int64_t>(d.size())});
  for (size_t i = 0; i < d.size(); ++i) p[i] = static_cast<int32_t>(d[i]);
}

void IsEmpty(KernelContext& ctx) { *ctx.AllocateOutput<bool>("Out", {1}) = ctx.Input("X").numel() == 0; }

// One value of a [1] input of range, as T.
template <class T> T RangeValue(KernelContext& ctx, const char* slot) {
  Tensor t = ctx.Input(slot);
  if (t.numel() != 1) throw Error(std::string(slot) + " must hold one value, not " + DimsString(t.dims()));
  return t.data<T>()[0];
}

template <class T> void Range(KernelContext& ctx) {
  const T start = RangeValue<T>(ctx, "Start"), end = RangeValue<T>(ctx, "End"), step = RangeValue<T>(ctx, "Step");
  if (step == T(0)) throw Error("Step is 0");
  // ceil(|end - start| / |step|) values, none when step points away from end.
  const double span = static_cast<double>(end) - static_cast<double>(start);
  const double count = std::ceil(span / static_cast<double>(step));
  if (!(count < 1e12))
    throw Error("range from Start to End by Step has too many values (" + std::to_string(count) + ")");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  T* p = ctx.AllocateOutput<T>("Out", {n});
  // An index that fits int32_t converts to T as the int64_t would (exactly, or rounded the
  // same way), and in vector instructions the int64_t's conversion lacks before AVX-512.
  ParallelFor(n, static_cast<double>(sizeof(T)) * n, [&](int64_t, int64_t begin, int64_t end_at) {
    if (end_at <= std::numeric_limits<int32_t>::max()) {
      for (auto i = static_cast<int32_t>(begin); i < static_cast<int32_t>(end_at); ++i) {
        p[i] = static_cast<T>(start + static_cast<T>(i) * step);
      }
    } else {
      for (int64_t i = begin; i < end_at; ++i) p[i] = static_cast<T>(start + static_cast<T>(i) * step);
    }
  });
}

}  // namespace

void RegisterFillConstant(Registrar& r) {
  r.Op(OpSchema("fill_any_like")
           .Doc("Out = a tensor shaped like X with every element `value`, of `dtype` (-1: X's dtype).")
           .Input("X", "the tensor whose shape Out takes")
           .Output("Out", "the filled tensor")
           .Attr("value", 0.0, "the value of every element")
           .Attr("dtype", int64_t{-1}, "element type of Out (-1: X's)")
           .KernelDtypeFrom("X"));
  r.Kernel("fill_any_like", RILL_CPU, RILL_ANY_DTYPE, &FillAnyLike<false>);
  r.Op(OpSchema("fill_zeros_like")
           .Doc("Out = zeros shaped like X, of X's dtype.")
           .Input("X", "the tensor whose shape and dtype Out takes")
           .Output("Out", "zeros")
           .KernelDtypeFrom("X"));
  r.Kernel("fill_zeros_like", RILL_CPU, RILL_ANY_DTYPE, &FillAnyLike<true>);

  r.Op(OpSchema("fill_constant")
           .Doc("Out = a tensor of `shape` and `dtype` with every element `value`; the shape and value may "
                "come as tensors instead. An Out holding SelectedRows gets the tensor as its value.")
           .Input("ShapeTensor", "the shape, a 1-D int32/int64 tensor", RILL_SLOT_OPTIONAL)
           .Input("ShapeTensorList", "the shape, one 1-element int32/int64 tensor per dim",
                  RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Input("ValueTensor", "the value, one element", RILL_SLOT_OPTIONAL)
           .Output("Out", "the filled tensor")
           .Attr("shape", std::vector<int64_t>{}, "dimensions of Out")
           .Attr("dtype", int64_t{RILL_FP32}, "element type (framework.proto VarType number)")
           .Attr("value", 0.0, "the value of every element")
           .Attr("str_value", "", "the value as text; when set, it is the value (exact for large and int64 values)")
           .Attr("force_cpu", false, "keep Out on the CPU")
           .KernelDtypeFrom("attr:dtype"));
  r.StatefulKernel<FillConstant<float>>("fill_constant", RILL_CPU, RILL_FP32);
  r.StatefulKernel<FillConstant<double>>("fill_constant", RILL_CPU, RILL_FP64);
  r.StatefulKernel<FillConstant<int32_t>>("fill_constant", RILL_CPU, RILL_INT32);
  r.StatefulKernel<FillConstant<int64_t>>("fill_constant", RILL_CPU, RILL_INT64);
  r.StatefulKernel<FillConstant<bool>>("fill_constant", RILL_CPU, RILL_BOOL);

  r.Op(OpSchema("fill_constant_batch_size_like")
           .Doc("Out = a tensor of `shape`, its dim output_dim_idx replaced by Input's dim input_dim_idx (the "
                "batch size), with every element `value`.")
           .Input("Input", "the tensor whose dim Out takes")
           .Output("Out", "the filled tensor")
           .Attr("shape", std::vector<int64_t>{}, "dimensions of Out, one of them replaced")
           .Attr("dtype", int64_t{RILL_FP32}, "element type (framework.proto VarType number)")
           .Attr("value", 0.0, "the value of every element")
           .Attr("input_dim_idx", int64_t{0}, "the dim of Input taken")
           .Attr("output_dim_idx", int64_t{0}, "the dim of Out it replaces")
           .Attr("force_cpu", false, "keep Out on the CPU")
           .KernelDtypeFrom("attr:dtype"));
  RegisterCpu<float, double, int32_t, int64_t, bool>(r, "fill_constant_batch_size_like",
                                                     [](auto t) { return &FillBatchSizeLike<decltype(t)>; });

  r.Op(OpSchema("assign_value")
           .Doc("Out = a tensor of `shape` and `dtype` holding the values listed in the attribute of that dtype.")
           .Output("Out", "the tensor")
           .Attr("shape", std::vector<int64_t>{}, "dimensions of Out")
           .RequiredAttr("dtype", RILL_ATTR_INT, "BOOL (0), INT32 (2), INT64 (3) or FP32 (5)")
           .Attr("bool_values", std::vector<int64_t>{}, "the values of a BOOL Out")
           .Attr("int32_values", std::vector<int64_t>{}, "the values of an INT32 Out")
           .Attr("int64_values", std::vector<int64_t>{}, "the values of an INT64 Out")
           .Attr("fp32_values", std::vector<float>{}, "the values of an FP32 Out"));
  r.Kernel("assign_value", RILL_CPU, RILL_ANY_DTYPE, &AssignValueOfDtype);

  r.Op(OpSchema("shape")
           .Doc("Out = the dims of Input, int32 [rank] (SelectedRows: of their value).")
           .Input("Input", "any tensor, or SelectedRows")
           .Output("Out", "its dims"));
  r.Kernel("shape", RILL_CPU, RILL_ANY_DTYPE, &Shape);
  r.Op(OpSchema("is_empty")
           .Doc("Out = whether X holds no element, bool [1] (a beam search whose every source has ended).")
           .Input("X", "any tensor")
           .Output("Out", "bool [1]"));
  r.Kernel("is_empty", RILL_CPU, RILL_ANY_DTYPE, &IsEmpty);

  r.Op(OpSchema("range")
           .Doc("Out = Start, Start + Step, ... while short of End (1-D; empty when Step points away from End).")
           .Input("Start", "the first value, [1]")
           .Input("End", "the bound, not reached, [1] of Start's dtype")
           .Input("Step", "the increment (not 0), [1] of Start's dtype")
           .Output("Out", "the values")
           .KernelDtypeFrom("Start"));
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "range", [](auto t) { return &Range<decltype(t)>; });
}

}  // namespace rill::math
