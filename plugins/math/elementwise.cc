// elementwise_{add,sub,mul,div,max,min,pow,mod,floordiv}: Out = X op Y with Paddle's
// broadcasting (see broadcast.h), and their gradients (none for mod and floordiv, as in
// Fluid). Same-shape operands of the vectorizable ops are one pass of a loop compiled per
// instruction set (binary_loops.h); everything else walks a broadcast plan.
#include <cmath>
#include <type_traits>

#include "binary_loops.h"
#include "broadcast.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "pow_loops.h"

namespace rill::math {
namespace {

// Each op: Apply (forward); kLoop, the same-shape loop of binary_loops.h it runs (or Run,
// a loop of its own); and the partial derivatives times the incoming gradient g: DX(x, y,
// g), DY(x, y, g).
struct Add {
  static constexpr Binary kLoop = Binary::kAdd;
  static constexpr bool kDxIsG = true, kDyIsG = true;  // DX (DY) returns g itself
  template <class T> static T Apply(T a, T b) { return ApplyBinary<kLoop>(a, b); }
  template <class T> static T DX(T, T, T g) { return g; }
  template <class T> static T DY(T, T, T g) { return g; }
};
struct Sub {
  static constexpr Binary kLoop = Binary::kSub;
  static constexpr bool kDxIsG = true;
  template <class T> static T Apply(T a, T b) { return ApplyBinary<kLoop>(a, b); }
  template <class T> static T DX(T, T, T g) { return g; }
  template <class T> static T DY(T, T, T g) { return -g; }
};
struct Mul {
  static constexpr Binary kLoop = Binary::kMul;
  template <class T> static T Apply(T a, T b) { return ApplyBinary<kLoop>(a, b); }
  template <class T> static T DX(T, T y, T g) { return g * y; }
  template <class T> static T DY(T x, T, T g) { return g * x; }
};
// Integer quotients for b != 0: truncated (IntDiv, C's) and rounded down (IntFloorDiv,
// Python's). Both are defined for the one pair C++ leaves undefined (and x86 traps on): the
// most negative value by -1 wraps to the dividend, as Go and Java define it.
//
// Where |a| < 2^53 (every 32-bit dividend) they come from a double division: a converts
// exactly, and b does too or is rounded to a magnitude above |a| (quotient 0 either way).
// When a / b is not an integer, its distance to the nearest integer is at least 1 / |b|,
// while rounding moves the quotient by at most |a / b| 2^-53 < 1 / |b|: the rounded quotient
// stays strictly between the same two integers, so truncating or flooring it gives the
// exact result; an integer quotient is exact. A double division pipelines where an integer
// division does not, and flooring it needs no remainder.
constexpr double kExactQuotientBelow = 9007199254740992.0;  // 2^53
template <class T> [[gnu::always_inline]] inline bool QuotientInDouble(T a) {
  if constexpr (sizeof(T) < 8) {
    return true;
  } else {
    const double d = static_cast<double>(a);  // rounded, so at least 2^53 in magnitude where a is
    return d < kExactQuotientBelow && d > -kExactQuotientBelow;
  }
}
template <class T> [[gnu::always_inline]] inline T WideIntDiv(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
  }
  return a / b;
}
template <class T> [[gnu::always_inline]] inline T IntDiv(T a, T b) {
  if (QuotientInDouble(a)) return static_cast<T>(static_cast<double>(a) / static_cast<double>(b));
  return WideIntDiv(a, b);
}
template <class T> [[gnu::always_inline]] inline T IntFloorDiv(T a, T b) {
  if (QuotientInDouble(a)) {
    const double q = static_cast<double>(a) / static_cast<double>(b);
    const T t = static_cast<T>(q);  // truncated: one less where q is negative and not whole
    return static_cast<T>(t - static_cast<T>(q < static_cast<double>(t)));
  }
  // The truncated quotient, less one where the remainder is nonzero and of b's opposite sign.
  using U = std::make_unsigned_t<T>;
  const T q = WideIntDiv(a, b);
  const T r = static_cast<T>(static_cast<U>(a) - static_cast<U>(q) * static_cast<U>(b));
  return static_cast<T>(q - static_cast<T>(r != 0 && (r < 0) != (b < 0)));
}

struct Div {
  static constexpr Binary kLoop = Binary::kDiv;  // floats only: integers go through Apply
  template <class T> static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return IntDiv(a, b);
    else return ApplyBinary<kLoop>(a, b);
  }
  template <class T> static T DX(T, T y, T g) { return g / y; }
  template <class T> static T DY(T x, T y, T g) { return -g * x / (y * y); }
};
struct Max {
  static constexpr Binary kLoop = Binary::kMax;
  template <class T> static T Apply(T a, T b) { return ApplyBinary<kLoop>(a, b); }
  template <class T> static T DX(T x, T y, T g) { return x > y ? g : T(0); }
  template <class T> static T DY(T x, T y, T g) { return x > y ? T(0) : g; }
};
struct Min {
  static constexpr Binary kLoop = Binary::kMin;
  template <class T> static T Apply(T a, T b) { return ApplyBinary<kLoop>(a, b); }
  template <class T> static T DX(T x, T y, T g) { return x < y ? g : T(0); }
  template <class T> static T DY(T x, T y, T g) { return x < y ? T(0) : g; }
};
struct Pow {
  template <class T> static T Apply(T a, T b) {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
  template <class T> static T DX(T x, T y, T g) { return g * y * std::pow(x, y - T(1)); }
  template <class T> static T DY(T x, T y, T g) { return g * std::pow(x, y) * std::log(x); }
  // Same-shape runs in single precision: pow_loops.h's loop.
  static void Run(const float* x, const float* y, float* out, int64_t n) { PowLoopFor()(x, y, out, n); }
};

// Whether Op has a Run over same-shape runs of T (Run(x, y, out, n)), or a loop of
// binary_loops.h (kLoop): used in place of Apply there.
template <class Op, class T, class = void> constexpr bool kHasRun = false;
template <class Op, class T>
constexpr bool kHasRun<Op, T,
                       std::void_t<decltype(Op::Run(static_cast<const T*>(nullptr), static_cast<const T*>(nullptr),
                                                    static_cast<T*>(nullptr), int64_t{}))>> = true;
template <class Op, class = void> constexpr bool kHasLoop = false;
template <class Op> constexpr bool kHasLoop<Op, std::void_t<decltype(Op::kLoop)>> = true;

// mod: the remainder with the divisor's sign (Python's %, Paddle's), for integers
// a - floor(a / b) b in wrapping arithmetic; floordiv: the quotient rounded down (Python's
// //). Integers by 0 are an error (Elementwise::Compute).
struct Mod {
  template <class T> static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(IntFloorDiv(a, b)) * static_cast<U>(b));
    } else {
      const T r = std::fmod(a, b);
      return r != T(0) && (r < T(0)) != (b < T(0)) ? r + b : r;
    }
  }
};
struct FloorDiv {
  template <class T> static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return IntFloorDiv(a, b);
    else return std::floor(a / b);
  }
};

