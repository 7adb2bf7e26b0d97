// edit_distance: the Levenshtein distance of each hypothesis sequence to its reference (the
// fewest insertions, deletions and substitutions of tokens turning one into the other), with
// Paddle's contract (paddle/fluid/operators/edit_distance_op.*): a word or character error
// count for speech and OCR. Hyps and Refs are int64 tokens, as LoD tensors ([T, 1], one
// level, the same count of sequences) or padded ([B, L]) with HypsLength and RefsLength.
// Out [S, 1] is float; with `normalized` each distance is divided by its reference's length
// (then no reference may be empty). SequenceNum [1] is S.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// The [begin, end) tokens of each sequence of `tokens` (input `slot`): by its LoD, or, when
// the op names `length_slot`, rows of the padded [B, L] tensor cut to those lengths.
SequenceRanges Sequences(KernelContext& ctx, const char* slot, const Tensor& tokens, const char* length_slot) {
  if (tokens.dtype() != RILL_INT64) throw Error(std::string(slot) + " must hold int64 tokens");
  if (std::optional<Tensor> lengths = OptionalInput(ctx, length_slot)) {
    if (tokens.ndim() != 2) {
      throw Error(std::string(slot) + " " + DimsString(tokens.dims()) + " must be [B, L] (padded) with " + length_slot);
    }
    return RangesOfPadded(length_slot, *lengths, tokens.dims()[0], tokens.dims()[1]);
  }
  return RangesOfOffsets(SequenceOffsets(ctx.op(), slot, tokens, 1));
}

// The Levenshtein distance of a[0, m) to b[0, n), one row of the table at a time.
int64_t Levenshtein(const int64_t* a, int64_t m, const int64_t* b, int64_t n) {
  std::vector<int64_t> row(static_cast<size_t>(n + 1));
  std::iota(row.begin(), row.end(), int64_t{0});
  for (int64_t i = 1; i <= m; ++i) {
    int64_t diagonal = row[0];  // the table's [i - 1][j - 1]
    row[0] = i;
    for (int64_t j = 1; j <= n; ++j) {
      const int64_t above = row[static_cast<size_t>(j)];
      row[static_cast<size_t>(j)] =
          std::min({above + 1, row[static_cast<size_t>(j - 1)] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[static_cast<size_t>(n)];
}

void EditDistance(KernelContext& ctx) {
  Tensor hyps = ctx.Input("Hyps"), refs = ctx.Input("Refs");
  if (HasInputVariable(ctx, "HypsLength") != HasInputVariable(ctx, "RefsLength")) {
    throw Error("HypsLength and RefsLength come together (padded sequences) or not at all (LoD tensors)");
  }
  const auto hyp_seqs = Sequences(ctx, "Hyps", hyps, "HypsLength");
  const auto ref_seqs = Sequences(ctx, "Refs", refs, "RefsLength");
  if (hyp_seqs.size() != ref_seqs.size()) {
    throw Error("Hyps holds " + std::to_string(hyp_seqs.size()) + " sequences and Refs " +
                std::to_string(ref_seqs.size()) + ": each hypothesis needs its reference");
  }
  const bool normalized = ctx.Attr<bool>("normalized");
  const auto count = static_cast<int64_t>(hyp_seqs.size());
  const int64_t *h = hyps.data<int64_t>(), *r = refs.data<int64_t>();
  double cells = 0;  // the tables' cells, each a read and a write of 8 bytes of its row
  for (int64_t s = 0; s < count; ++s) {
    const auto [hb, he] = hyp_seqs[static_cast<size_t>(s)];
    const auto [rb, re] = ref_seqs[static_cast<size_t>(s)];
    if (normalized && re == rb) {
      throw Error("reference " + std::to_string(s) + " is empty: a normalized distance divides by its length");
    }
    cells += static_cast<double>(he - hb + 1) * static_cast<double>(re - rb + 1);
  }
  float* out = ctx.AllocateOutput<float>("Out", {count, 1});
  // The pairs in chunks on the passes' team, each writing its own distances.
  ParallelFor(count, 16 * cells, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const auto [hb, he] = hyp_seqs[static_cast<size_t>(s)];
      const auto [rb, re] = ref_seqs[static_cast<size_t>(s)];
      const auto distance = static_cast<float>(Levenshtein(h + hb, he - hb, r + rb, re - rb));
      out[s] = normalized ? distance / static_cast<float>(re - rb) : distance;
    }
  });
  ctx.AllocateOutput<int64_t>("SequenceNum", {1})[0] = count;
}

}  // namespace

void RegisterEditDistance(Registrar& r) {
  r.Op(OpSchema("edit_distance")
           .Doc("The Levenshtein distance of each hypothesis token sequence to its reference, optionally divided by "
                "the reference's length. As Paddle's.")
           .Input("Hyps", "int64 [T, 1] with sequences (LoD), or [B, L] padded: the hypotheses' tokens")
           .Input("Refs", "int64, the same layout: the references' tokens")
           .Input("HypsLength", "int64 [B]: each padded hypothesis's length (with RefsLength)", RILL_SLOT_OPTIONAL)
           .Input("RefsLength", "int64 [B]: each padded reference's length (with HypsLength)", RILL_SLOT_OPTIONAL)
           .Output("Out", "float [S, 1]: each sequence's distance")
           .Output("SequenceNum", "int64 [1]: S, the sequences")
           .Attr("normalized", false, "divide each distance by its reference's length")
           .KernelDtypeFrom("Hyps"));
  r.Kernel("edit_distance", RILL_CPU, RILL_INT64, &EditDistance);
}

}  // namespace rill::math
