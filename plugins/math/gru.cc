// gru, gru_grad: the gated recurrent unit over each sequence of a LoD tensor (Fluid's
// dynamic_gru), with Paddle's contract (paddle/fluid/operators/gru_op.*); gru_unit,
// gru_unit_grad: one step of it for a batch (gru_unit_op.*), on the same step functions.
//
// Input [R, 3D] packs the sequences (one LoD level) with the input projections already
// made; the gates are in Paddle's order: update u, reset r, candidate c. Weight [D, 3D] is
// stored as two matrices one after the other, not as column blocks: its first 2 D^2 values
// are W_ur [D, 2D] (the update and reset gates), its last D^2 values W_c [D, D]. Bias
// [1, 3D] is optional. Per step, from the previous h of the same sequence (H0 for its
// first step, or zeros):
//
//   [u, r] = act_gate(x_ur + h_prev W_ur + b_ur)
//   c = act(x_c + (r h_prev) W_c + b_c)
//   h = u c + (1 - u) h_prev,   or with origin_mode   h = u h_prev + (1 - u) c
//
// Hidden ([R, D], Input's LoD) holds every step's h; is_reverse runs each sequence from its
// last row to its first. The steps run in batch order (recurrent_batches.h), which the
// outputs BatchGate ([R, 3D]: u, r, c), BatchResetHiddenPrev ([R, D]: r h_prev) and
// BatchHidden ([R, D]: h) are in, as Paddle's are. gru_unit takes the activations by
// Paddle's enum and with rnn_activation.h's clamps (Paddle's gru_unit leaves its sigmoid
// unclamped: they differ where a gate's sum passes 13, by under 3e-6).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gemm.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "recurrent_batches.h"
#include "rnn_activation.h"
#include "sequence.h"

namespace rill::math {
namespace {

// What one step of the GRU computes, from the op's attributes.
struct GruCell {
  int64_t d = 0;  // the hidden size D
  RnnActivation gate, act;
  bool origin_mode = false;
};

// Weight [D, 3D] of hidden size d: W_ur then W_c.
void CheckGruWeight(const Tensor& weight, int64_t d, const Tensor& input) {
  if (weight.dims() != std::vector<int64_t>{d, 3 * d}) {
    throw Error("Weight " + DimsString(weight.dims()) + " must be [D, 3D] = [" + std::to_string(d) + ", " +
                std::to_string(3 * d) + "] (Input " + DimsString(input.dims()) + ")");
  }
}

// The hidden size of Input [R, 3D], with Weight and the optional Bias checked against it.
int64_t GruWidth(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (input.ndim() != 2 || input.dims()[1] % 3 != 0 || input.dims()[1] == 0) {
    throw Error("Input " + DimsString(input.dims()) + " must be [R, 3D]: the three gates' input projections");
  }
  const int64_t d = input.dims()[1] / 3;
  CheckGruWeight(weight, d, input);
  if (bias && bias->dims() != std::vector<int64_t>{1, 3 * d}) {
    throw Error("Bias " + DimsString(bias->dims()) + " must be [1, " + std::to_string(3 * d) + "]");
  }
  return d;
}

// One step for k rows. g [k, 3D] holds each row's x + b and gets its activated gates u, r,
// c; h_prev [k, D] is each row's previous h (null: zeros). Writes reset [k, D] = r h_prev and
// hidden [k, D].
template <class T>
void GruStepForward(const GruCell& cell, int64_t k, const T* h_prev, const T* w_ur, const T* w_c, T* g, T* reset,
                    T* hidden) {
  const int64_t d = cell.d, g3 = 3 * d;
  if (h_prev != nullptr) Gemm<T>(false, false, k, 2 * d, d, T(1), h_prev, d, w_ur, 2 * d, T(1), g, g3);
  const double bytes = 6.0 * k * d * sizeof(T);
  ParallelFor(k, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      T* gj = g + j * g3;
      Activate(cell.gate, gj, 2 * d, gj);
      VecMap<T> rh(reset + j * d, d);
      if (h_prev != nullptr) {
        rh = ConstVecMap<T>(gj + d, d) * ConstVecMap<T>(h_prev + j * d, d);
      } else {
        rh.setZero();
      }
    }
  });
  if (h_prev != nullptr) Gemm<T>(false, false, k, d, d, T(1), reset, d, w_c, d, T(1), g + 2 * d, g3);
  ParallelFor(k, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      T* gj = g + j * g3;
      Activate(cell.act, gj + 2 * d, d, gj + 2 * d);
      ConstVecMap<T> u(gj, d), c(gj + 2 * d, d);
      VecMap<T> h(hidden + j * d, d);
      if (h_prev == nullptr) {
        h = cell.origin_mode ? ((T(1) - u) * c).eval() : (u * c).eval();
      } else {
        ConstVecMap<T> hp(h_prev + j * d, d);
        h = cell.origin_mode ? (u * hp + (T(1) - u) * c).eval() : (u * c + (T(1) - u) * hp).eval();
      }
    }
  });
}

