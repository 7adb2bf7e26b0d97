// linear_chain_crf (and its gradient), crf_decoding: the linear-chain conditional random
// field of sequence labelling, with Paddle's contracts (paddle/fluid/operators/
// linear_chain_crf_op.*, crf_decoding_op.*).
//
// Emission x holds each position's score of each of D tags; Transition [D + 2, D] holds the
// start scores a (row 0), the end scores b (row 1) and w[i][j], the score of tag j after tag
// i (rows 2 ..). A sequence of L positions tagged s scores
//
//   score(s) = a[s_0] + b[s_{L-1}] + sum_k x[k][s_k] + sum_{k >= 1} w[s_{k-1}][s_k]
//
// and LogLikelihood is its negative log-probability, log Z - score(label) (the cost a net
// minimizes, despite the name). crf_decoding finds the tags of the highest score (Viterbi).
//
// The sequences come either as a LoD tensor (Emission [N, D], Label [N, 1]; linear_chain_crf
// reads Label's LoD, crf_decoding Emission's, as Paddle does) or padded (Emission [B, S, D],
// Label [B, S] or [B, S, 1], Length [B]: sequence b is rows b*S .. b*S + Length[b] - 1).
// Rows outside every sequence take no part; an empty sequence costs 0.
//
// Z is summed by the forward algorithm in exp space, each step's vector rescaled to sum 1
// (its log kept) so nothing overflows: EmissionExps = exp(x - max of x's row),
// TransitionExps = exp(Transition), and Alpha those rescaled forward vectors, the same
// intermediate outputs as Paddle's, which its gradient op takes back. The gradient is the
// expected count of each feature under the model less its count in the labels: a position's
// tag marginals (alpha beta, normalized) for x, a and b; the pair marginals of consecutive
// positions for w, gathered for the whole batch into one matrix product.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// The sequences of a CRF op's batch as row ranges [begin, end) of Emission viewed as
// [rows, tags]; ranges are disjoint and in order.
struct CrfBatch {
  int64_t rows = 0, tags = 0;
  SequenceRanges sequences;
};

// The batch of `emission`: padded when the op names a Length input, otherwise packed by the
// last LoD level of `lod_slot`'s tensor (`lod_source`).
CrfBatch ReadBatch(KernelContext& ctx, const Tensor& emission, const char* lod_slot, const Tensor& lod_source) {
  const std::vector<int64_t> d = emission.dims();
  if (d.empty() || d.back() < 1) {
    throw Error("Emission " + DimsString(d) + " must score at least one tag (its last dimension)");
  }
  if (std::optional<Tensor> length = OptionalInput(ctx, "Length")) {
    if (d.size() != 3) {
      throw Error("Emission " + DimsString(d) + " must be [B, S, D] (padded sequences) when Length is given");
    }
    return {d[0] * d[1], d[2], RangesOfPadded("Length", *length, d[0], d[1])};
  }
  if (d.size() != 2) {
    throw Error("Emission " + DimsString(d) + " must be [N, D] (a LoD tensor) when no Length is given");
  }
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), lod_slot, lod_source, 1);
  if (static_cast<int64_t>(o.back()) != d[0]) {
    throw Error("input " + std::string(lod_slot) + "'s LoD ends at row " + std::to_string(o.back()) +
                "; Emission has " + std::to_string(d[0]) + " rows");
  }
  return {d[0], d[1], RangesOfOffsets(o)};
}

void CheckTransition(const Tensor& transition, int64_t tags) {
  if (transition.dims() != std::vector<int64_t>{tags + 2, tags}) {
    throw Error("Transition " + DimsString(transition.dims()) + " must be [D + 2, D] = [" + std::to_string(tags + 2) +
                ", " + std::to_string(tags) + "] for Emission's " + std::to_string(tags) + " tags");
  }
}

// Label's values, one int64 tag in 0 .. tags - 1 for each of the batch's rows.
const int64_t* CheckedLabels(const Tensor& label, const CrfBatch& batch) {
  if (label.dtype() != RILL_INT64 || label.numel() != batch.rows) {
    throw Error("Label " + DimsString(label.dims()) + " must hold one int64 tag for each of Emission's " +
                std::to_string(batch.rows) + " positions");
  }
  const int64_t* l = label.data<int64_t>();
  for (const auto& [begin, end] : batch.sequences) {
    for (int64_t k = begin; k < end; ++k) {
      if (l[k] < 0 || l[k] >= batch.tags) {
        throw Error("Label[" + std::to_string(k) + "] = " + std::to_string(l[k]) + " is not a tag (0 .. " +
                    std::to_string(batch.tags - 1) + ")");
      }
    }
  }
  return l;
}

