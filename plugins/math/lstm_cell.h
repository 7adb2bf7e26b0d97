// plugins/math/lstm_cell.h — one step of an LSTM cell, forward and backward, shared by lstm
// (Fluid's dynamic_lstm) and lstmp (the same with a recurrent projection), with Paddle's
// gate order: candidate, input, forget, output. From a row's gate sums g (4D: the input's
// projection, the recurrent product and the bias) and its previous cell c_prev:
//
//   cand = act_cand(g_c);   i = act_gate(g_i + w_ic c_prev);   f = act_gate(g_f + w_fc c_prev)
//   c = f c_prev + i cand, clamped to [-cell_clip, cell_clip] when cell_clip > 0
//   o = act_gate(g_o + w_oc c);   h = o act_cell(c)
//
// w_ic, w_fc, w_oc are the peephole weights (use_peepholes), held in Bias after the gate bias
// ([1, 7D]; [1, 4D] without them). A clamped cell passes no gradient back to its gates or
// to c_prev (the clamp's derivative is 0 there), as Paddle's kernels have it.
#ifndef RILL_PLUGINS_MATH_LSTM_CELL_H_
#define RILL_PLUGINS_MATH_LSTM_CELL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels.h"
#include "recurrent_batches.h"
#include "rnn_activation.h"