// One step back for k rows, from what GruStepForward left (the activated gates g and reset)
// and dh [k, D], the step's whole hidden gradient: writes dg [k, 3D], the gradient of the
// gates' sums; with h_prev (null: zeros) adds h_prev's gradient into dh_prev and, where not
// null, the weights' into dw_ur and dw_c. drh is scratch of [k, D].
template <class T>
void GruStepBackward(const GruCell& cell, int64_t k, const T* g, const T* reset, const T* h_prev, const T* dh,
                     const T* w_ur, const T* w_c, T* dg, T* dh_prev, T* dw_ur, T* dw_c, T* drh) {
  const int64_t d = cell.d, g3 = 3 * d;
  const double bytes = 8.0 * k * d * sizeof(T);
  // The gradients of u (before its activation's), of the candidate's sum, and h's share of h_prev's.
  ParallelFor(k, bytes, [&](int64_t, int64_t begin, int64_t end) {
    std::unique_ptr<T[]> tmp = Scratch<T>(d);
    for (int64_t j = begin; j < end; ++j) {
      const T* gj = g + j * g3;
      T* dgj = dg + j * g3;
      ConstVecMap<T> u(gj, d), c(gj + 2 * d, d), dout(dh + j * d, d);
      VecMap<T> du(dgj, d), tmpv(tmp.get(), d);
      if (h_prev != nullptr) {
        ConstVecMap<T> hp(h_prev + j * d, d);
        du = cell.origin_mode ? (dout * (hp - c)).eval() : (dout * (c - hp)).eval();
        VecMap<T>(dh_prev + j * d, d) += cell.origin_mode ? (dout * u).eval() : (dout * (T(1) - u)).eval();
      } else {
        du = cell.origin_mode ? (-dout * c).eval() : (dout * c).eval();
      }
      tmpv = cell.origin_mode ? (dout * (T(1) - u)).eval() : (dout * u).eval();
      ActivationGrad(cell.act, tmp.get(), gj + 2 * d, d, dgj + 2 * d);
    }
  });
  if (h_prev != nullptr) {
    Gemm<T>(false, true, k, d, d, T(1), dg + 2 * d, g3, w_c, d, T(0), drh, d);
    if (dw_c != nullptr) Gemm<T>(true, false, d, d, k, T(1), reset, d, dg + 2 * d, g3, T(1), dw_c, d);
  }
  // The reset gate's gradient and r's share of h_prev's; then u and r before their activation.
  ParallelFor(k, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const T* gj = g + j * g3;
      T* dgj = dg + j * g3;
      VecMap<T> dr(dgj + d, d);
      if (h_prev != nullptr) {
        ConstVecMap<T> d_rh(drh + j * d, d);
        dr = d_rh * ConstVecMap<T>(h_prev + j * d, d);
        VecMap<T>(dh_prev + j * d, d) += d_rh * ConstVecMap<T>(gj + d, d);
      } else {
        dr.setZero();
      }
      ActivationGrad(cell.gate, dgj, gj, 2 * d, dgj);
    }
  });
  if (h_prev == nullptr) return;
  Gemm<T>(false, true, k, d, 2 * d, T(1), dg, g3, w_ur, 2 * d, T(1), dh_prev, d);
  if (dw_ur != nullptr) Gemm<T>(true, false, d, 2 * d, k, T(1), h_prev, d, dg, g3, T(1), dw_ur, 2 * d);
}

