// Optimizers, updating parameters in place (ParamOut is usually Param itself), with
// Fluid's contracts; g is Grad, lr the [1] LearningRate:
//   sgd             ParamOut = Param - lr * g (a SelectedRows Grad changes only its rows)
//   momentum        v = mu * v + g; ParamOut = Param - lr * (nesterov ? g + mu * v : v)
//   adam            m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2;
//                   ParamOut = Param - lr * sqrt(1 - b2^t) / (1 - b1^t) * m1 / (sqrt(m2) + eps)
//                   where b1^t, b2^t come in as Beta1Pow/Beta2Pow (and, when the outputs are
//                   given, are advanced by one step into Beta1PowOut/Beta2PowOut)
//   adagrad         m = m + g^2; ParamOut = Param - lr * g / (sqrt(m) + eps)
//   decayed_adagrad m = decay m + (1-decay) g^2; ParamOut = Param - lr * g / (sqrt(m) + eps)
//   rmsprop         ms = decay ms + (1-decay) g^2 (centered: mg = decay mg + (1-decay) g);
//                   mom = momentum mom + lr * g / sqrt(ms (- mg^2) + eps); ParamOut = Param - mom
//   adamax          m = b1 m + (1-b1) g; u = max(b2 u + eps, |g|);
//                   ParamOut = Param - lr / (1 - b1^t) * m / u (Beta1Pow: b1^t)
//   adadelta        Eg = rho Eg + (1-rho) g^2; d = -sqrt((Ed + eps) / (Eg + eps)) * g;
//                   Ed = rho Ed + (1-rho) d^2; ParamOut = Param + (lr, when given) * d
//   ftrl            n' = n + g^2; z = z + g - (n'^-p - n^-p) / lr * Param (p: lr_power);
//                   ParamOut = |z| > l1 ? (l1 sign(z) - z) / (n'^-p / lr + 2 l2) : 0; n = n'
//                   (l1 and l2 each plus 1e-10, as Paddle's kernel; a SelectedRows Grad
//                   updates only its rows)
//
// Every dense update is elementwise: it runs in blocks of at most kBlock elements
// (ForEachBlock), each element read and written within one block, the blocks split across
// the passes' team; a block's temporaries live on the stack (BlockVec), never a tensor's
// size on the heap.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "broadcast.h"
#include "kernels.h"
#include "ops.h"
#include "optimizer_loops.h"
#include "parallel_for.h"
#include "reduction.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// The [1] learning rate, and the gradient checked against the parameter's shape.
template <class T> T LearningRate(KernelContext& ctx) {
  Tensor lr = ctx.Input("LearningRate");
  if (lr.numel() != 1) throw Error("LearningRate must hold one element, it has " + std::to_string(lr.numel()));
  return *lr.data<T>();
}

constexpr int64_t kBlock = 1024;
template <class T> using BlockVec = Eigen::Array<T, Eigen::Dynamic, 1, 0, kBlock, 1>;

// update(begin, count) over [0, n) in blocks of at most kBlock elements, on the passes'
// team; `arrays` is how many tensors of n T the update reads or writes.
template <class T, class F> void ForEachBlock(int64_t n, int arrays, const F& update) {
  ParallelFor(n, static_cast<double>(arrays) * sizeof(T) * n, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kBlock) update(b, std::min(kBlock, end - b));
  });
}

void CheckSameShape(const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  if (a.dims() != b.dims()) {
    throw Error(std::string(bn) + " " + DimsString(b.dims()) + " must have " + an + "'s shape " + DimsString(a.dims()));
  }
}

// The output `out_slot` holding `in_slot`'s current values, to be updated in place: the
// input's own memory when the output is the same variable (the usual case) and nothing
// else shares that memory (Allocate keeps it then), else new memory holding a copy, so a
// tensor sharing the input's memory (abi.h's tensor_share) keeps its values.
template <class T> VecMap<T> InPlace(KernelContext& ctx, const char* out_slot, const char* in_slot) {
  Tensor in = ctx.Input(in_slot);
  const T* from = in.data<T>();
  const int64_t n = in.numel();
  T* po = ctx.Output(out_slot).Allocate<T>(in.dims());
  if (po != from) std::copy(from, from + n, po);
  return VecMap<T>(po, n);
}

