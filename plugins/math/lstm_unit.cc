// lstm_unit, lstm_unit_grad: one LSTM step for a batch, the activations only (the input and
// hidden projections are made before it), with Paddle's contract
// (paddle/fluid/operators/lstm_unit_op.*). X [N, 4D] holds each row's gates in the order
// input, forget, output, candidate (not lstm's order); C_prev [N, D] the previous cells:
//
//   C = C_prev sigmoid(f + forget_bias) + sigmoid(i) tanh(j),   H = sigmoid(o) tanh(C)
//
// The activations are the plain ones, unclamped, as Paddle's lstm_unit has them. Both H and C
// carry gradients back (a step's C feeds the next step).
#include <initializer_list>
#include <string>
#include <vector>

#include "activation_functors.h"
#include "activation_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// D, after checking X [N, 4D] against C_prev [N, D].
int64_t LstmUnitWidth(const Tensor& x, const Tensor& c_prev) {
  if (x.ndim() != 2 || c_prev.ndim() != 2 || x.dims()[0] != c_prev.dims()[0] || x.dims()[1] != 4 * c_prev.dims()[1]) {
    throw Error("X " + DimsString(x.dims()) + " must be [N, 4D] for C_prev " + DimsString(c_prev.dims()) +
                " [N, D]: the four gates of each row's step");
  }
  return c_prev.dims()[1];
}

template <class T> void LstmUnitForward(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), c_prev = ctx.Input("C_prev");
  const int64_t d = LstmUnitWidth(x, c_prev), n = x.dims()[0];
  const T forget_bias = static_cast<T>(ctx.Attr<float>("forget_bias"));
  const T* xv = x.data<T>();
  const T* cp = c_prev.data<T>();
  // A row at a time, in row chunks on the team: its gates activated by the activations'
  // vector loops into a chunk's own [4D] (i, f, o, j), then C and H from them.
  const activation::Sigmoid sigmoid(ctx);
  const activation::Tanh tanh(ctx);
  const auto sigmoids = activation::LoopsFor<activation::Sigmoid, T>().forward;
  const auto tanhs = activation::LoopsFor<activation::Tanh, T>().forward;
  WriteOutput<T>(ctx, "C", {"X", "C_prev"}, {n, d}, [&](T* c) {
    WriteOutput<T>(ctx, "H", {"X", "C_prev"}, {n, d}, [&](T* h) {
      ParallelFor(n, 8.0 * n * d * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
        std::vector<T> a(static_cast<size_t>(4 * d));
        T *i = a.data(), *f = i + d, *o = f + d, *j = o + d;
        for (int64_t r = first; r < last; ++r) {
          const T* g = xv + r * 4 * d;
          for (int64_t k = 0; k < d; ++k) f[k] = g[d + k] + forget_bias;
          sigmoids(sigmoid, g, i, d);
          sigmoids(sigmoid, f, f, d);
          sigmoids(sigmoid, g + 2 * d, o, d);
          tanhs(tanh, g + 3 * d, j, d);
          T *cr = c + r * d, *hr = h + r * d;
          for (int64_t k = 0; k < d; ++k) cr[k] = cp[r * d + k] * f[k] + i[k] * j[k];
          tanhs(tanh, cr, hr, d);
          for (int64_t k = 0; k < d; ++k) hr[k] *= o[k];
        }
      });
    });
  });
}