// The bias's gradient [1, 3D]: dg [rows, 3D] summed over its rows.
template <class T> void WriteGruBiasGrad(KernelContext& ctx, const T* dg, int64_t rows, int64_t d) {
  WriteOutput<T>(ctx, "Bias@GRAD", {}, {1, 3 * d}, [&](T* p) {
    VecMap<T>(p, 3 * d) = ConstMatrixMap<T>(dg, rows, 3 * d).colwise().sum().transpose().array();
  });
}

struct Gru {
  GruCell cell;
  RecurrentBatches batches;
};

Gru GruOf(KernelContext& ctx, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
          const std::optional<Tensor>& h0) {
  Gru g;
  const int64_t d = GruWidth(input, weight, bias);
  const std::vector<uint64_t> offsets = SequenceOffsets(ctx.op(), "Input", input, 1);
  const int64_t seqs = static_cast<int64_t>(offsets.size()) - 1;
  if (h0 && h0->dims() != std::vector<int64_t>{seqs, d}) {
    throw Error("H0 " + DimsString(h0->dims()) + " must be [N, D] = [" + std::to_string(seqs) + ", " +
                std::to_string(d) + "]: a row for each sequence of Input");
  }
  g.cell = {d, RnnActivationOf(ctx, "gate_activation"), RnnActivationOf(ctx, "activation"),
            ctx.Attr<bool>("origin_mode")};
  g.batches = RecurrentBatchesOf(offsets, ctx.Attr<bool>("is_reverse"));
  return g;
}

template <class T> void GruForward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), bias = OptionalInput(ctx, "Bias");
  const Gru gru = GruOf(ctx, input, weight, bias, h0);
  const RecurrentBatches& b = gru.batches;
  const int64_t d = gru.cell.d, g3 = 3 * d, rows = input.dims()[0];
  const T* w_ur = weight.data<T>();
  const T* w_c = w_ur + 2 * d * d;
  const std::unique_ptr<T[]> h_first = InitialStatesInOrder<T>(b, h0, d);
  const std::initializer_list<const char*> inputs = {"Input", "H0", "Weight", "Bias"};
  WriteOutput<T>(ctx, "BatchGate", inputs, {rows, g3}, [&](T* gates) {
    WriteOutput<T>(ctx, "BatchResetHiddenPrev", inputs, {rows, d}, [&](T* reset) {
      WriteOutput<T>(ctx, "BatchHidden", inputs, {rows, d}, [&](T* hidden) {
        GatherRows(input.data<T>(), g3, b.source, rows, gates);
        if (bias) MatrixMap<T>(gates, rows, g3).rowwise() += ConstMatrixMap<T>(bias->data<T>(), 1, g3).row(0);
        for (int64_t t = 0; t < b.steps(); ++t) {
          const int64_t at = b.starts[t];
          const T* h_prev = t > 0 ? hidden + b.starts[t - 1] * d : h_first.get();
          GruStepForward<T>(gru.cell, b.Count(t), h_prev, w_ur, w_c, gates + at * g3, reset + at * d, hidden + at * d);
        }
        const std::vector<std::vector<uint64_t>> lod = input.lod();
        WriteInSequenceOrder<T>(ctx, "Hidden", b, d, hidden, lod);
      });
    });
  });
}