// The width of a row of `param` that SelectedRows `grad` holds rows of, after checking
// that its height, value and row numbers fit.
int64_t SparseRowWidth(const Tensor& param, const Variable::SelectedRows& grad) {
  const auto dims = param.dims();
  if (dims.empty() || grad.height != dims[0]) {
    throw Error("Grad is SelectedRows of height " + std::to_string(grad.height) + "; Param " + DimsString(dims) +
                " needs height " + (dims.empty() ? std::string("of a [rows, ...] tensor") : std::to_string(dims[0])));
  }
  const int64_t width = dims[0] == 0 ? 0 : param.numel() / dims[0];
  if (grad.value.numel() != static_cast<int64_t>(grad.count) * width) {
    throw Error("Grad's value " + DimsString(grad.value.dims()) + " must hold " + std::to_string(grad.count) +
                " rows of " + std::to_string(width) + " elements");
  }
  for (size_t i = 0; i < grad.count; ++i) {
    if (grad.rows[i] < 0 || grad.rows[i] >= grad.height) {
      throw Error("Grad row " + std::to_string(grad.rows[i]) + " is outside [0, " + std::to_string(grad.height) + ")");
    }
  }
  return width;
}

// sgd with a sparse gradient: only the gradient's rows of the parameter change.
template <class T> void SparseSgd(KernelContext& ctx, const Variable::SelectedRows& grad) {
  const int64_t width = SparseRowWidth(ctx.Input("Param"), grad);
  const T lr = LearningRate<T>(ctx);
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  const T* g = grad.value.data<T>();
  for (size_t i = 0; i < grad.count; ++i)
    p.segment(grad.rows[i] * width, width) -= lr * ConstVecMap<T>(g + i * width, width);
}

// sgd of a parameter held as SelectedRows (a slice of a table): each Grad row updates the
// Param row of the same number, which must be there; Param is updated in place.
template <class T> void SgdOfRows(KernelContext& ctx) {
  Variable param = ctx.InputVar("Param"), grad = ctx.InputVar("Grad");
  if (!grad.IsSelectedRows()) throw Error("Param is SelectedRows: Grad must be SelectedRows too");
  if (!OutputIsInput(ctx, "ParamOut", {"Param"})) throw Error("Param is SelectedRows: ParamOut must be Param");
  Variable::SelectedRows p = param.selected_rows();
  const Variable::SelectedRows g = grad.selected_rows();
  const int64_t width = p.count == 0 ? 0 : p.value.numel() / static_cast<int64_t>(p.count);
  if (g.value.numel() != static_cast<int64_t>(g.count) * width) {
    throw Error("Grad's value " + DimsString(g.value.dims()) + " must hold " + std::to_string(g.count) + " rows of " +
                std::to_string(width) + " elements, as Param's rows are");
  }
  std::unordered_map<int64_t, int64_t> at;
  for (size_t i = 0; i < p.count; ++i) at.emplace(p.rows[i], static_cast<int64_t>(i));
  const T lr = LearningRate<T>(ctx);
  T* pv = p.value.mutable_data<T>();
  const T* gv = g.value.data<T>();
  for (size_t i = 0; i < g.count; ++i) {
    const auto it = at.find(g.rows[i]);
    if (it == at.end()) throw Error("Grad row " + std::to_string(g.rows[i]) + " is not one of Param's rows");
    VecMap<T>(pv + it->second * width, width) -= lr * ConstVecMap<T>(gv + static_cast<int64_t>(i) * width, width);
  }
}

template <class T> void Sgd(KernelContext& ctx) {
  if (ctx.InputVar("Param").IsSelectedRows()) return SgdOfRows<T>(ctx);
  if (Variable grad = ctx.InputVar("Grad"); grad.IsSelectedRows()) return SparseSgd<T>(ctx, grad.selected_rows());
  Tensor param = ctx.Input("Param");
  Tensor grad = ctx.Input("Grad");
  CheckSameShape(param, "Param", grad, "Grad");
  const T lr = LearningRate<T>(ctx);
  const T* g = grad.data<T>();
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), 3, [&](int64_t b, int64_t n) { p.segment(b, n) -= lr * ConstVecMap<T>(g + b, n); });
}

// Grad's values shaped like Param. A SelectedRows Grad (momentum, adagrad and rmsprop take
// one, as Paddle's sparse kernels do) has its rows summed into zeros: those kernels treat a
// row it lacks as a zero gradient, which is what the dense update does with it.
template <class T> struct DenseGrad {
  std::vector<T> spread;  // a SelectedRows Grad's rows in zeros
  const T* dense;         // a dense Grad's values; null for SelectedRows
  int64_t size;
  ConstVecMap<T> vec() const { return ConstVecMap<T>(dense != nullptr ? dense : spread.data(), size); }
};

