// lstm, lstm_grad: the long short-term memory over each sequence of a LoD tensor (Fluid's
// dynamic_lstm), with Paddle's contract (paddle/fluid/operators/lstm_op.*).
//
// Input [R, 4D] packs the sequences (one LoD level) with the input projections already
// made (an fc before the op); Weight [D, 4D] and Bias [1, 4D] (with use_peepholes [1, 7D],
// the peephole weights w_ic, w_fc, w_oc after the gate bias) hold the gates in Paddle's
// order: candidate, input, forget, output. Per step, from the previous h and c of the same
// sequence (H0, C0 for its first step, or zeros):
//
//   g = x + h_prev Weight + b;           cand = act_cand(g_c)
//   i = act_gate(g_i + w_ic c_prev);     f = act_gate(g_f + w_fc c_prev)
//   c = f c_prev + i cand;               o = act_gate(g_o + w_oc c)
//   h = o act_cell(c)
//
// Hidden and Cell ([R, D], Input's LoD) hold every step's h and c. With is_reverse each
// sequence runs from its last row to its first. The steps run in batch order
// (recurrent_batches.h): one product with Weight a step for all sequences. BatchGate
// ([R, 4D]: the activated cand, i, f, o) and BatchCellPreAct ([R, D]: act_cell(c)) keep,
// in batch order, what lstm_grad needs; only Hidden's gradient flows back, as in Paddle.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gemm.h"
#include "kernels.h"
#include "lstm_cell.h"
#include "ops.h"
#include "parallel_for.h"
#include "recurrent_batches.h"
#include "sequence.h"

namespace rill::math {
namespace {

struct Lstm {
  LstmCell cell;
  RecurrentBatches batches;
};

Lstm LstmOf(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor& bias,
            const std::optional<Tensor>& h0, const std::optional<Tensor>& c0) {
  if (input.ndim() != 2 || input.dims()[1] % 4 != 0 || input.dims()[1] == 0) {
    throw Error("Input " + DimsString(input.dims()) + " must be [R, 4D]: the four gates' input projections");
  }
  const int64_t d = input.dims()[1] / 4;
  const std::vector<uint64_t> offsets = SequenceOffsets(ctx.op(), "Input", input, 1);
  const int64_t seqs = static_cast<int64_t>(offsets.size()) - 1;
  if (weight.dims() != std::vector<int64_t>{d, 4 * d}) {
    throw Error("Weight " + DimsString(weight.dims()) + " must be [D, 4D] = [" + std::to_string(d) + ", " +
                std::to_string(4 * d) + "] (Input " + DimsString(input.dims()) + ")");
  }
  if (h0.has_value() != c0.has_value()) throw Error("H0 and C0 come together: the op has only one of them");
  for (const std::optional<Tensor>* state : {&h0, &c0}) {
    if (state->has_value() && (*state)->dims() != std::vector<int64_t>{seqs, d}) {
      throw Error(std::string(state == &h0 ? "H0 " : "C0 ") + DimsString((*state)->dims()) + " must be [N, D] = [" +
                  std::to_string(seqs) + ", " + std::to_string(d) + "]: a row for each sequence of Input");
    }
  }
  return {LstmCellOf(ctx, d, bias, /*has_cell_clip=*/false), RecurrentBatchesOf(offsets, ctx.Attr<bool>("is_reverse"))};
}

template <class T> void LstmForward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight"), bias = ctx.Input("Bias");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), c0 = OptionalInput(ctx, "C0");
  const Lstm l = LstmOf(ctx, input, weight, bias, h0, c0);
  const RecurrentBatches& b = l.batches;
  const int64_t d = l.cell.d, g4 = 4 * d, rows = input.dims()[0];
  const T* w = weight.data<T>();
  const T* peep = l.cell.peepholes ? bias.data<T>() + g4 : nullptr;
  std::unique_ptr<T[]> hidden = Scratch<T>(rows * d), cell = Scratch<T>(rows * d);
  const std::unique_ptr<T[]> h_first = InitialStatesInOrder<T>(b, h0, d), c_first = InitialStatesInOrder<T>(b, c0, d);
  const std::initializer_list<const char*> inputs = {"Input", "H0", "C0", "Weight", "Bias"};
  WriteOutput<T>(ctx, "BatchGate", inputs, {rows, g4}, [&](T* gates) {
    WriteOutput<T>(ctx, "BatchCellPreAct", inputs, {rows, d}, [&](T* cell_act) {
      GatherRows(input.data<T>(), g4, b.source, rows, gates);
      MatrixMap<T>(gates, rows, g4).rowwise() += ConstMatrixMap<T>(bias.data<T>(), 1, g4).row(0);
      for (int64_t t = 0; t < b.steps(); ++t) {
        const int64_t k = b.Count(t), at = b.starts[t];
        const T* h_prev = t > 0 ? hidden.get() + b.starts[t - 1] * d : h_first.get();
        const T* c_prev = t > 0 ? cell.get() + b.starts[t - 1] * d : c_first.get();
        if (h_prev != nullptr) Gemm<T>(false, false, k, g4, d, T(1), h_prev, d, w, g4, T(1), gates + at * g4, g4);
        ParallelFor(k, 8.0 * k * d * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
          for (int64_t j = begin; j < end; ++j) {
            const int64_t row = at + j;
            StepForward<T>(l.cell, peep, c_prev != nullptr ? c_prev + j * d : nullptr, gates + row * g4,
                           cell.get() + row * d, cell_act + row * d, hidden.get() + row * d);
          }
        });
      }
    });
  });
  const std::vector<std::vector<uint64_t>> lod = input.lod();
  WriteInSequenceOrder<T>(ctx, "Hidden", b, d, hidden.get(), lod);
  WriteInSequenceOrder<T>(ctx, "Cell", b, d, cell.get(), lod);
}