template <class T> void GruBackward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), bias = OptionalInput(ctx, "Bias");
  const Gru gru = GruOf(ctx, input, weight, bias, h0);
  const RecurrentBatches& b = gru.batches;
  const int64_t d = gru.cell.d, g3 = 3 * d, rows = input.dims()[0];
  Tensor gates = ctx.Input("BatchGate"), reset = ctx.Input("BatchResetHiddenPrev");
  Tensor hidden = ctx.Input("BatchHidden"), dhidden = ctx.Input("Hidden@GRAD");
  CheckWrittenBy("gru", rows,
                 {{"BatchGate", &gates, g3},
                  {"BatchResetHiddenPrev", &reset, d},
                  {"BatchHidden", &hidden, d},
                  {"Hidden@GRAD", &dhidden, d}});
  const T* w_ur = weight.data<T>();
  const T* w_c = w_ur + 2 * d * d;
  const T* bh = hidden.data<T>();
  std::unique_ptr<T[]> dh = Scratch<T>(rows * d), dg = Scratch<T>(rows * g3), drh = Scratch<T>(rows * d);
  GatherRows(dhidden.data<T>(), d, b.source, rows, dh.get());
  const std::unique_ptr<T[]> h_first = InitialStatesInOrder<T>(b, h0, d);
  std::unique_ptr<T[]> dh_first = Scratch<T>(b.FirstCount() * d);
  std::fill(dh_first.get(), dh_first.get() + b.FirstCount() * d, T(0));
  const bool want_weight = HasOutputVariable(ctx, "Weight@GRAD");
  std::unique_ptr<T[]> dw = Scratch<T>(want_weight ? 3 * d * d : 0);
  if (want_weight) std::fill(dw.get(), dw.get() + 3 * d * d, T(0));
  for (int64_t t = b.steps() - 1; t >= 0; --t) {
    const int64_t at = b.starts[t], before = t > 0 ? b.starts[t - 1] : 0;
    const T* h_prev = t > 0 ? bh + before * d : h_first.get();
    T* dh_prev = t > 0 ? dh.get() + before * d : (h0 ? dh_first.get() : nullptr);
    GruStepBackward<T>(gru.cell, b.Count(t), gates.data<T>() + at * g3, reset.data<T>() + at * d, h_prev,
                       dh.get() + at * d, w_ur, w_c, dg.get() + at * g3, dh_prev, want_weight ? dw.get() : nullptr,
                       want_weight ? dw.get() + 2 * d * d : nullptr, drh.get());
  }
  if (HasOutputVariable(ctx, "Input@GRAD")) {
    WriteInSequenceOrder<T>(ctx, "Input@GRAD", b, g3, dg.get(), input.lod());
  }
  if (want_weight) {
    WriteOutput<T>(ctx, "Weight@GRAD", {}, {d, g3}, [&](T* p) { std::copy(dw.get(), dw.get() + 3 * d * d, p); });
  }
  if (bias && HasOutputVariable(ctx, "Bias@GRAD")) WriteGruBiasGrad(ctx, dg.get(), rows, d);
  if (h0 && HasOutputVariable(ctx, "H0@GRAD")) WriteInitialStateGrad(ctx, "H0@GRAD", b, d, dh_first.get());
}

// gru_unit: one step for a batch, each row its own h_prev (HiddenPrev).
GruCell GruUnitCellOf(KernelContext& ctx, const Tensor& input, const Tensor& h_prev, const Tensor& weight,
                      const std::optional<Tensor>& bias) {
  const int64_t d = GruWidth(input, weight, bias);
  if (h_prev.dims() != std::vector<int64_t>{input.dims()[0], d}) {
    throw Error("HiddenPrev " + DimsString(h_prev.dims()) + " must be [N, D] = [" + std::to_string(input.dims()[0]) +
                ", " + std::to_string(d) + "]: a row for each row of Input " + DimsString(input.dims()));
  }
  return {d, RnnActivationOfIndex(ctx, "gate_activation"), RnnActivationOfIndex(ctx, "activation"),
          ctx.Attr<bool>("origin_mode")};
}