// Whether Op divides by Y, so an integer Y of 0 is an error.
template <class Op>
constexpr bool kDivides = std::is_same_v<Op, Div> || std::is_same_v<Op, Mod> || std::is_same_v<Op, FloorDiv>;

template <class Op, class T> class Elementwise {
 public:
  explicit Elementwise(const OpInfo& op) : args_(op) {}

  // A running sum, a received value. An integer division by zero declines: Compute gives
  // the error.
  bool Scalar(const RillScalar* in, RillScalar* out) const {
    if constexpr (kDivides<Op> && std::is_integral_v<T>) {
      T y;
      if (ReadScalar(in[1], &y) && y == 0) return false;
    }
    return ScalarBinary<T, T>(in, out, [](T a, T b) { return Op::template Apply<T>(a, b); });
  }

  // Out keeps X's LoD, as Paddle's elementwise ops keep it.
  void Compute(KernelContext& ctx) {
    if constexpr (std::is_same_v<Op, Mul>) {
      if (Variable xv = ctx.InputVar(args_.x); xv.IsSelectedRows()) return ScaleRows(ctx, xv.selected_rows());
    }
    Values(ctx);
    ShareLoD(ctx, args_.x, args_.out);
  }

 private:
  // elementwise_mul of SelectedRows X (a sparse gradient) by a Y of one element, as
  // Paddle's (a global-norm gradient clip's scale): SelectedRows of X's rows, each value
  // times Y. Zero rows stay zero, so the product of the dense gradient is kept sparse.
  void ScaleRows(KernelContext& ctx, const Variable::SelectedRows& sr) {
    Tensor y = ctx.Input(args_.y);
    if (y.numel() != 1) {
      throw Error("X is SelectedRows, so Y must hold one element; Y is " + DimsString(y.dims()));
    }
    const T factor = y.data<T>()[0];
    // Out may be X: its rows and values are read before Out is remade.
    const std::vector<int64_t> rows(sr.rows, sr.rows + sr.count), dims = sr.value.dims();
    const std::vector<T> values(sr.value.data<T>(), sr.value.data<T>() + sr.value.numel());
    Tensor out = ctx.OutputVar(args_.out).SetSelectedRows(rows.data(), rows.size(), sr.height);
    T* po = out.Allocate<T>(dims);
    for (size_t i = 0; i < values.size(); ++i) po[i] = values[i] * factor;
  }

  void Values(KernelContext& ctx) {
    if constexpr (kDivides<Op> && std::is_integral_v<T>) {
      Tensor y = ctx.Input(args_.y);
      const T* py = y.data<T>();
      // Block by block, each without an early exit and in arithmetic every instruction set
      // has in vector form (y | -y has its top bit set unless y is 0), so that it vectorizes.
      using U = std::make_unsigned_t<T>;
      constexpr int64_t kBlock = 1024;
      for (int64_t begin = 0; begin < y.numel(); begin += kBlock) {
        const int64_t end = std::min(begin + kBlock, y.numel());
        U all_nonzero = ~U(0);
        for (int64_t i = begin; i < end; ++i) {
          const U v = static_cast<U>(py[i]);
          all_nonzero &= v | (U(0) - v);
        }
        if ((all_nonzero >> (8 * sizeof(U) - 1)) == 0) {
          const int64_t at = std::find(py + begin, py + end, T(0)) - py;
          throw Error("integer division by zero (Y[" + std::to_string(at) + "] is 0)");
        }
      }
    }
    // Same-shape operands of an op with a vector loop (its Run, or binary_loops.h's): one
    // pass over the buffers, in chunks on the passes' team. Integer division goes through
    // Apply, which defines the most negative value by -1.
    constexpr bool kVector = kHasRun<Op, T> || (kHasLoop<Op> && !(kDivides<Op> && std::is_integral_v<T>));
    if constexpr (kVector) {
      Tensor x = ctx.Input(args_.x);
      Tensor y = ctx.Input(args_.y);
      if (SameDims(x, y)) {
        // Read X and Y before Allocate: Out may be X or Y itself (each element is read
        // before it is written).
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* po = ctx.AllocateOutput<T>(args_.out, x.dims_data(), x.ndim());
        ParallelFor(x.numel(), 3.0 * sizeof(T) * x.numel(), [&](int64_t, int64_t begin, int64_t end) {
          const int64_t k = end - begin;
          if constexpr (kHasRun<Op, T>) {
            Op::Run(px + begin, py + begin, po + begin, k);
          } else {
            BinaryLoopFor<Op::kLoop, T>()(px + begin, py + begin, po + begin, k);
          }
        });
        return;
      }
    }
    BinaryBroadcast<T, T>(ctx, args_, [](T a, T b) { return Op::template Apply<T>(a, b); });
  }

  const BinaryArgs args_;
};

