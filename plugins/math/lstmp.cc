// lstmp, lstmp_grad: the LSTM with a recurrent projection over each sequence of a LoD
// tensor (Fluid's dynamic_lstmp), with Paddle's contract (paddle/fluid/operators/lstmp_op.*).
//
// As lstm (lstm_cell.h: the same gates, peepholes and activations), except that what recurs
// is the projection r of the hidden state, of width P, not h itself:
//
//   g = x + r_prev Weight + b       (Weight [P, 4D]; r_prev from H0 [N, P] or zeros at step 0)
//   c, h as lstm's, c clamped to [-cell_clip, cell_clip] when cell_clip > 0
//   r = act_proj(h ProjWeight)      (ProjWeight [D, P]), clamped to [-proj_clip, proj_clip] when > 0
//
// Projection [R, P] and Cell [R, D] carry Input's LoD; BatchGate, BatchCellPreAct and
// BatchHidden (h) keep, in batch order (recurrent_batches.h), what lstmp_grad needs. Only
// Projection's gradient flows back. Paddle's kernel applies cell_activation to the
// projection whenever proj_activation is not identity; this one applies proj_activation, as
// the op's documentation says: the two agree whenever they are equal or proj_activation is
// identity (Fluid's dynamic_lstmp defaults both to tanh).
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

struct Lstmp {
  LstmCell cell;
  int64_t p = 0;  // the projection size P
  RnnActivation proj;
  double proj_clip = 0;
  RecurrentBatches batches;
};

Lstmp LstmpOf(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor& proj_weight,
              const Tensor& bias, const std::optional<Tensor>& h0, const std::optional<Tensor>& c0) {
  if (input.ndim() != 2 || input.dims()[1] % 4 != 0 || input.dims()[1] == 0) {
    throw Error("Input " + DimsString(input.dims()) + " must be [R, 4D]: the four gates' input projections");
  }
  const int64_t d = input.dims()[1] / 4;
  const std::vector<uint64_t> offsets = SequenceOffsets(ctx.op(), "Input", input, 1);
  const int64_t seqs = static_cast<int64_t>(offsets.size()) - 1;
  if (proj_weight.ndim() != 2 || proj_weight.dims()[0] != d || proj_weight.dims()[1] < 1) {
    throw Error("ProjWeight " + DimsString(proj_weight.dims()) + " must be [D, P] with D = " + std::to_string(d) +
                " (Input " + DimsString(input.dims()) + ")");
  }
  const int64_t p = proj_weight.dims()[1];
  if (weight.dims() != std::vector<int64_t>{p, 4 * d}) {
    throw Error("Weight " + DimsString(weight.dims()) + " must be [P, 4D] = [" + std::to_string(p) + ", " +
                std::to_string(4 * d) + "] (ProjWeight " + DimsString(proj_weight.dims()) + ")");
  }
  if (h0.has_value() != c0.has_value()) throw Error("H0 and C0 come together: the op has only one of them");
  if (h0 && h0->dims() != std::vector<int64_t>{seqs, p}) {
    throw Error("H0 " + DimsString(h0->dims()) + " must be [N, P] = [" + std::to_string(seqs) + ", " +
                std::to_string(p) + "]: each sequence's initial projection");
  }
  if (c0 && c0->dims() != std::vector<int64_t>{seqs, d}) {
    throw Error("C0 " + DimsString(c0->dims()) + " must be [N, D] = [" + std::to_string(seqs) + ", " +
                std::to_string(d) + "]: each sequence's initial cell");
  }
  Lstmp l;
  l.cell = LstmCellOf(ctx, d, bias, /*has_cell_clip=*/true);
  l.p = p;
  l.proj = RnnActivationOf(ctx, "proj_activation");
  l.proj_clip = ctx.Attr<float>("proj_clip");
  l.batches = RecurrentBatchesOf(offsets, ctx.Attr<bool>("is_reverse"));
  return l;
}