template <class T> DenseGrad<T> DenseGradOf(KernelContext& ctx, bool rows_allowed) {
  Tensor param = ctx.Input("Param");
  if (Variable var = ctx.InputVar("Grad"); var.IsSelectedRows()) {
    if (!rows_allowed) {
      throw Error(ctx.op().type() +
                  " takes a dense Grad, not SelectedRows (sgd, momentum, adam, adagrad and rmsprop "
                  "take rows)");
    }
    const Variable::SelectedRows rows = var.selected_rows();
    const int64_t width = SparseRowWidth(param, rows);
    return DenseGrad<T>{RowsIntoZeros(rows.rows, rows.count, rows.value.data<T>(), width, rows.height), nullptr,
                        param.numel()};
  }
  Tensor grad = ctx.Input("Grad");
  CheckSameShape(param, "Param", grad, "Grad");
  return DenseGrad<T>{{}, grad.data<T>(), grad.numel()};
}

template <class T> void Momentum(KernelContext& ctx) {
  Tensor param = ctx.Input("Param");
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/true);
  Tensor velocity = ctx.Input("Velocity");
  CheckSameShape(param, "Param", velocity, "Velocity");
  const T lr = LearningRate<T>(ctx);
  const T mu = static_cast<T>(ctx.Attr<float>("mu"));
  // The gradient rescaled, plus coeff * Param under l2_decay (read before Param is updated
  // in place).
  const std::string method = ctx.Attr<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay") {
    throw Error("regularization_method '" + method + "' is neither \"\" nor \"l2_decay\"");
  }
  const T rescale = static_cast<T>(ctx.Attr<float>("rescale_grad"));
  const T coeff = static_cast<T>(ctx.Attr<float>("regularization_coeff"));
  const bool decay = method == "l2_decay", nesterov = ctx.Attr<bool>("use_nesterov");
  const ConstVecMap<T> grads = grad.vec();
  auto v = InPlace<T>(ctx, "VelocityOut", "Velocity");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), 5, [&](int64_t b, int64_t n) {
    auto ps = p.segment(b, n), vs = v.segment(b, n);
    BlockVec<T> g = grads.segment(b, n) * rescale;
    if (decay) g += coeff * ps;
    vs = mu * vs + g;
    if (nesterov) {
      ps -= lr * (g + mu * vs);
    } else {
      ps -= lr * vs;
    }
  });
}

// LARS (You et al.): momentum with a layer-local learning rate,
// lr * lars_coeff * |Param| / (|Grad| + lars_weight_decay * |Param| + epsilon), where both
// norms are non-zero and the decay positive (else lr itself), and the decay added to Grad.
template <class T> void LarsMomentum(KernelContext& ctx) {
  Tensor param = ctx.Input("Param");
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/false);
  CheckSameShape(param, "Param", ctx.Input("Velocity"), "Velocity");
  const T lr = LearningRate<T>(ctx);
  const T mu = static_cast<T>(ctx.Attr<float>("mu")), coeff = static_cast<T>(ctx.Attr<float>("lars_coeff"));
  const T decay = static_cast<T>(ctx.Attr<float>("lars_weight_decay"));
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const ConstVecMap<T> g = grad.vec();
  const T p_norm = static_cast<T>(std::sqrt(SumOfSquares(param.data<T>(), param.numel())));
  const T g_norm = static_cast<T>(std::sqrt(SumOfSquares(g.data(), g.size())));
  const T local_lr = decay > 0 && p_norm > 0 && g_norm > 0 ? lr * coeff * p_norm / (g_norm + decay * p_norm + eps) : lr;
  auto v = InPlace<T>(ctx, "VelocityOut", "Velocity");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), 5, [&](int64_t b, int64_t n) {
    auto vs = v.segment(b, n), ps = p.segment(b, n);
    vs = mu * vs + local_lr * (g.segment(b, n) + decay * ps);  // Param read before it changes
    ps -= vs;
  });
}

