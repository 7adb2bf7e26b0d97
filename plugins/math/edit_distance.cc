// edit_distance: the Levenshtein distance of each hypothesis sequence to its reference (the
// fewest insertions, deletions and substitutions of tokens turning one into the other), with
// Paddle's contract (paddle/fluid/operators/edit_distance_op.*): a word or character error
// count for speech and OCR. Hyps and Refs are int64 tokens, as LoD tensors ([T, 1], one
// level, the same count of sequences) or padded ([B, L]) with HypsLength and RefsLength.
// Out [S, 1] is float; with `normalized` each distance is divided by its reference's length
// (then no reference may be empty). SequenceNum [1] is S.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
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

// The Levenshtein distance of two token sequences by Myers' bit-parallel algorithm (J. ACM
// 46(3), 1999, in the block form of its section 4, global distance as H. Hyyrö states it):
// the table's column for each token of the text is held as its vertical differences, +1 or
// -1 or 0 down the rows, as two bit vectors over the pattern's positions (Pv, Mv), 64 rows a
// word, and one text token advances the whole column with a few word operations a word.
// The pattern is the shorter sequence (the distance is symmetric). Holds its buffers, so
// that one per thread serves every pair of a chunk.
class Levenshtein {
 public:
  int64_t Distance(const int64_t* a, int64_t m, const int64_t* b, int64_t n) {
    if (m > n) {
      std::swap(a, b);
      std::swap(m, n);
    }
    if (m == 0) return n;
    Index(a, m);
    const auto words = static_cast<size_t>((m + 63) / 64);
    const uint64_t last = uint64_t{1} << ((m - 1) % 64);  // the last row's bit in the last word
    pv_.assign(words, ~uint64_t{0});                      // column 0 is 0, 1, ... m: +1 all the way down
    mv_.assign(words, 0);
    int64_t score = m;  // the column's last row
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t* eq = Equal(b[j]);
      int carry = 1;  // row 0 is 0, 1, ... n: +1 from column to column
      for (size_t w = 0; w < words; ++w) carry = Advance(w, eq ? eq[w] : 0, carry, w + 1 == words ? last : 0);
      score += carry;
    }
    return score;
  }

 private:
  // One word of rows advanced by one text token: eq, the rows whose pattern token is it;
  // h_in, the horizontal difference (+1, 0, -1) entering the word's top row. Returns the one
  // leaving its bottom row, or where `bottom` is given (the last word) the last row's.
  int Advance(size_t w, uint64_t eq, int h_in, uint64_t bottom) {
    const uint64_t pv = pv_[w], mv = mv_[w];
    const uint64_t xv = eq | mv;
    if (h_in < 0) eq |= 1;
    const uint64_t xh = (((eq & pv) + pv) ^ pv) | eq;
    uint64_t ph = mv | ~(xh | pv), mh = pv & xh;
    const uint64_t out = bottom ? bottom : uint64_t{1} << 63;
    const int h_out = (ph & out) ? 1 : (mh & out) ? -1 : 0;
    ph = (ph << 1) | static_cast<uint64_t>(h_in > 0);
    mh = (mh << 1) | static_cast<uint64_t>(h_in < 0);
    pv_[w] = mh | ~(xv | ph);
    mv_[w] = ph & xv;
    return h_out;
  }

  // The pattern's tokens, each distinct one with the bit vector of the rows holding it, in
  // an open-addressed table of twice as many slots as rows or more.
  void Index(const int64_t* a, int64_t m) {
    const auto words = static_cast<size_t>((m + 63) / 64);
    size_t slots = 16;
    while (slots < 2 * static_cast<size_t>(m)) slots *= 2;
    shift_ = 64 - __builtin_ctzll(slots);
    keys_.assign(slots, 0);
    used_.assign(slots, 0);
    masks_.assign(slots * words, 0);
    words_ = words;
    for (int64_t i = 0; i < m; ++i) {
      size_t slot = Slot(a[i]);
      while (used_[slot] && keys_[slot] != a[i]) slot = (slot + 1) & (slots - 1);
      used_[slot] = 1;
      keys_[slot] = a[i];
      masks_[slot * words + static_cast<size_t>(i / 64)] |= uint64_t{1} << (i % 64);
    }
  }
  // The rows holding `token` (words_ words), or null where none does.
  const uint64_t* Equal(int64_t token) const {
    for (size_t slot = Slot(token);; slot = (slot + 1) & (keys_.size() - 1)) {
      if (!used_[slot]) return nullptr;
      if (keys_[slot] == token) return &masks_[slot * words_];
    }
  }
  size_t Slot(int64_t token) const {
    return static_cast<size_t>((static_cast<uint64_t>(token) * 0x9e3779b97f4a7c15ull) >> shift_);
  }

  std::vector<uint64_t> pv_, mv_, masks_;
  std::vector<int64_t> keys_;
  std::vector<char> used_;
  size_t words_ = 1;
  int shift_ = 60;
};

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
  double steps = 0;  // the words advanced, each a few operations on 16 bytes
  for (int64_t s = 0; s < count; ++s) {
    const auto [hb, he] = hyp_seqs[static_cast<size_t>(s)];
    const auto [rb, re] = ref_seqs[static_cast<size_t>(s)];
    if (normalized && re == rb) {
      throw Error("reference " + std::to_string(s) + " is empty: a normalized distance divides by its length");
    }
    const int64_t shorter = std::min(he - hb, re - rb), longer = std::max(he - hb, re - rb);
    steps += static_cast<double>(shorter + longer * ((shorter + 63) / 64));
  }
  float* out = ctx.AllocateOutput<float>("Out", {count, 1});
  // The pairs in chunks on the passes' team, each writing its own distances.
  ParallelFor(count, 16 * steps, [&](int64_t, int64_t first, int64_t last) {
    Levenshtein levenshtein;
    for (int64_t s = first; s < last; ++s) {
      const auto [hb, he] = hyp_seqs[static_cast<size_t>(s)];
      const auto [rb, re] = ref_seqs[static_cast<size_t>(s)];
      const auto distance = static_cast<float>(levenshtein.Distance(h + hb, he - hb, r + rb, re - rb));
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