// Scales the `d` values at `row` to sum 1 and returns the sum they had. A sum of 0 means
// every path through the row has probability 0 in exp-space arithmetic (scores beyond exp's
// range), which no rescaling recovers.
template <class T> T NormalizeSum(T* row, int64_t d) {
  VecMap<T> v(row, d);
  const T sum = v.sum();
  if (!(sum > T(0))) throw Error("the CRF's path scores underflow: a position's tag probabilities sum to 0");
  v /= sum;
  return sum;
}

template <class T> void CrfForward(KernelContext& ctx) {
  Tensor emission = ctx.Input("Emission"), transition = ctx.Input("Transition"), label = ctx.Input("Label");
  const CrfBatch batch = ReadBatch(ctx, emission, "Label", label);
  const int64_t n = batch.rows, d = batch.tags, seqs = static_cast<int64_t>(batch.sequences.size());
  CheckTransition(transition, d);
  const int64_t* labels = CheckedLabels(label, batch);
  const ConstMatrixMap<T> x(emission.data<T>(), n, d), trans(transition.data<T>(), d + 2, d);
  const auto w = trans.bottomRows(d);
  WriteOutput<T>(ctx, "TransitionExps", {}, transition.dims(),
                 [&](T* p) { MatrixMap<T>(p, d + 2, d) = trans.array().exp().matrix(); });
  const ConstMatrixMap<T> trans_exps(ctx.Output("TransitionExps").data<T>(), d + 2, d);
  const auto w_exps = trans_exps.bottomRows(d);
  std::vector<T> row_max(static_cast<size_t>(n));
  WriteOutput<T>(ctx, "EmissionExps", {}, emission.dims(), [&](T* p) {
    MatrixMap<T> e(p, n, d);
    ParallelFor(n, 2.0 * static_cast<double>(n * d) * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        row_max[k] = d > 0 ? x.row(k).maxCoeff() : T(0);
        e.row(k) = (x.row(k).array() - row_max[k]).exp().matrix();
      }
    });
  });
  const ConstMatrixMap<T> x_exps(ctx.Output("EmissionExps").data<T>(), n, d);
  WriteOutput<T>(ctx, "Alpha", {}, emission.dims(), [&](T* alpha_data) {
    MatrixMap<T> alpha(alpha_data, n, d);
    alpha.setZero();
    WriteOutput<T>(ctx, "LogLikelihood", {}, {seqs, 1}, [&](T* cost) {
      ParallelFor(seqs, 4.0 * static_cast<double>(n * d * d) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
        for (int64_t s = first; s < last; ++s) {
          const auto [begin, end] = batch.sequences[static_cast<size_t>(s)];
          if (begin == end) {
            cost[s] = 0;
            continue;
          }
          // log Z, from the rescaled forward vectors and the rows' maxima taken out of x.
          alpha.row(begin) = trans_exps.row(0).cwiseProduct(x_exps.row(begin));
          T log_z = row_max[begin] + std::log(NormalizeSum(&alpha(begin, 0), d));
          for (int64_t k = begin + 1; k < end; ++k) {
            alpha.row(k).noalias() = alpha.row(k - 1) * w_exps;
            alpha.row(k).array() *= x_exps.row(k).array();
            log_z += row_max[k] + std::log(NormalizeSum(&alpha(k, 0), d));
          }
          log_z += std::log(alpha.row(end - 1).dot(trans_exps.row(1)));
          T score = trans(0, labels[begin]) + trans(1, labels[end - 1]);
          for (int64_t k = begin; k < end; ++k) {
            score += x(k, labels[k]);
            if (k > begin) score += w(labels[k - 1], labels[k]);
          }
          cost[s] = log_z - score;
        }
      });
    });
  });
}