template <class T> void LstmBackward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight"), bias = ctx.Input("Bias");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), c0 = OptionalInput(ctx, "C0");
  const Lstm l = LstmOf(ctx, input, weight, bias, h0, c0);
  const RecurrentBatches& b = l.batches;
  const int64_t d = l.cell.d, g4 = 4 * d, rows = input.dims()[0];
  Tensor hidden = ctx.Input("Hidden"), cell = ctx.Input("Cell"), dhidden = ctx.Input("Hidden@GRAD");
  Tensor gates = ctx.Input("BatchGate"), cell_act = ctx.Input("BatchCellPreAct");
  CheckWrittenBy("lstm", rows,
                 {{"Hidden", &hidden, d},
                  {"Cell", &cell, d},
                  {"Hidden@GRAD", &dhidden, d},
                  {"BatchGate", &gates, g4},
                  {"BatchCellPreAct", &cell_act, d}});
  const T* w = weight.data<T>();
  const T* peep = l.cell.peepholes ? bias.data<T>() + g4 : nullptr;
  const T* g = gates.data<T>();
  const T* ca = cell_act.data<T>();
  std::unique_ptr<T[]> bh = Scratch<T>(rows * d), bc = Scratch<T>(rows * d), dh = Scratch<T>(rows * d);
  GatherRows(hidden.data<T>(), d, b.source, rows, bh.get());
  GatherRows(cell.data<T>(), d, b.source, rows, bc.get());
  GatherRows(dhidden.data<T>(), d, b.source, rows, dh.get());
  std::unique_ptr<T[]> dc = Scratch<T>(rows * d), dg = Scratch<T>(rows * g4);
  std::fill(dc.get(), dc.get() + rows * d, T(0));
  const std::unique_ptr<T[]> h_first = InitialStatesInOrder<T>(b, h0, d), c_first = InitialStatesInOrder<T>(b, c0, d);
  std::unique_ptr<T[]> dh_first = Scratch<T>(b.FirstCount() * d), dc_first = Scratch<T>(b.FirstCount() * d);
  const bool want_weight = HasOutputVariable(ctx, "Weight@GRAD");
  std::unique_ptr<T[]> dw = Scratch<T>(want_weight ? d * g4 : 0);
  if (want_weight) std::fill(dw.get(), dw.get() + d * g4, T(0));
  for (int64_t t = b.steps() - 1; t >= 0; --t) {
    const int64_t k = b.Count(t), at = b.starts[t], before = t > 0 ? b.starts[t - 1] : 0;
    const T* h_prev = t > 0 ? bh.get() + before * d : h_first.get();
    const T* c_prev = t > 0 ? bc.get() + before * d : c_first.get();
    T* dh_prev = t > 0 ? dh.get() + before * d : (h0 ? dh_first.get() : nullptr);
    T* dc_prev = t > 0 ? dc.get() + before * d : (c0 ? dc_first.get() : nullptr);
    ParallelFor(k, 12.0 * k * d * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
      std::unique_ptr<T[]> tmp = Scratch<T>(d);
      for (int64_t j = begin; j < end; ++j) {
        const int64_t row = at + j;
        StepBackward<T>(l.cell, peep, g + row * g4, bc.get() + row * d, ca + row * d,
                        c_prev != nullptr ? c_prev + j * d : nullptr, dh.get() + row * d, dc.get() + row * d,
                        dg.get() + row * g4, dc_prev != nullptr ? dc_prev + j * d : nullptr, tmp.get());
      }
    });
    if (h_prev == nullptr) continue;
    // t > 0 adds into the previous step's gradient; the first step writes H0's.
    Gemm<T>(false, true, k, d, g4, T(1), dg.get() + at * g4, g4, w, g4, t > 0 ? T(1) : T(0), dh_prev, d);
    if (want_weight) Gemm<T>(true, false, d, g4, k, T(1), h_prev, d, dg.get() + at * g4, g4, T(1), dw.get(), g4);
  }
  if (HasOutputVariable(ctx, "Input@GRAD")) {
    WriteInSequenceOrder<T>(ctx, "Input@GRAD", b, g4, dg.get(), input.lod());
  }
  if (want_weight) {
    WriteOutput<T>(ctx, "Weight@GRAD", {}, {d, g4}, [&](T* p) { std::copy(dw.get(), dw.get() + d * g4, p); });
  }
  if (HasOutputVariable(ctx, "Bias@GRAD")) {
    WriteOutput<T>(ctx, "Bias@GRAD", {}, bias.dims(),
                   [&](T* p) { LstmBiasGrad<T>(l.cell, b, dg.get(), bc.get(), c_first.get(), p); });
  }
  if (h0 && HasOutputVariable(ctx, "H0@GRAD")) WriteInitialStateGrad(ctx, "H0@GRAD", b, d, dh_first.get());
  if (c0 && HasOutputVariable(ctx, "C0@GRAD")) WriteInitialStateGrad(ctx, "C0@GRAD", b, d, dc_first.get());
}

}  // namespace