template <class T> void LstmUnitBackward(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), c_prev = ctx.Input("C_prev"), c = ctx.Input("C");
  Tensor dh = ctx.Input("H@GRAD"), dc = ctx.Input("C@GRAD");
  const int64_t d = LstmUnitWidth(x, c_prev), n = x.dims()[0];
  for (const auto* t : {&c, &dh, &dc}) {
    if (t->dims() != c_prev.dims()) {
      throw Error("C, H@GRAD and C@GRAD must be shaped like C_prev " + DimsString(c_prev.dims()) + ", got " +
                  DimsString(t->dims()));
    }
  }
  const T forget_bias = static_cast<T>(ctx.Attr<float>("forget_bias"));
  const T *xv = x.data<T>(), *cp = c_prev.data<T>(), *cv = c.data<T>(), *dhv = dh.data<T>(), *dcv = dc.data<T>();
  const activation::Sigmoid sigmoid(ctx);
  const activation::Tanh tanh(ctx);
  const auto sigmoids = activation::LoopsFor<activation::Sigmoid, T>().forward;
  const auto tanhs = activation::LoopsFor<activation::Tanh, T>().forward;
  // As the forward: a row at a time, in row chunks on the team, the gates and tanh(C)
  // activated by the vector loops into a chunk's own scratch, then each gradient by a plain loop
  // over the row. dx or dcp is null when that gradient is not wanted.
  const auto step_back = [&](T* dx, T* dcp) {
    ParallelFor(n, 12.0 * n * d * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      std::vector<T> a(static_cast<size_t>(6 * d));
      T *i = a.data(), *f = i + d, *o = f + d, *j = o + d, *tanh_c = j + d, *dcell = tanh_c + d;
      for (int64_t r = first; r < last; ++r) {
        const T* g = xv + r * 4 * d;
        const T *cpr = cp + r * d, *dhr = dhv + r * d, *dcr = dcv + r * d;
        for (int64_t k = 0; k < d; ++k) f[k] = g[d + k] + forget_bias;
        sigmoids(sigmoid, g, i, d);
        sigmoids(sigmoid, f, f, d);
        sigmoids(sigmoid, g + 2 * d, o, d);
        tanhs(tanh, g + 3 * d, j, d);
        tanhs(tanh, cv + r * d, tanh_c, d);
        for (int64_t k = 0; k < d; ++k) dcell[k] = dcr[k] + dhr[k] * o[k] * (T(1) - tanh_c[k] * tanh_c[k]);
        if (dcp != nullptr) {
          T* dcpr = dcp + r * d;
          for (int64_t k = 0; k < d; ++k) dcpr[k] = dcell[k] * f[k];
        }
        if (dx == nullptr) continue;
        T *di = dx + r * 4 * d, *df = di + d, *dout = df + d, *dj = dout + d;
        for (int64_t k = 0; k < d; ++k) di[k] = dcell[k] * j[k] * i[k] * (T(1) - i[k]);
        for (int64_t k = 0; k < d; ++k) df[k] = dcell[k] * cpr[k] * f[k] * (T(1) - f[k]);
        for (int64_t k = 0; k < d; ++k) dout[k] = dhr[k] * tanh_c[k] * o[k] * (T(1) - o[k]);
        for (int64_t k = 0; k < d; ++k) dj[k] = dcell[k] * i[k] * (T(1) - j[k] * j[k]);
      }
    });
  };
  const std::initializer_list<const char*> inputs = {"X", "C_prev", "C", "H@GRAD", "C@GRAD"};
  const bool want_x = HasOutputVariable(ctx, "X@GRAD"), want_c_prev = HasOutputVariable(ctx, "C_prev@GRAD");
  if (want_x && want_c_prev) {
    WriteOutput<T>(ctx, "X@GRAD", inputs, x.dims(), [&](T* dx) {
      WriteOutput<T>(ctx, "C_prev@GRAD", inputs, c_prev.dims(), [&](T* dcp) { step_back(dx, dcp); });
    });
  } else if (want_x) {
    WriteOutput<T>(ctx, "X@GRAD", inputs, x.dims(), [&](T* dx) { step_back(dx, nullptr); });
  } else if (want_c_prev) {
    WriteOutput<T>(ctx, "C_prev@GRAD", inputs, c_prev.dims(), [&](T* dcp) { step_back(nullptr, dcp); });
  }
}

}  // namespace

void RegisterLstmUnit(Registrar& r) {
  const OpSchema lstm_unit =
      OpSchema("lstm_unit")
          .Doc(
              "One LSTM step's activations for a batch: X [N, 4D] (gates input, forget, output, candidate), "
              "C_prev [N, D] -> C, H. As Paddle's (Fluid's lstm_unit layer, after its fc).")
          .Input("X", "[N, 4D]: each row's gate sums, in the order input, forget, output, candidate")
          .Input("C_prev", "[N, D]: the previous cells")
          .Output("C", "[N, D]: C_prev sigmoid(f + forget_bias) + sigmoid(i) tanh(j)")
          .Output("H", "[N, D]: sigmoid(o) tanh(C)")
          .Attr("forget_bias", 0.0f, "added to the forget gate's sum before its sigmoid")
          .KernelDtypeFrom("X")
          .Grad("lstm_unit_grad", "X,C_prev,C,H@GRAD,C@GRAD", "X,C_prev");
  r.Op(lstm_unit);
  r.Op(lstm_unit.MakeGradSchema());
  RegisterCpu<float, double>(r, "lstm_unit", [](auto t) { return &LstmUnitForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "lstm_unit_grad", [](auto t) { return &LstmUnitBackward<decltype(t)>; });
}

}  // namespace rill::math