template <class Op, class = void> struct DxIsG : std::false_type {};
template <class Op> struct DxIsG<Op, std::void_t<decltype(Op::kDxIsG)>> : std::bool_constant<Op::kDxIsG> {};
template <class Op, class = void> struct DyIsG : std::false_type {};
template <class Op> struct DyIsG<Op, std::void_t<decltype(Op::kDyIsG)>> : std::bool_constant<Op::kDyIsG> {};

// Whether `slot`'s gradient (of operand `operand`) is Out@GRAD itself: its op's derivative
// is g, and the operand was not broadcast (as many elements as Out, which a broadcast
// operand never has, so element i of each is element i of the other). It then views
// Out@GRAD's memory, shaped like the operand, instead of holding a copy.
bool SharesG(KernelContext& ctx, bool derivative_is_g, const char* slot, const Tensor& operand, const Tensor& g) {
  if (!derivative_is_g || !ctx.HasOutput(slot) || operand.numel() != g.numel()) return false;
  ctx.Output(slot).ShareWith(g, operand.dims_data(), operand.ndim());
  return true;
}

// X@GRAD (shaped like X) and Y@GRAD (shaped like Y: summed over the broadcast dims), each
// only when asked for.
template <class Op, class T> void ElementwiseGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const BroadcastPlan plan = PlanBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const T* pg = g.data<T>();
  if (g.numel() != Product(plan.out, 0, plan.out.size())) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(plan.out));
  }
  const bool dx_shared = SharesG(ctx, DxIsG<Op>::value, "X@GRAD", x, g);
  const bool dy_shared = SharesG(ctx, DyIsG<Op>::value, "Y@GRAD", y, g);
  const bool want_dy = ctx.HasOutput("Y@GRAD") && !dy_shared;
  T* dx = ctx.HasOutput("X@GRAD") && !dx_shared ? ctx.AllocateOutput<T>("X@GRAD", x.dims()) : nullptr;
  if (!plan.fast) {
    // Each operand's gradient sums the terms of the Out elements it was broadcast to.
    T* dy = want_dy ? ctx.AllocateOutput<T>("Y@GRAD", y.dims()) : nullptr;
    if (dx) std::fill(dx, dx + x.numel(), T(0));
    if (dy) std::fill(dy, dy + y.numel(), T(0));
    const int64_t row = plan.row_size();
    const int64_t sx = plan.x_strides.back(), sy = plan.y_strides.back();
    for (int64_t r = 0; r < plan.rows(); ++r) {
      int64_t xo, yo;
      plan.RowStart(r, &xo, &yo);
      const T* gs = pg + r * row;
      for (int64_t k = 0; k < row; ++k) {
        const T xv = px[xo + k * sx], yv = py[yo + k * sy];
        if (dx) dx[xo + k * sx] += Op::DX(xv, yv, gs[k]);
        if (dy) dy[yo + k * sy] += Op::DY(xv, yv, gs[k]);
      }
    }
    return;
  }
  const Broadcast b = plan.b;
  if (b.pre == 1 && b.post == 1) {
    // Y as many elements as X: no sum, each output one pass, in parallel chunks when large.
    T* dy = want_dy ? ctx.AllocateOutput<T>("Y@GRAD", y.dims()) : nullptr;
    if (!dx && !dy) return;
    const double bytes = (dx && dy ? 5.0 : 3.0) * sizeof(T) * b.n;
    ParallelFor(b.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      if (dx) {
        for (int64_t j = begin; j < end; ++j) dx[j] = Op::DX(px[j], py[j], pg[j]);
      }
      if (dy) {
        for (int64_t j = begin; j < end; ++j) dy[j] = Op::DY(px[j], py[j], pg[j]);
      }
    });
    return;
  }
  // Y broadcast: dY sums over the other dims. X's items for ParallelFor are its rows of n
  // (post 1) or its runs of `post` elements sharing one Y value (run r takes Y[r % n]);
  // each chunk sums dY into n values of its own, added up in chunk order. One loop per
  // output, so that each vectorizes (dX elementwise; dY elementwise along Y when post is
  // 1, else a sum over `post` elements kept in kLanes partial sums so the additions do not
  // wait on each other).
  constexpr int64_t kLanes = 8;
  const int64_t items = b.post == 1 ? b.pre : b.pre * b.n;
  const double bytes = (dx ? 3.0 : 2.0) * sizeof(T) * static_cast<double>(x.numel());
  const int64_t chunks = ParallelChunks(items, bytes);
  std::vector<T> partial(want_dy ? static_cast<size_t>(chunks * b.n) : 0, T(0));
  ParallelFor(items, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
    T* sums = want_dy ? partial.data() + chunk * b.n : nullptr;
    if (b.post == 1) {
      for (int64_t i = begin; i < end; ++i) {
        const T* xs = px + i * b.n;
        const T* gs = pg + i * b.n;
        if (dx) {
          T* d = dx + i * b.n;
          for (int64_t j = 0; j < b.n; ++j) d[j] = Op::DX(xs[j], py[j], gs[j]);
        }
        if (sums) {
          for (int64_t j = 0; j < b.n; ++j) sums[j] += Op::DY(xs[j], py[j], gs[j]);
        }
      }
      return;
    }
    for (int64_t r = begin; r < end; ++r) {
      const int64_t j = r % b.n;
      const T yv = py[j];
      const T* xs = px + r * b.post;
      const T* gs = pg + r * b.post;
      if (dx) {
        T* d = dx + r * b.post;
        for (int64_t k = 0; k < b.post; ++k) d[k] = Op::DX(xs[k], yv, gs[k]);
      }
      if (sums) {
        T lanes[kLanes] = {};
        int64_t k = 0;
        for (; k + kLanes <= b.post; k += kLanes)
          for (int64_t l = 0; l < kLanes; ++l) lanes[l] += Op::DY(xs[k + l], yv, gs[k + l]);
        T sum = 0;
        for (; k < b.post; ++k) sum += Op::DY(xs[k], yv, gs[k]);
        for (T lane : lanes) sum += lane;
        sums[j] += sum;
      }
    }
  });
  if (want_dy) {
    T* dy = ctx.AllocateOutput<T>("Y@GRAD", y.dims());
    std::fill(dy, dy + b.n, T(0));
    for (int64_t c = 0; c < chunks; ++c) {
      for (int64_t j = 0; j < b.n; ++j) dy[j] += partial[static_cast<size_t>(c * b.n + j)];
    }
  }
}