void RegisterLstm(Registrar& r) {
  OpSchema lstm =
      OpSchema("lstm")
          .Doc(
              "The LSTM over each sequence of Input (its input projections, [R, 4D]): gates candidate, input, "
              "forget, output; peephole connections with use_peepholes. As Paddle's (Fluid's dynamic_lstm).")
          .Input("Input", "[R, 4D], a LoD tensor of one level: each step's input projections")
          .Input("H0", "[N, D]: each sequence's initial hidden state (with C0)", RILL_SLOT_OPTIONAL)
          .Input("C0", "[N, D]: each sequence's initial cell state (with H0)", RILL_SLOT_OPTIONAL)
          .Input("Weight", "[D, 4D]: the hidden-to-gates weights")
          .Input("Bias", "[1, 4D], or with use_peepholes [1, 7D]: the gate bias, then w_ic, w_fc, w_oc")
          .Output("Hidden", "[R, D], Input's LoD: every step's h")
          .Output("Cell", "[R, D], Input's LoD: every step's c")
          .Output("BatchGate", "[R, 4D]: the activated gates, in batch order (for lstm_grad)")
          .Output("BatchCellPreAct", "[R, D]: act_cell(c), in batch order (for lstm_grad)")
          .KernelDtypeFrom("Input");
  WithLstmCellAttrs(lstm).Grad("lstm_grad", "Input,H0,C0,Weight,Bias,Hidden,Cell,BatchGate,BatchCellPreAct,Hidden@GRAD",
                               "Input,H0,C0,Weight,Bias");
  r.Op(lstm);
  r.Op(lstm.MakeGradSchema());
  RegisterCpu<float, double>(r, "lstm", [](auto t) { return &LstmForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "lstm_grad", [](auto t) { return &LstmBackward<decltype(t)>; });
}

}  // namespace rill::math
