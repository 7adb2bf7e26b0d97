// Comparisons (Out: bool = X op Y, with Fluid's broadcasting), logical ops on bool tensors
// (logical_not is unary), and bitwise ops on integer and bool tensors (Out = X op Y of X's
// type, with numpy's broadcasting; bitwise_not is unary), as Paddle's.
#include "broadcast.h"
#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Out (of type R) = f(X, Y), elementwise with broadcasting, and its scalar path.
template <class T, class R, class F> class Binary {
 public:
  explicit Binary(const OpInfo& op) : args_(op) {}
  void Compute(KernelContext& ctx) { BinaryBroadcast<T, R>(ctx, args_, F{}); }
  bool Scalar(const RillScalar* in, RillScalar* out) const { return ScalarBinary<T, R>(in, out, F{}); }

 private:
  const BinaryArgs args_;
};
template <class T, class F> using Compare = Binary<T, bool, F>;
template <class T, class F> using Bitwise = Binary<T, T, F>;  // Out of X's type

struct Less {
  template <class T> bool operator()(T a, T b) const { return a < b; }
};
struct LessEq {
  template <class T> bool operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  template <class T> bool operator()(T a, T b) const { return a > b; }
};
struct GreaterEq {
  template <class T> bool operator()(T a, T b) const { return a >= b; }
};
struct Eq {
  template <class T> bool operator()(T a, T b) const { return a == b; }
};
struct NotEq {
  template <class T> bool operator()(T a, T b) const { return a != b; }
};
struct BitAnd {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct BitOr {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct BitXor {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
struct And {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  bool operator()(bool a, bool b) const { return a != b; }
};

#define RILL_MATH_BITWISE_TYPES bool, uint8_t, int8_t, int16_t, int32_t, int64_t

template <class F> void AddBitwise(Registrar& r, const char* type, const char* what) {
  r.Op(OpSchema(type)
           .Doc(std::string("Out = X ") + what +
                " Y, bit by bit, elementwise with numpy's broadcasting; bool and integer tensors. As Paddle's.")
           .Input("X", "bool or integer tensor")
           .Input("Y", "a tensor of X's type, broadcast with X")
           .Output("Out", "X's type, of the broadcast shape")
           .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end, numpy's rule)")
           .KernelDtypeFrom("X"));
  RegisterCpuStateful<RILL_MATH_BITWISE_TYPES>(r, type, [](auto t) { return TypeTag<Bitwise<decltype(t), F>>{}; });
}

// Out = ~X: every bit of each element flipped (bool: not), as a byte-wise xor.
void BitwiseNot(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const size_t bytes = static_cast<size_t>(x.numel()) * DataTypeSize(x.dtype());
  const auto* px = static_cast<const uint8_t*>(x.raw_data());
  auto* po = static_cast<uint8_t*>(ctx.Output("Out").Allocate(x.dtype(), x.dims()));
  const uint8_t mask = x.dtype() == RILL_BOOL ? 1 : 0xff;  // a bool is one byte holding 0 or 1
  const auto flip = memory::XorBytesFor();
  const auto n = static_cast<int64_t>(bytes);
  ParallelFor(n, 2.0 * static_cast<double>(n),
              [&](int64_t, int64_t begin, int64_t end) { flip(px + begin, po + begin, end - begin, mask); });
}

template <class F> void AddCompare(Registrar& r, const char* type, const char* what) {
  r.Op(OpSchema(type)
           .Doc(std::string("Out = X ") + what +
                " Y, elementwise with Fluid's broadcasting; Out is bool, shaped like X.")
           .Input("X", "left operand")
           .Input("Y", "right operand, broadcast to X")
           .Output("Out", "bool result")
           .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end)")
           .Attr("force_cpu", false, "keep Out on the CPU")
           .KernelDtypeFrom("X"));
  RegisterCpuStateful<RILL_MATH_NUMERIC_TYPES>(r, type, [](auto t) { return TypeTag<Compare<decltype(t), F>>{}; });
  r.StatefulKernel<Compare<bool, F>>(type, RILL_CPU, RILL_BOOL);  // false < true, as Paddle's
}

template <class F> void AddLogical(Registrar& r, const char* type, const char* what) {
  r.Op(OpSchema(type)
           .Doc(std::string("Out = X ") + what + " Y on bool tensors, elementwise with Fluid's broadcasting.")
           .Input("X", "bool tensor")
           .Input("Y", "bool tensor, broadcast to X")
           .Output("Out", "bool result, shaped like X")
           .Attr("axis", int64_t{-1}, "where Y's dims start in X's (-1: aligned to the end)")
           .KernelDtypeFrom("X"));
  r.StatefulKernel<Compare<bool, F>>(type, RILL_CPU, RILL_BOOL);
}

void LogicalNot(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const bool* px = x.data<bool>();
  const int64_t n = x.numel();
  bool* po = ctx.AllocateOutput<bool>("Out", x.dims_data(), x.ndim());
  // A bool is one byte holding 0 or 1: not is xor 1.
  const auto flip = memory::XorBytesFor();
  ParallelFor(n, 2.0 * n, [&](int64_t, int64_t begin, int64_t end) {
    flip(reinterpret_cast<const uint8_t*>(px) + begin, reinterpret_cast<uint8_t*>(po) + begin, end - begin, 1);
  });
}

}  // namespace

void RegisterCompare(Registrar& r) {
  AddCompare<Less>(r, "less_than", "<");
  AddCompare<LessEq>(r, "less_equal", "<=");
  AddCompare<Greater>(r, "greater_than", ">");
  AddCompare<GreaterEq>(r, "greater_equal", ">=");
  AddCompare<Eq>(r, "equal", "==");
  AddCompare<NotEq>(r, "not_equal", "!=");
  AddLogical<And>(r, "logical_and", "and");
  AddLogical<Or>(r, "logical_or", "or");
  AddLogical<Xor>(r, "logical_xor", "xor");
  r.Op(OpSchema("logical_not")
           .Doc("Out = not X on a bool tensor, elementwise.")
           .Input("X", "bool tensor")
           .Output("Out", "bool result")
           .KernelDtypeFrom("X"));
  r.Kernel("logical_not", RILL_CPU, RILL_BOOL, &LogicalNot);
  AddBitwise<BitAnd>(r, "bitwise_and", "&");
  AddBitwise<BitOr>(r, "bitwise_or", "|");
  AddBitwise<BitXor>(r, "bitwise_xor", "^");
  r.Op(OpSchema("bitwise_not")
           .Doc("Out = ~X, bit by bit (bool: not X), elementwise; bool and integer tensors. As Paddle's.")
           .Input("X", "bool or integer tensor")
           .Output("Out", "X's type and shape")
           .KernelDtypeFrom("X"));
  for (const RillDataType t : {RILL_BOOL, RILL_UINT8, RILL_INT8, RILL_INT16, RILL_INT32, RILL_INT64}) {
    r.Kernel("bitwise_not", RILL_CPU, t, &BitwiseNot);
  }
}

}  // namespace rill::math