template <class T> void GruUnitForward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), h_prev = ctx.Input("HiddenPrev"), weight = ctx.Input("Weight");
  const std::optional<Tensor> bias = OptionalInput(ctx, "Bias");
  const GruCell cell = GruUnitCellOf(ctx, input, h_prev, weight, bias);
  const int64_t n = input.dims()[0], d = cell.d, g3 = 3 * d;
  const T* w_ur = weight.data<T>();
  const std::initializer_list<const char*> inputs = {"Input", "HiddenPrev", "Weight", "Bias"};
  WriteOutput<T>(ctx, "Gate", inputs, {n, g3}, [&](T* gates) {
    WriteOutput<T>(ctx, "ResetHiddenPrev", inputs, {n, d}, [&](T* reset) {
      WriteOutput<T>(ctx, "Hidden", inputs, {n, d}, [&](T* hidden) {
        std::copy(input.data<T>(), input.data<T>() + n * g3, gates);
        if (bias) MatrixMap<T>(gates, n, g3).rowwise() += ConstMatrixMap<T>(bias->data<T>(), 1, g3).row(0);
        GruStepForward<T>(cell, n, h_prev.data<T>(), w_ur, w_ur + 2 * d * d, gates, reset, hidden);
      });
    });
  });
}

template <class T> void GruUnitBackward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), h_prev = ctx.Input("HiddenPrev"), weight = ctx.Input("Weight");
  const std::optional<Tensor> bias = OptionalInput(ctx, "Bias");
  const GruCell cell = GruUnitCellOf(ctx, input, h_prev, weight, bias);
  const int64_t n = input.dims()[0], d = cell.d, g3 = 3 * d;
  Tensor gates = ctx.Input("Gate"), reset = ctx.Input("ResetHiddenPrev"), dhidden = ctx.Input("Hidden@GRAD");
  CheckWrittenBy("gru_unit", n, {{"Gate", &gates, g3}, {"ResetHiddenPrev", &reset, d}, {"Hidden@GRAD", &dhidden, d}});
  const T* w_ur = weight.data<T>();
  std::unique_ptr<T[]> dg = Scratch<T>(n * g3), dh_prev = Scratch<T>(n * d), drh = Scratch<T>(n * d);
  std::fill(dh_prev.get(), dh_prev.get() + n * d, T(0));
  const bool want_weight = HasOutputVariable(ctx, "Weight@GRAD");
  std::unique_ptr<T[]> dw = Scratch<T>(want_weight ? 3 * d * d : 0);
  if (want_weight) std::fill(dw.get(), dw.get() + 3 * d * d, T(0));
  GruStepBackward<T>(cell, n, gates.data<T>(), reset.data<T>(), h_prev.data<T>(), dhidden.data<T>(), w_ur,
                     w_ur + 2 * d * d, dg.get(), dh_prev.get(), want_weight ? dw.get() : nullptr,
                     want_weight ? dw.get() + 2 * d * d : nullptr, drh.get());
  if (HasOutputVariable(ctx, "Input@GRAD")) {
    WriteOutput<T>(ctx, "Input@GRAD", {}, {n, g3}, [&](T* p) { std::copy(dg.get(), dg.get() + n * g3, p); });
  }
  if (HasOutputVariable(ctx, "HiddenPrev@GRAD")) {
    WriteOutput<T>(ctx, "HiddenPrev@GRAD", {}, {n, d},
                   [&](T* p) { std::copy(dh_prev.get(), dh_prev.get() + n * d, p); });
  }
  if (want_weight) {
    WriteOutput<T>(ctx, "Weight@GRAD", {}, {d, g3}, [&](T* p) { std::copy(dw.get(), dw.get() + 3 * d * d, p); });
  }
  if (bias && HasOutputVariable(ctx, "Bias@GRAD")) WriteGruBiasGrad(ctx, dg.get(), n, d);
}

}  // namespace