template <class T> void LstmpForward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight"), proj_weight = ctx.Input("ProjWeight");
  Tensor bias = ctx.Input("Bias");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), c0 = OptionalInput(ctx, "C0");
  const Lstmp l = LstmpOf(ctx, input, weight, proj_weight, bias, h0, c0);
  const RecurrentBatches& b = l.batches;
  const int64_t d = l.cell.d, p = l.p, g4 = 4 * d, rows = input.dims()[0];
  const T *w = weight.data<T>(), *wp = proj_weight.data<T>();
  const T* peep = l.cell.peepholes ? bias.data<T>() + g4 : nullptr;
  std::unique_ptr<T[]> proj = Scratch<T>(rows * p), cell = Scratch<T>(rows * d);
  const std::unique_ptr<T[]> r_first = InitialStatesInOrder<T>(b, h0, p), c_first = InitialStatesInOrder<T>(b, c0, d);
  const std::initializer_list<const char*> inputs = {"Input", "H0", "C0", "Weight", "ProjWeight", "Bias"};
  WriteOutput<T>(ctx, "BatchGate", inputs, {rows, g4}, [&](T* gates) {
    WriteOutput<T>(ctx, "BatchCellPreAct", inputs, {rows, d}, [&](T* cell_act) {
      WriteOutput<T>(ctx, "BatchHidden", inputs, {rows, d}, [&](T* hidden) {
        GatherRows(input.data<T>(), g4, b.source, rows, gates);
        MatrixMap<T>(gates, rows, g4).rowwise() += ConstMatrixMap<T>(bias.data<T>(), 1, g4).row(0);
        for (int64_t t = 0; t < b.steps(); ++t) {
          const int64_t k = b.Count(t), at = b.starts[t];
          const T* r_prev = t > 0 ? proj.get() + b.starts[t - 1] * p : r_first.get();
          const T* c_prev = t > 0 ? cell.get() + b.starts[t - 1] * d : c_first.get();
          if (r_prev != nullptr) Gemm<T>(false, false, k, g4, p, T(1), r_prev, p, w, g4, T(1), gates + at * g4, g4);
          ParallelFor(k, 8.0 * k * d * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
            for (int64_t j = begin; j < end; ++j) {
              const int64_t row = at + j;
              StepForward<T>(l.cell, peep, c_prev != nullptr ? c_prev + j * d : nullptr, gates + row * g4,
                             cell.get() + row * d, cell_act + row * d, hidden + row * d);
            }
          });
          T* r = proj.get() + at * p;
          Gemm<T>(false, false, k, p, d, T(1), hidden + at * d, d, wp, p, T(0), r, p);
          Activate(l.proj, r, k * p, r);
          if (l.proj_clip > 0) {
            const T clip = static_cast<T>(l.proj_clip);
            VecMap<T>(r, k * p) = VecMap<T>(r, k * p).max(-clip).min(clip);
          }
        }
      });
    });
  });
  const std::vector<std::vector<uint64_t>> lod = input.lod();
  WriteInSequenceOrder<T>(ctx, "Projection", b, p, proj.get(), lod);
  WriteInSequenceOrder<T>(ctx, "Cell", b, d, cell.get(), lod);
}