namespace rill::math {

struct LstmCell {
  int64_t d = 0;  // the hidden size D
  RnnActivation gate, cell, cand;
  bool peepholes = false;
  double cell_clip = 0;  // > 0: the cell is clamped to [-cell_clip, cell_clip]
};

// Declares on `schema` the attributes LstmCellOf reads, but cell_clip.
inline OpSchema& WithLstmCellAttrs(OpSchema& schema) {
  return schema.Attr("use_peepholes", true, "the gates see the cell (Bias holds the peephole weights)")
      .Attr("is_reverse", false, "run each sequence from its last row to its first")
      .Attr("gate_activation", "sigmoid", "the input, forget and output gates' activation")
      .Attr("cell_activation", "tanh", "the activation of c in h = o act(c)")
      .Attr("candidate_activation", "tanh", "the candidate's activation");
}

// The cell of hidden size `d` the op's attributes describe (use_peepholes, the three
// activations, and cell_clip where the op has it), after checking Bias against it.
inline LstmCell LstmCellOf(KernelContext& ctx, int64_t d, const Tensor& bias, bool has_cell_clip) {
  LstmCell l;
  l.d = d;
  l.peepholes = ctx.Attr<bool>("use_peepholes");
  const int64_t bias_width = (l.peepholes ? 7 : 4) * d;
  if (bias.dims() != std::vector<int64_t>{1, bias_width}) {
    throw Error("Bias " + DimsString(bias.dims()) + " must be [1, " + std::to_string(bias_width) + "]" +
                (l.peepholes ? ": the gate bias and the three peephole weights (use_peepholes)" : ": the gate bias"));
  }
  l.gate = RnnActivationOf(ctx, "gate_activation");
  l.cell = RnnActivationOf(ctx, "cell_activation");
  l.cand = RnnActivationOf(ctx, "candidate_activation");
  if (has_cell_clip) l.cell_clip = ctx.Attr<float>("cell_clip");
  return l;
}

// One step of one sequence: g (4D: the gates' sums, activated in place), c_prev (null:
// zeros) and the peephole weights (null without them) give c, act_cell(c) and h.
template <class T> void StepForward(const LstmCell& l, const T* peep, const T* c_prev, T* g, T* c, T* c_act, T* h) {
  const int64_t d = l.d;
  T *cand = g, *i = g + d, *f = g + 2 * d, *o = g + 3 * d;
  Activate(l.cand, cand, d, cand);
  if (peep != nullptr && c_prev != nullptr) {
    VecMap<T>(i, d) += ConstVecMap<T>(c_prev, d) * ConstVecMap<T>(peep, d);
    VecMap<T>(f, d) += ConstVecMap<T>(c_prev, d) * ConstVecMap<T>(peep + d, d);
  }
  Activate(l.gate, i, d, i);
  Activate(l.gate, f, d, f);
  VecMap<T> cell(c, d);
  cell = ConstVecMap<T>(cand, d) * ConstVecMap<T>(i, d);
  if (c_prev != nullptr) cell += ConstVecMap<T>(c_prev, d) * ConstVecMap<T>(f, d);
  if (l.cell_clip > 0) cell = cell.max(static_cast<T>(-l.cell_clip)).min(static_cast<T>(l.cell_clip));
  if (peep != nullptr) VecMap<T>(o, d) += cell * ConstVecMap<T>(peep + 2 * d, d);
  Activate(l.gate, o, d, o);
  Activate(l.cell, c, d, c_act);
  VecMap<T>(h, d) = ConstVecMap<T>(o, d) * ConstVecMap<T>(c_act, d);
}

// One step of one sequence backward: from the step's activated gates g, c, act_cell(c),
// c_prev (null: zeros) and dh (the step's whole hidden gradient), with dc holding what the
// cell's gradient has from the step after it (updated to its whole gradient), writes dg (the
// gradient of the gates' sums) and, when not null, dc_prev. tmp holds D values.
template <class T>
void StepBackward(const LstmCell& l, const T* peep, const T* g, const T* c, const T* c_act, const T* c_prev,
                  const T* dh, T* dc, T* dg, T* dc_prev, T* tmp) {
  const int64_t d = l.d;
  const T *cand = g, *i = g + d, *f = g + 2 * d, *o = g + 3 * d;
  T *dcand = dg, *di = dg + d, *df = dg + 2 * d, *dout = dg + 3 * d;
  VecMap<T> t(tmp, d), dcell(dc, d);
  t = ConstVecMap<T>(dh, d) * ConstVecMap<T>(c_act, d);
  ActivationGrad(l.gate, tmp, o, d, dout);
  t = ConstVecMap<T>(dh, d) * ConstVecMap<T>(o, d);
  ActivationGrad(l.cell, tmp, c_act, d, tmp);
  dcell += t;
  if (peep != nullptr) dcell += ConstVecMap<T>(dout, d) * ConstVecMap<T>(peep + 2 * d, d);
  if (l.cell_clip > 0) {
    dcell = (ConstVecMap<T>(c, d).abs() >= static_cast<T>(l.cell_clip)).select(T(0), dcell);
  }
  t = dcell * ConstVecMap<T>(i, d);
  ActivationGrad(l.cand, tmp, cand, d, dcand);
  t = dcell * ConstVecMap<T>(cand, d);
  ActivationGrad(l.gate, tmp, i, d, di);
  if (c_prev != nullptr) {
    t = dcell * ConstVecMap<T>(c_prev, d);
    ActivationGrad(l.gate, tmp, f, d, df);
  } else {
    VecMap<T>(df, d).setZero();
  }
  if (dc_prev == nullptr) return;
  VecMap<T> back(dc_prev, d);
  back = dcell * ConstVecMap<T>(f, d);
  if (peep != nullptr) {
    back += ConstVecMap<T>(di, d) * ConstVecMap<T>(peep, d) + ConstVecMap<T>(df, d) * ConstVecMap<T>(peep + d, d);
  }
}

// Bias's gradient ([1, 4D] or [1, 7D]) at p from every step's gate gradients dg ([rows, 4D],
// batch order) and cells c ([rows, D], batch order): the gate bias's is dg summed over the
// rows; the peephole weights' (w_ic, w_fc from c_prev, w_oc from c) are summed over every
// step. c_first holds step 0's previous cells in batch order (null: zeros).
template <class T>
void LstmBiasGrad(const LstmCell& l, const RecurrentBatches& b, const T* dg, const T* c, const T* c_first, T* p) {
  const int64_t d = l.d, g4 = 4 * d, rows = b.rows();
  VecMap<T>(p, g4) = ConstMatrixMap<T>(dg, rows, g4).colwise().sum().transpose().array();
  if (!l.peepholes) return;
  VecMap<T> dic(p + g4, d), dfc(p + 5 * d, d), doc(p + 6 * d, d);
  dic.setZero();
  dfc.setZero();
  doc.setZero();
  for (int64_t t = 0; t < b.steps(); ++t) {
    for (int64_t j = 0; j < b.Count(t); ++j) {
      const int64_t row = b.starts[t] + j;
      const T* dgr = dg + row * g4;
      doc += ConstVecMap<T>(dgr + 3 * d, d) * ConstVecMap<T>(c + row * d, d);
      const T* c_prev = t > 0 ? c + (b.starts[t - 1] + j) * d : (c_first ? c_first + j * d : nullptr);
      if (c_prev == nullptr) continue;
      dic += ConstVecMap<T>(dgr + d, d) * ConstVecMap<T>(c_prev, d);
      dfc += ConstVecMap<T>(dgr + 2 * d, d) * ConstVecMap<T>(c_prev, d);
    }
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_LSTM_CELL_H_