template <class T> void CrfBackward(KernelContext& ctx) {
  Tensor emission = ctx.Input("Emission"), label = ctx.Input("Label"), dcost_t = ctx.Input("LogLikelihood@GRAD");
  const CrfBatch batch = ReadBatch(ctx, emission, "Label", label);
  const int64_t n = batch.rows, d = batch.tags, seqs = static_cast<int64_t>(batch.sequences.size());
  const int64_t* labels = CheckedLabels(label, batch);
  Tensor alpha_t = ctx.Input("Alpha"), x_exps_t = ctx.Input("EmissionExps"), trans_exps_t = ctx.Input("TransitionExps");
  CheckTransition(trans_exps_t, d);
  if (alpha_t.numel() != n * d || x_exps_t.numel() != n * d || dcost_t.numel() != seqs) {
    throw Error("Alpha " + DimsString(alpha_t.dims()) + " and EmissionExps " + DimsString(x_exps_t.dims()) +
                " must be shaped like Emission " + DimsString(emission.dims()) + ", LogLikelihood@GRAD " +
                DimsString(dcost_t.dims()) + " hold one value per sequence (" + std::to_string(seqs) + ")");
  }
  const ConstMatrixMap<T> alpha(alpha_t.data<T>(), n, d), x_exps(x_exps_t.data<T>(), n, d);
  const ConstMatrixMap<T> trans_exps(trans_exps_t.data<T>(), d + 2, d);
  const auto w_exps = trans_exps.bottomRows(d);
  const T* dcost = dcost_t.data<T>();
  // Per row k after a sequence's first: its predecessor's forward vector scaled by the
  // sequence's gradient over the pair normalizer (`from`), and exp(x) times the backward
  // vector (`to`); the pair marginals' gradient of w is then w_exps .* (from^T to).
  Matrix<T> beta(n, d), from = Matrix<T>::Zero(n, d), to = Matrix<T>::Zero(n, d);
  Matrix<T> dx = Matrix<T>::Zero(n, d);
  ParallelFor(seqs, 6.0 * static_cast<double>(n * d * d) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const auto [begin, end] = batch.sequences[static_cast<size_t>(s)];
      if (begin == end) continue;
      const T g = dcost[s];
      beta.row(end - 1) = trans_exps.row(1);
      NormalizeSum(&beta(end - 1, 0), d);
      for (int64_t k = end - 2; k >= begin; --k) {
        beta.row(k).noalias() = x_exps.row(k + 1).cwiseProduct(beta.row(k + 1)) * w_exps.transpose();
        NormalizeSum(&beta(k, 0), d);
      }
      for (int64_t k = begin; k < end; ++k) {
        const auto marginal = alpha.row(k).cwiseProduct(beta.row(k));
        dx.row(k) = (g / marginal.sum()) * marginal;
        dx(k, labels[k]) -= g;
        if (k == begin) continue;
        to.row(k) = x_exps.row(k).cwiseProduct(beta.row(k));
        const T pair_sum = (alpha.row(k - 1) * w_exps).dot(to.row(k));
        from.row(k) = (g / pair_sum) * alpha.row(k - 1);
      }
    }
  });
  if (HasOutputVariable(ctx, "Transition@GRAD")) {
    WriteOutput<T>(ctx, "Transition@GRAD", {}, trans_exps_t.dims(), [&](T* p) {
      MatrixMap<T> dtrans(p, d + 2, d);
      dtrans.setZero();
      dtrans.bottomRows(d).noalias() = from.transpose() * to;
      dtrans.bottomRows(d).array() *= w_exps.array();
      for (int64_t s = 0; s < seqs; ++s) {
        const auto [begin, end] = batch.sequences[static_cast<size_t>(s)];
        if (begin == end) continue;
        dtrans.row(0) += dx.row(begin);
        dtrans.row(1) += dx.row(end - 1);
        for (int64_t k = begin + 1; k < end; ++k) dtrans(2 + labels[k - 1], labels[k]) -= dcost[s];
      }
    });
  }
  if (HasOutputVariable(ctx, "Emission@GRAD")) {
    WriteOutput<T>(ctx, "Emission@GRAD", {}, emission.dims(), [&](T* p) { MatrixMap<T>(p, n, d) = dx; });
    ShareLoD(ctx, "Emission", "Emission@GRAD");
  }
}

// The Viterbi path of one sequence's rows [begin, end): best[k][i] is the highest score of a
// path ending in tag i at row k, back[k][i] the tag before it (the first of equal scores).
template <class T>
void ViterbiPath(const ConstMatrixMap<T>& x, const ConstMatrixMap<T>& trans, int64_t begin, int64_t end,
                 int64_t* path) {
  const int64_t d = x.cols(), len = end - begin;
  Matrix<T> best(len, d);
  std::vector<int64_t> back(static_cast<size_t>(len * d));
  best.row(0) = trans.row(0) + x.row(begin);
  for (int64_t k = 1; k < len; ++k) {
    for (int64_t i = 0; i < d; ++i) {
      Eigen::Index from = 0;
      const T top = (best.row(k - 1).transpose() + trans.col(i).tail(d)).maxCoeff(&from);
      best(k, i) = top + x(begin + k, i);
      back[static_cast<size_t>(k * d + i)] = from;
    }
  }
  Eigen::Index last = 0;
  (best.row(len - 1) + trans.row(1)).maxCoeff(&last);
  path[len - 1] = last;
  for (int64_t k = len - 1; k > 0; --k) path[k - 1] = back[static_cast<size_t>(k * d + path[k])];
}