// Adam on `g` (a gradient of `rows` rows of `width`, at rows `at` of the parameter, or
// all of it when `at` is null).
template <class T> void AdamUpdate(KernelContext& ctx, const T* g, const std::vector<int64_t>* at, int64_t width) {
  Tensor param = ctx.Input("Param");
  CheckSameShape(param, "Param", ctx.Input("Moment1"), "Moment1");
  CheckSameShape(param, "Param", ctx.Input("Moment2"), "Moment2");
  const T lr = LearningRate<T>(ctx);
  const T b1 = ScalarFromInput<T, float>(ctx, "Beta1Tensor", "beta1"),
          b2 = ScalarFromInput<T, float>(ctx, "Beta2Tensor", "beta2");
  const T eps = ScalarFromInput<T, float>(ctx, "EpsilonTensor", "epsilon");
  const T b1_pow = *ctx.Input("Beta1Pow").data<T>(), b2_pow = *ctx.Input("Beta2Pow").data<T>();
  const T lr_t = lr * std::sqrt(T(1) - b2_pow) / (T(1) - b1_pow);
  auto m1 = InPlace<T>(ctx, "Moment1Out", "Moment1");
  auto m2 = InPlace<T>(ctx, "Moment2Out", "Moment2");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  const auto update = [&](int64_t offset, int64_t n, const T* gp) {
    const ConstVecMap<T> gv(gp, n);
    auto m1s = m1.segment(offset, n), m2s = m2.segment(offset, n);
    m1s = b1 * m1s + (T(1) - b1) * gv;
    m2s = b2 * m2s + (T(1) - b2) * gv.square();
    p.segment(offset, n) -= lr_t * m1s / (m2s.sqrt() + eps);
  };
  if (at == nullptr) {
    ForEachBlock<T>(param.numel(), 7, [&](int64_t b, int64_t n) { update(b, n, g + b); });
  } else {
    for (size_t i = 0; i < at->size(); ++i) update((*at)[i] * width, width, g + static_cast<int64_t>(i) * width);
  }
  if (ctx.Attr<bool>("use_global_beta_pow")) return;  // another op advances the powers
  if (ctx.HasOutput("Beta1PowOut")) *ctx.Output("Beta1PowOut").Allocate<T>({1}) = b1_pow * b1;
  if (ctx.HasOutput("Beta2PowOut")) *ctx.Output("Beta2PowOut").Allocate<T>({1}) = b2_pow * b2;
}

// SkipUpdate (Paddle's, for steps whose gradients overflowed): when it holds true, every
// output is its input unchanged. Returns whether it did.
bool SkipsUpdate(KernelContext& ctx) {
  if (!ctx.HasInput("SkipUpdate")) return false;
  Tensor skip = ctx.Input("SkipUpdate");
  if (skip.dtype() != RILL_BOOL || skip.numel() != 1) {
    throw Error("SkipUpdate must be a bool tensor of one element, is " + std::string(DataTypeName(skip.dtype())) + " " +
                DimsString(skip.dims()));
  }
  if (!*skip.data<bool>()) return false;
  for (const auto& [out, in] : {std::pair{"ParamOut", "Param"},
                                {"Moment1Out", "Moment1"},
                                {"Moment2Out", "Moment2"},
                                {"Beta1PowOut", "Beta1Pow"},
                                {"Beta2PowOut", "Beta2Pow"}}) {
    if (ctx.HasOutput(out) && ctx.op().OutputName(out) != ctx.op().InputName(in)) {
      ctx.Output(out).ShareWith(ctx.Input(in));
    }
  }
  return true;
}

// A SelectedRows gradient's repeated rows summed: Fluid's sparse Adam sees each row once.
// lazy_mode updates those rows alone; otherwise every row is updated, the others with a
// zero gradient (their moments decay), exactly as the dense gradient would.
template <class T> void SparseAdam(KernelContext& ctx, const Variable::SelectedRows& grad) {
  Tensor param = ctx.Input("Param");
  const int64_t width = SparseRowWidth(param, grad);
  const T* g = grad.value.data<T>();
  if (!ctx.Attr<bool>("lazy_mode")) {
    const std::vector<T> dense = RowsIntoZeros(grad.rows, grad.count, g, width, grad.height);
    return AdamUpdate<T>(ctx, dense.data(), nullptr, width);
  }
  const MergedRows<T> merged = MergeRows(grad.rows, grad.count, g, width);
  AdamUpdate<T>(ctx, merged.values.data(), &merged.rows, width);
}

template <class T> void Adam(KernelContext& ctx) {
  if (SkipsUpdate(ctx)) return;
  if (Variable grad = ctx.InputVar("Grad"); grad.IsSelectedRows()) return SparseAdam<T>(ctx, grad.selected_rows());
  Tensor grad = ctx.Input("Grad");
  CheckSameShape(ctx.Input("Param"), "Param", grad, "Grad");
  AdamUpdate<T>(ctx, grad.data<T>(), nullptr, 0);
}