void RegisterGru(Registrar& r) {
  const OpSchema gru =
      OpSchema("gru")
          .Doc(
              "The GRU over each sequence of Input (its input projections, [R, 3D]): gates update, reset, "
              "candidate. As Paddle's (Fluid's dynamic_gru).")
          .Input("Input", "[R, 3D], a LoD tensor of one level: each step's input projections")
          .Input("H0", "[N, D]: each sequence's initial hidden state", RILL_SLOT_OPTIONAL)
          .Input("Weight", "[D, 3D], stored as W_ur [D, 2D] then W_c [D, D]")
          .Input("Bias", "[1, 3D]", RILL_SLOT_OPTIONAL)
          .Output("BatchGate", "[R, 3D]: u, r and the candidate, activated, in batch order")
          .Output("BatchResetHiddenPrev", "[R, D]: r h_prev, in batch order")
          .Output("BatchHidden", "[R, D]: h, in batch order")
          .Output("Hidden", "[R, D], Input's LoD: every step's h")
          .Attr("activation", "tanh", "the candidate's activation")
          .Attr("gate_activation", "sigmoid", "the update and reset gates' activation")
          .Attr("is_reverse", false, "run each sequence from its last row to its first")
          .Attr("origin_mode", false, "h = u h_prev + (1 - u) c (the GRU paper's) instead of u c + (1 - u) h_prev")
          .KernelDtypeFrom("Input")
          .Grad("gru_grad", "Input,H0,Weight,Bias,BatchGate,BatchResetHiddenPrev,BatchHidden,Hidden,Hidden@GRAD",
                "Input,H0,Weight,Bias");
  r.Op(gru);
  r.Op(gru.MakeGradSchema());
  RegisterCpu<float, double>(r, "gru", [](auto t) { return &GruForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "gru_grad", [](auto t) { return &GruBackward<decltype(t)>; });

  const OpSchema gru_unit =
      OpSchema("gru_unit")
          .Doc(
              "One GRU step for a batch, each row from its own previous hidden state: gates update, reset, "
              "candidate, as gru's. As Paddle's (Fluid's gru_unit layer, after its fc).")
          .Input("Input", "[N, 3D]: each row's input projections")
          .Input("HiddenPrev", "[N, D]: each row's previous hidden state")
          .Input("Weight", "[D, 3D], stored as W_ur [D, 2D] then W_c [D, D]")
          .Input("Bias", "[1, 3D]", RILL_SLOT_OPTIONAL)
          .Output("Gate", "[N, 3D]: u, r and the candidate, activated")
          .Output("ResetHiddenPrev", "[N, D]: r HiddenPrev")
          .Output("Hidden", "[N, D]: h")
          .Attr("activation", int32_t{2}, "the candidate's activation: 0 identity, 1 sigmoid, 2 tanh, 3 relu")
          .Attr("gate_activation", int32_t{1}, "the update and reset gates' activation, numbered as activation's")
          .Attr("origin_mode", false, "h = u h_prev + (1 - u) c (the GRU paper's) instead of u c + (1 - u) h_prev")
          .KernelDtypeFrom("Input")
          .Grad("gru_unit_grad", "Input,HiddenPrev,Weight,Bias,Gate,ResetHiddenPrev,Hidden@GRAD",
                "Input,HiddenPrev,Weight,Bias");
  r.Op(gru_unit);
  r.Op(gru_unit.MakeGradSchema());
  RegisterCpu<float, double>(r, "gru_unit", [](auto t) { return &GruUnitForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "gru_unit_grad", [](auto t) { return &GruUnitBackward<decltype(t)>; });
}

}  // namespace rill::math