template <class T> void CrfDecoding(KernelContext& ctx) {
  Tensor emission = ctx.Input("Emission"), transition = ctx.Input("Transition");
  const CrfBatch batch = ReadBatch(ctx, emission, "Emission", emission);
  const int64_t n = batch.rows, d = batch.tags, seqs = static_cast<int64_t>(batch.sequences.size());
  CheckTransition(transition, d);
  const std::optional<Tensor> label = OptionalInput(ctx, "Label");
  const int64_t* labels = label ? CheckedLabels(*label, batch) : nullptr;
  const ConstMatrixMap<T> x(emission.data<T>(), n, d), trans(transition.data<T>(), d + 2, d);
  const bool padded = emission.ndim() == 3;
  const std::vector<int64_t> dims =
      padded ? std::vector<int64_t>{emission.dims()[0], emission.dims()[1]} : std::vector<int64_t>{n, 1};
  const std::vector<std::vector<uint64_t>> lod = emission.lod();
  WriteOutput<int64_t>(ctx, "ViterbiPath", {}, dims, [&](int64_t* path) {
    std::fill(path, path + n, int64_t{0});
    ParallelFor(seqs, 2.0 * static_cast<double>(n * d * d) * sizeof(T), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t s = first; s < last; ++s) {
        const auto [begin, end] = batch.sequences[static_cast<size_t>(s)];
        if (begin == end) continue;
        ViterbiPath<T>(x, trans, begin, end, path + begin);
        // Given the true tags, the path becomes 1 where it found them, 0 where not (chunk_eval's input).
        if (labels != nullptr) {
          for (int64_t k = begin; k < end; ++k) path[k] = path[k] == labels[k] ? 1 : 0;
        }
      }
    });
  });
  if (!padded) ctx.Output("ViterbiPath").set_lod(lod);
}

}  // namespace

void RegisterLinearChainCrf(Registrar& r) {
  const OpSchema crf =
      OpSchema("linear_chain_crf")
          .Doc(
              "The negative log-likelihood of each sequence's Label under a linear-chain CRF of Emission scores and "
              "Transition weights (start, end and tag-to-tag rows). As Paddle's; see linear_chain_crf.cc.")
          .Input("Emission", "[N, D] with sequences (LoD) or [B, S, D] padded: each position's tag scores")
          .Input("Transition", "[D + 2, D]: start scores, end scores, then w[i][j] for tag j after tag i")
          .Input("Label", "int64 [N, 1] with Emission's sequences (its LoD), or [B, S] / [B, S, 1] padded")
          .Input("Length", "int64 [B]: each padded sequence's length", RILL_SLOT_OPTIONAL)
          .Output("Alpha", "shaped like Emission: the forward vectors, each position's rescaled to sum 1")
          .Output("EmissionExps", "shaped like Emission: exp(x - the maximum of x's row)")
          .Output("TransitionExps", "[D + 2, D]: exp(Transition)")
          .Output("LogLikelihood", "[sequences, 1]: log Z - score(Label), 0 for an empty sequence")
          .KernelDtypeFrom("Emission")
          .Grad("linear_chain_crf_grad", "Emission,Label,Length,Alpha,EmissionExps,TransitionExps,LogLikelihood@GRAD",
                "Emission,Transition");
  r.Op(crf);
  r.Op(crf.MakeGradSchema());
  RegisterCpu<float, double>(r, "linear_chain_crf", [](auto t) { return &CrfForward<decltype(t)>; });
  RegisterCpu<float, double>(r, "linear_chain_crf_grad", [](auto t) { return &CrfBackward<decltype(t)>; });
  r.Op(OpSchema("crf_decoding")
           .Doc("The highest-scoring tags of each sequence (Viterbi) under linear_chain_crf's Transition; given "
                "Label, 1 where the path finds its tag and 0 where not. As Paddle's.")
           .Input("Emission", "[N, D] with sequences (LoD) or [B, S, D] padded")
           .Input("Transition", "[D + 2, D], as linear_chain_crf's")
           .Input("Label", "int64, one tag per position (optional)", RILL_SLOT_OPTIONAL)
           .Input("Length", "int64 [B]: each padded sequence's length", RILL_SLOT_OPTIONAL)
           .Output("ViterbiPath", "int64 [N, 1] with Emission's LoD, or [B, S] padded; 0 outside the sequences")
           .KernelDtypeFrom("Emission"));
  RegisterCpu<float, double>(r, "crf_decoding", [](auto t) { return &CrfDecoding<decltype(t)>; });
}

}  // namespace rill::math