template <class T> void LstmpBackward(KernelContext& ctx) {
  Tensor input = ctx.Input("Input"), weight = ctx.Input("Weight"), proj_weight = ctx.Input("ProjWeight");
  Tensor bias = ctx.Input("Bias");
  const std::optional<Tensor> h0 = OptionalInput(ctx, "H0"), c0 = OptionalInput(ctx, "C0");
  const Lstmp l = LstmpOf(ctx, input, weight, proj_weight, bias, h0, c0);
  const RecurrentBatches& b = l.batches;
  const int64_t d = l.cell.d, p = l.p, g4 = 4 * d, rows = input.dims()[0];
  Tensor proj = ctx.Input("Projection"), cell = ctx.Input("Cell"), dproj_t = ctx.Input("Projection@GRAD");
  Tensor gates = ctx.Input("BatchGate"), cell_act = ctx.Input("BatchCellPreAct"), hidden = ctx.Input("BatchHidden");
  CheckWrittenBy("lstmp", rows,
                 {{"Projection", &proj, p},
                  {"Cell", &cell, d},
                  {"Projection@GRAD", &dproj_t, p},
                  {"BatchGate", &gates, g4},
                  {"BatchCellPreAct", &cell_act, d},
                  {"BatchHidden", &hidden, d}});
  const T *w = weight.data<T>(), *wp = proj_weight.data<T>();
  const T* peep = l.cell.peepholes ? bias.data<T>() + g4 : nullptr;
  const T *g = gates.data<T>(), *ca = cell_act.data<T>(), *h = hidden.data<T>();
  std::unique_ptr<T[]> br = Scratch<T>(rows * p), bc = Scratch<T>(rows * d), dr = Scratch<T>(rows * p);
  GatherRows(proj.data<T>(), p, b.source, rows, br.get());
  GatherRows(cell.data<T>(), d, b.source, rows, bc.get());
  GatherRows(dproj_t.data<T>(), p, b.source, rows, dr.get());
  std::unique_ptr<T[]> dh = Scratch<T>(rows * d), dc = Scratch<T>(rows * d), dg = Scratch<T>(rows * g4);
  std::fill(dc.get(), dc.get() + rows * d, T(0));
  const std::unique_ptr<T[]> r_first = InitialStatesInOrder<T>(b, h0, p), c_first = InitialStatesInOrder<T>(b, c0, d);
  std::unique_ptr<T[]> dr_first = Scratch<T>(b.FirstCount() * p), dc_first = Scratch<T>(b.FirstCount() * d);
  const bool want_weight = HasOutputVariable(ctx, "Weight@GRAD");
  const bool want_proj_weight = HasOutputVariable(ctx, "ProjWeight@GRAD");
  std::unique_ptr<T[]> dw = Scratch<T>(want_weight ? p * g4 : 0), dwp = Scratch<T>(want_proj_weight ? d * p : 0);
  if (want_weight) std::fill(dw.get(), dw.get() + p * g4, T(0));
  if (want_proj_weight) std::fill(dwp.get(), dwp.get() + d * p, T(0));
  for (int64_t t = b.steps() - 1; t >= 0; --t) {
    const int64_t k = b.Count(t), at = b.starts[t], before = t > 0 ? b.starts[t - 1] : 0;
    // The projection's gradient (the step's own and the next step's, added there) back
    // through its clamp (none where it clamped) and its activation, then to h and ProjWeight.
    T* drt = dr.get() + at * p;
    const T* r = br.get() + at * p;
    if (l.proj_clip > 0) {
      const T clip = static_cast<T>(l.proj_clip);
      VecMap<T>(drt, k * p) = (ConstVecMap<T>(r, k * p).abs() < clip).select(VecMap<T>(drt, k * p), T(0));
    }
    ActivationGrad(l.proj, drt, r, k * p, drt);
    Gemm<T>(false, true, k, d, p, T(1), drt, p, wp, p, T(0), dh.get() + at * d, d);
    if (want_proj_weight) Gemm<T>(true, false, d, p, k, T(1), h + at * d, d, drt, p, T(1), dwp.get(), p);
    const T* r_prev = t > 0 ? br.get() + before * p : r_first.get();
    const T* c_prev = t > 0 ? bc.get() + before * d : c_first.get();
    T* dr_prev = t > 0 ? dr.get() + before * p : (h0 ? dr_first.get() : nullptr);
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
    if (r_prev == nullptr) continue;
    // t > 0 adds into the previous step's projection gradient; the first step writes H0's.
    Gemm<T>(false, true, k, p, g4, T(1), dg.get() + at * g4, g4, w, g4, t > 0 ? T(1) : T(0), dr_prev, p);
    if (want_weight) Gemm<T>(true, false, p, g4, k, T(1), r_prev, p, dg.get() + at * g4, g4, T(1), dw.get(), g4);
  }
  if (HasOutputVariable(ctx, "Input@GRAD")) {
    WriteInSequenceOrder<T>(ctx, "Input@GRAD", b, g4, dg.get(), input.lod());
  }
  if (want_weight) {
    WriteOutput<T>(ctx, "Weight@GRAD", {}, {p, g4}, [&](T* o) { std::copy(dw.get(), dw.get() + p * g4, o); });
  }
  if (want_proj_weight) {
    WriteOutput<T>(ctx, "ProjWeight@GRAD", {}, {d, p}, [&](T* o) { std::copy(dwp.get(), dwp.get() + d * p, o); });
  }
  if (HasOutputVariable(ctx, "Bias@GRAD")) {
    WriteOutput<T>(ctx, "Bias@GRAD", {}, bias.dims(),
                   [&](T* o) { LstmBiasGrad<T>(l.cell, b, dg.get(), bc.get(), c_first.get(), o); });
  }
  if (h0 && HasOutputVariable(ctx, "H0@GRAD")) WriteInitialStateGrad(ctx, "H0@GRAD", b, p, dr_first.get());
  if (c0 && HasOutputVariable(ctx, "C0@GRAD")) WriteInitialStateGrad(ctx, "C0@GRAD", b, d, dc_first.get());
}

}  // namespace