// The accumulator `in_slot`, checked against Param's shape, to update in place.
template <class T> VecMap<T> Accumulator(KernelContext& ctx, const char* out_slot, const char* in_slot) {
  CheckSameShape(ctx.Input("Param"), "Param", ctx.Input(in_slot), in_slot);
  return InPlace<T>(ctx, out_slot, in_slot);
}

template <class T, bool kDecayed> void Adagrad(KernelContext& ctx) {
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/!kDecayed);
  const auto g = grad.vec();
  const T lr = LearningRate<T>(ctx);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  auto m = Accumulator<T>(ctx, "MomentOut", "Moment");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  const T decay = kDecayed ? static_cast<T>(ctx.Attr<float>("decay")) : T(1);
  ForEachBlock<T>(p.size(), 5, [&](int64_t b, int64_t n) {
    const auto gs = g.segment(b, n);
    auto ms = m.segment(b, n);
    if constexpr (kDecayed) {
      ms = decay * ms + (T(1) - decay) * gs.square();
    } else {
      ms += gs.square();
    }
    p.segment(b, n) -= lr * gs / (ms.sqrt() + eps);
  });
}

template <class T> void Rmsprop(KernelContext& ctx) {
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/true);
  const auto g = grad.vec();
  const T lr = LearningRate<T>(ctx);
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon")), decay = static_cast<T>(ctx.Attr<float>("decay"));
  const T momentum = static_cast<T>(ctx.Attr<float>("momentum"));
  const bool centered = ctx.Attr<bool>("centered");
  if (centered && !ctx.HasInput("MeanGrad")) throw Error("centered rmsprop needs MeanGrad");
  auto ms = Accumulator<T>(ctx, "MeanSquareOut", "MeanSquare");
  auto mom = Accumulator<T>(ctx, "MomentOut", "Moment");
  T* mean_grad = centered ? Accumulator<T>(ctx, "MeanGradOut", "MeanGrad").data() : nullptr;
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), centered ? 9 : 7, [&](int64_t b, int64_t n) {
    const auto gs = g.segment(b, n);
    auto mss = ms.segment(b, n), moms = mom.segment(b, n);
    mss = decay * mss + (T(1) - decay) * gs.square();
    if (centered) {
      VecMap<T> mg(mean_grad + b, n);
      mg = decay * mg + (T(1) - decay) * gs;
      moms = momentum * moms + lr * gs / (mss - mg.square() + eps).sqrt();
    } else {
      moms = momentum * moms + lr * gs / (mss + eps).sqrt();
    }
    p.segment(b, n) -= moms;
  });
}

template <class T> void Adamax(KernelContext& ctx) {
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/false);
  const auto g = grad.vec();
  const T lr = LearningRate<T>(ctx);
  const T b1 = static_cast<T>(ctx.Attr<float>("beta1")), b2 = static_cast<T>(ctx.Attr<float>("beta2"));
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  Tensor b1_pow = ctx.Input("Beta1Pow");
  if (b1_pow.numel() != 1) throw Error("Beta1Pow must hold one element, it has " + std::to_string(b1_pow.numel()));
  const T lr_t = lr / (T(1) - *b1_pow.data<T>());
  auto m = Accumulator<T>(ctx, "MomentOut", "Moment");
  auto u = Accumulator<T>(ctx, "InfNormOut", "InfNorm");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), 7, [&](int64_t b, int64_t n) {
    const auto gs = g.segment(b, n);
    auto ms = m.segment(b, n), us = u.segment(b, n);
    ms = b1 * ms + (T(1) - b1) * gs;
    us = (b2 * us + eps).max(gs.abs());
    p.segment(b, n) -= lr_t * ms / us;
  });
}

template <class T> void Adadelta(KernelContext& ctx) {
  const DenseGrad<T> grad = DenseGradOf<T>(ctx, /*rows_allowed=*/false);
  const auto g = grad.vec();
  const T rho = static_cast<T>(ctx.Attr<float>("rho")), eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T lr = ctx.HasInput("LearningRate") ? LearningRate<T>(ctx) : T(1);
  auto eg = Accumulator<T>(ctx, "AvgSquaredGradOut", "AvgSquaredGrad");
  auto ed = Accumulator<T>(ctx, "AvgSquaredUpdateOut", "AvgSquaredUpdate");
  auto p = InPlace<T>(ctx, "ParamOut", "Param");
  ForEachBlock<T>(p.size(), 7, [&](int64_t b, int64_t n) {
    const auto gs = g.segment(b, n);
    auto egs = eg.segment(b, n), eds = ed.segment(b, n);
    egs = rho * egs + (T(1) - rho) * gs.square();
    const BlockVec<T> d = -((eds + eps) / (egs + eps)).sqrt() * gs;
    eds = rho * eds + (T(1) - rho) * d.square();
    p.segment(b, n) += lr * d;
  });
}