template <class Op, bool kGrad = true> void RegisterOne(Registrar& r, const char* type, const char* formula) {
  const std::string grad = std::string(type) + "_grad";
  OpSchema schema =
      OpSchema(type)
          .Doc(std::string("Out = ") + formula +
               ", elementwise, with Paddle's broadcasting: the operand of lower "
               "rank is aligned at `axis` of the other's dims (-1: at their trailing dims, numpy's rule, which "
               "gives Fluid 1.x's result for every pair 1.x accepts) and padded with 1s; aligned dims must be "
               "equal or one of them 1, and Out takes the other." +
               (kDivides<Op> ? " Integers: a Y of 0 is an error; the most negative value by -1 wraps to itself "
                               "(remainder 0), as in Go and Java."
                             : ""))
          .Input("X", std::is_same_v<Op, Mul> ? "left operand; or SelectedRows, when Y holds one element (rows kept)"
                                              : "left operand")
          .Input("Y", "right operand")
          .Output("Out", "the result, of the operands' broadcast shape")
          .Attr("axis", int64_t{-1},
                "where the lower-rank operand's dims start in the other's (-1: aligned to the end)")
          .KernelDtypeFrom("X");
  RegisterCpuStateful<RILL_MATH_NUMERIC_TYPES>(r, type, [](auto t) { return TypeTag<Elementwise<Op, decltype(t)>>{}; });
  if constexpr (kGrad) {
    schema.Grad(grad, "X,Y,Out@GRAD", "X,Y");
    r.Op(schema.MakeGradSchema());
    RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &ElementwiseGrad<Op, decltype(t)>; });
  }
  r.Op(schema);
}

}  // namespace

void RegisterElementwise(Registrar& r) {
  RegisterOne<Add>(r, "elementwise_add", "X + Y");
  RegisterOne<Sub>(r, "elementwise_sub", "X - Y");
  RegisterOne<Mul>(r, "elementwise_mul", "X * Y");
  RegisterOne<Div>(r, "elementwise_div", "X / Y");
  RegisterOne<Max>(r, "elementwise_max", "max(X, Y)");
  RegisterOne<Min>(r, "elementwise_min", "min(X, Y)");
  RegisterOne<Pow>(r, "elementwise_pow", "X ^ Y");
  // Paddle's integer pow gradients: each computed in double and truncated to the integer.
  RegisterCpu<int32_t, int64_t>(r, "elementwise_pow_grad", [](auto t) { return &ElementwiseGrad<Pow, decltype(t)>; });
  RegisterOne<Mod, false>(r, "elementwise_mod", "X mod Y, with Y's sign (Python's %)");
  RegisterOne<FloorDiv, false>(r, "elementwise_floordiv", "floor(X / Y) (Python's //)");
}

}  // namespace rill::math