void RegisterLstmp(Registrar& r) {
  OpSchema lstmp =
      OpSchema("lstmp")
          .Doc(
              "The LSTM with a recurrent projection over each sequence of Input ([R, 4D] input projections): "
              "r = act_proj(h ProjWeight) recurs instead of h. As Paddle's (Fluid's dynamic_lstmp); see lstmp.cc.")
          .Input("Input", "[R, 4D], a LoD tensor of one level: each step's input projections")
          .Input("H0", "[N, P]: each sequence's initial projection (with C0)", RILL_SLOT_OPTIONAL)
          .Input("C0", "[N, D]: each sequence's initial cell state (with H0)", RILL_SLOT_OPTIONAL)
          .Input("Weight", "[P, 4D]: the projection-to-gates weights")
          .Input("ProjWeight", "[D, P]: the hidden-to-projection weights")
          .Input("Bias", "[1, 4D], or with use_peepholes [1, 7D]: the gate bias, then w_ic, w_fc, w_oc")
          .Output("Projection", "[R, P], Input's LoD: every step's r")
          .Output("Cell", "[R, D], Input's LoD: every step's c")
          .Output("BatchGate", "[R, 4D]: the activated gates, in batch order (for lstmp_grad)")
          .Output("BatchCellPreAct", "[R, D]: act_cell(c), in batch order (for lstmp_grad)")
          .Output("BatchHidden", "[R, D]: h, in batch order (for lstmp_grad)")
          .Attr("cell_clip", 0.0f, "when > 0, c is clamped to [-cell_clip, cell_clip]")
          .Attr("proj_clip", 0.0f, "when > 0, r is clamped to [-proj_clip, proj_clip]")
          .Attr("proj_activation", "tanh", "the projection's activation")
          .KernelDtypeFrom("Input");
  WithLstmCellAttrs(lstmp).Grad(
      "lstmp_grad",
      "Input,H0,C0,Weight,ProjWeight,Bias,Projection,Cell,BatchGate,BatchCellPreAct,BatchHidden,"
      "Projection@GRAD",
      "Input,H0,C0,Weight,ProjWeight,Bias");
  r.Op(lstmp);
  r.Op(lstmp.MakeGradSchema());
  RegisterCpu<float, double>(r, "lstmp", [](auto t) { return &LstmpForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "lstmp_grad", [](auto t) { return &LstmpBackward<decltype(t)>; });
}

}  // namespace rill::math