// FTRL-proximal (McMahan et al.) as Paddle's ftrl kernel computes it, on `g` (rows of
// `width` at rows `at` of the parameter, or all of it when `at` is null).
template <class T> void FtrlUpdate(KernelContext& ctx, const T* g, const std::vector<int64_t>* at, int64_t width) {
  const FtrlRates<T> rates{LearningRate<T>(ctx), static_cast<T>(ctx.Attr<float>("l1")) + static_cast<T>(1e-10),
                           static_cast<T>(ctx.Attr<float>("l2")) + static_cast<T>(1e-10),
                           static_cast<T>(ctx.Attr<float>("lr_power"))};
  const FtrlLoop<T> steps = FtrlLoopFor<T>();
  T* sq = Accumulator<T>(ctx, "SquaredAccumOut", "SquaredAccumulator").data();
  T* lin = Accumulator<T>(ctx, "LinearAccumOut", "LinearAccumulator").data();
  T* p = InPlace<T>(ctx, "ParamOut", "Param").data();
  if (at == nullptr) {
    const int64_t n = ctx.Input("Param").numel();
    ForEachBlock<T>(n, 7, [&](int64_t b, int64_t k) { steps(p + b, sq + b, lin + b, g + b, k, rates); });
    return;
  }
  for (size_t i = 0; i < at->size(); ++i) {
    const int64_t b = (*at)[i] * width;
    steps(p + b, sq + b, lin + b, g + static_cast<int64_t>(i) * width, width, rates);
  }
}

template <class T> void Ftrl(KernelContext& ctx) {
  Tensor param = ctx.Input("Param");
  if (Variable var = ctx.InputVar("Grad"); var.IsSelectedRows()) {
    const Variable::SelectedRows rows = var.selected_rows();
    const int64_t width = SparseRowWidth(param, rows);
    const MergedRows<T> merged = MergeRows(rows.rows, rows.count, rows.value.data<T>(), width);
    return FtrlUpdate<T>(ctx, merged.values.data(), &merged.rows, width);
  }
  Tensor grad = ctx.Input("Grad");
  CheckSameShape(param, "Param", grad, "Grad");
  FtrlUpdate<T>(ctx, grad.data<T>(), nullptr, 0);
}

// The inputs and outputs every optimizer has, and one accumulator's.
OpSchema OptimizerSchema(const char* type, const std::string& doc, bool rows_allowed = false) {
  return OpSchema(type)
      .Doc(doc)
      .Input("Param", "parameter")
      .Input("Grad", rows_allowed ? "its gradient, shaped like Param; or SelectedRows of Param's rows (the others "
                                    "count as zero)"
                                  : "its gradient, shaped like Param")
      .Output("ParamOut", "updated parameter (usually Param itself)")
      .KernelDtypeFrom("Param");
}
OpSchema& WithAccumulator(OpSchema& s, const std::string& name, const std::string& doc, uint32_t flags = 0) {
  return s.Input(name, doc + ", shaped like Param", flags).Output(name + "Out", "updated " + name, flags);
}

}  // namespace

void RegisterOptimizers(Registrar& r) {
  {
    OpSchema s =
        OptimizerSchema("adagrad", "Moment += Grad^2; Param -= LearningRate * Grad / (sqrt(Moment) + epsilon).",
                        /*rows_allowed=*/true);
    s.Input("LearningRate", "[1] learning rate").Attr("epsilon", 1.0e-6, "added to the root");
    r.Op(WithAccumulator(s, "Moment", "the sum of squared gradients"));
    RegisterCpu<float, double>(r, "adagrad", [](auto t) { return &Adagrad<decltype(t), false>; });
  }
  {
    OpSchema s = OptimizerSchema("decayed_adagrad",
                                 "Moment = decay * Moment + (1 - decay) * Grad^2; "
                                 "Param -= LearningRate * Grad / (sqrt(Moment) + epsilon).");
    s.Input("LearningRate", "[1] learning rate")
        .Attr("decay", 0.95, "the moment's decay")
        .Attr("epsilon", 1.0e-6, "added to the root");
    r.Op(WithAccumulator(s, "Moment", "the running mean of squared gradients"));
    RegisterCpu<float, double>(r, "decayed_adagrad", [](auto t) { return &Adagrad<decltype(t), true>; });
  }
  {
    OpSchema s = OptimizerSchema(
        "rmsprop",
        "MeanSquare = decay * MeanSquare + (1 - decay) * Grad^2; Moment = momentum * Moment + "
        "LearningRate * Grad / sqrt(MeanSquare + epsilon) (centered: MeanSquare - MeanGrad^2 + epsilon, "
        "MeanGrad the running mean of Grad); Param -= Moment.",
        /*rows_allowed=*/true);
    s.Input("LearningRate", "[1] learning rate")
        .Attr("epsilon", 1.0e-10, "added under the root")
        .Attr("decay", 0.9, "the running means' decay")
        .Attr("momentum", 0.0, "the moment's decay")
        .Attr("centered", false, "subtract the squared running mean of Grad");
    WithAccumulator(s, "MeanSquare", "the running mean of squared gradients");
    WithAccumulator(s, "Moment", "the update's momentum");
    r.Op(WithAccumulator(s, "MeanGrad", "the running mean of gradients (centered)", RILL_SLOT_OPTIONAL));
    RegisterCpu<float, double>(r, "rmsprop", [](auto t) { return &Rmsprop<decltype(t)>; });
  }
  {
    OpSchema s = OptimizerSchema(
        "adamax",
        "Moment = beta1 * Moment + (1 - beta1) * Grad; InfNorm = max(beta2 * InfNorm + epsilon, |Grad|); "
        "Param -= LearningRate / (1 - Beta1Pow) * Moment / InfNorm.");
    s.Input("LearningRate", "[1] learning rate")
        .Input("Beta1Pow", "[1] beta1^t (the program advances it)")
        .Attr("beta1", 0.9, "the moment's decay")
        .Attr("beta2", 0.999, "the norm's decay")
        .Attr("epsilon", 1.0e-8, "keeps the norm above 0");
    WithAccumulator(s, "Moment", "the running mean of gradients");
    r.Op(WithAccumulator(s, "InfNorm", "the decayed infinity norm of gradients"));
    RegisterCpu<float, double>(r, "adamax", [](auto t) { return &Adamax<decltype(t)>; });
  }
  {
    OpSchema s = OptimizerSchema(
        "adadelta",
        "AvgSquaredGrad = rho * AvgSquaredGrad + (1 - rho) * Grad^2; update = -sqrt((AvgSquaredUpdate + "
        "epsilon) / (AvgSquaredGrad + epsilon)) * Grad; AvgSquaredUpdate = rho * AvgSquaredUpdate + "
        "(1 - rho) * update^2; Param += LearningRate (1 without one) * update.");
    s.Input("LearningRate", "[1] learning rate (Paddle 2's; Fluid's adadelta has none)", RILL_SLOT_OPTIONAL)
        .Attr("rho", 0.95, "the running means' decay")
        .Attr("epsilon", 1.0e-6, "added under the root");
    WithAccumulator(s, "AvgSquaredGrad", "the running mean of squared gradients");
    r.Op(WithAccumulator(s, "AvgSquaredUpdate", "the running mean of squared updates"));
    RegisterCpu<float, double>(r, "adadelta", [](auto t) { return &Adadelta<decltype(t)>; });
  }
  {
    OpSchema s = OptimizerSchema("ftrl",
                                 "FTRL-proximal, as Paddle computes it (see optimizer.cc); a SelectedRows Grad of "
                                 "Param's rows updates those rows alone.");
    s.Input("LearningRate", "[1] learning rate")
        .Input("SquaredAccumulator", "the sum of squared gradients, shaped like Param")
        .Input("LinearAccumulator", "the linear term, shaped like Param")
        .Output("SquaredAccumOut", "updated SquaredAccumulator")
        .Output("LinearAccumOut", "updated LinearAccumulator")
        .Attr("l1", 0.0f, "L1 regularization")
        .Attr("l2", 0.0f, "L2 regularization")
        .Attr("lr_power", -0.5f, "the learning rate's power");
    r.Op(s);
    RegisterCpu<float, double>(r, "ftrl", [](auto t) { return &Ftrl<decltype(t)>; });
  }
  r.Op(OpSchema("sgd")
           .Doc("ParamOut = Param - LearningRate * Grad.")
           .Input("Param", "parameter; or SelectedRows of a table's rows (Grad's rows must be among them)")
           .Input("Grad", "its gradient, same shape; or SelectedRows of Param's rows (only those change)")
           .Input("LearningRate", "[1] learning rate")
           .Output("ParamOut", "updated parameter (usually Param itself)")
           .KernelDtypeFrom("Param"));
  RegisterCpu<float, double>(r, "sgd", [](auto t) { return &Sgd<decltype(t)>; });
  r.Op(OpSchema("momentum")
           .Doc("Velocity = mu * Velocity + Grad; Param -= LearningRate * Velocity (or, with use_nesterov, "
                "LearningRate * (Grad + mu * Velocity)).")
           .Input("Param", "parameter")
           .Input("Grad", "its gradient; or SelectedRows of Param's rows (the others count as zero)")
           .Input("Velocity", "running velocity")
           .Input("LearningRate", "[1] learning rate")
           .Output("ParamOut", "updated parameter")
           .Output("VelocityOut", "updated velocity")
           .Attr("mu", 0.9, "momentum")
           .Attr("use_nesterov", false, "Nesterov momentum")
           .Attr("regularization_method", "", "\"l2_decay\" adds regularization_coeff * Param to Grad; \"\": none")
           .Attr("regularization_coeff", 0.0f, "the L2 decay's coefficient")
           .Attr("rescale_grad", 1.0f, "Grad is multiplied by it first")
           .KernelDtypeFrom("Param"));
  RegisterCpu<float, double>(r, "momentum", [](auto t) { return &Momentum<decltype(t)>; });
  r.Op(OpSchema("lars_momentum")
           .Doc("LARS: momentum with a per-parameter learning rate, lr * lars_coeff * |Param| / (|Grad| + "
                "lars_weight_decay * |Param| + epsilon) (lr itself when a norm is 0 or the decay is not positive); "
                "Velocity = mu * Velocity + local_lr * (Grad + lars_weight_decay * Param); Param -= Velocity.")
           .Input("Param", "parameter")
           .Input("Grad", "its gradient")
           .Input("Velocity", "running velocity")
           .Input("LearningRate", "[1] learning rate")
           .Output("ParamOut", "updated parameter")
           .Output("VelocityOut", "updated velocity")
           .Attr("mu", 0.9, "momentum")
           .Attr("lars_coeff", 0.001, "the LARS coefficient")
           .Attr("lars_weight_decay", 0.0005, "weight decay, in the local rate and added to Grad")
           .Attr("epsilon", 0.0, "added to the local rate's denominator")
           .KernelDtypeFrom("Param"));
  RegisterCpu<float, double>(r, "lars_momentum", [](auto t) { return &LarsMomentum<decltype(t)>; });
  r.Op(OpSchema("adam")
           .Doc("Adam (Kingma & Ba) with bias correction from Beta1Pow/Beta2Pow (beta^t).")
           .Input("Param", "parameter")
           .Input("Grad", "its gradient; or SelectedRows of Param's rows (see lazy_mode)")
           .Input("LearningRate", "[1] learning rate")
           .Input("Moment1", "first moment")
           .Input("Moment2", "second moment")
           .Input("Beta1Pow", "[1] beta1^t")
           .Input("Beta2Pow", "[1] beta2^t")
           .Input("Beta1Tensor", "beta1, one element; replaces the attribute", RILL_SLOT_OPTIONAL)
           .Input("Beta2Tensor", "beta2, one element; replaces the attribute", RILL_SLOT_OPTIONAL)
           .Input("EpsilonTensor", "epsilon, one element; replaces the attribute", RILL_SLOT_OPTIONAL)
           .Input("SkipUpdate", "bool [1]: when true, every output is its input unchanged", RILL_SLOT_OPTIONAL)
           .Output("ParamOut", "updated parameter")
           .Output("Moment1Out", "updated first moment")
           .Output("Moment2Out", "updated second moment")
           .Output("Beta1PowOut", "beta1^(t+1)", RILL_SLOT_OPTIONAL)
           .Output("Beta2PowOut", "beta2^(t+1)", RILL_SLOT_OPTIONAL)
           .Attr("beta1", 0.9, "decay of the first moment")
           .Attr("beta2", 0.999, "decay of the second moment")
           .Attr("epsilon", 1e-8, "added to the denominator")
           .Attr("lazy_mode", false, "a sparse Grad updates only its rows (else every row, the others with 0)")
           .Attr("use_global_beta_pow", false, "leave Beta1PowOut and Beta2PowOut unwritten: another op advances them")
           .KernelDtypeFrom("Param"));
  RegisterCpu<float, double>(r, "adam", [](auto t) { return &Adam<decltype(t)>; });
}

}  // namespace rill::math
