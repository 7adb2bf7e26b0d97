// chunk_eval: precision, recall and F1 of the chunks (named entities, semantic roles) a tagger
// found, against the true tags, with Paddle's contract (paddle/fluid/operators/
// chunk_eval_op.*).
//
// A tag t encodes a chunk type t / tag_types and a position in its chunk t % tag_types, by
// the scheme: IOB (begin 0, inside 1), IOE (inside 0, end 1), IOBES (begin 0, inside 1, end
// 2, single 3) or plain (each tag a chunk type, consecutive equal types one chunk). Type
// num_chunk_types ("outside", tag num_chunk_types * tag_types) belongs to no chunk. A chunk is
// a run of positions [first, last] of one type; a found chunk is correct when a true chunk
// has the same first, last and type. Chunks of excluded_chunk_types are not counted.
//
// Sequences come as LoD tensors (Inference and Label [N, 1] with the same LoD) or padded
// ([B, S] or [B, S, 1] with SeqLength [B]). Precision = correct / found, Recall = correct /
// true, F1 their harmonic mean; each 0 when its denominator (or the correct count) is 0.
#include <array>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction.h"
#include "sequence.h"

namespace rill::math {
namespace {

// tag_types is 1 << type_shift for every scheme, so that a tag splits into its type and
// position by a shift and a mask rather than a division.
struct ChunkScheme {
  int64_t tag_types = 1, type_shift = 0;
  // Each position's code within tag_types, or -1 where the scheme has no such position.
  int64_t begin = -1, inside = -1, end = -1, single = -1;
};

ChunkScheme SchemeNamed(const std::string& name) {
  if (name == "IOB") return {2, 1, 0, 1, -1, -1};
  if (name == "IOE") return {2, 1, -1, 0, 1, -1};
  if (name == "IOBES") return {4, 2, 0, 1, 2, 3};
  if (name == "plain") return {1, 0, -1, -1, -1, -1};
  throw Error("chunk_scheme '" + name + "' is not one of IOB, IOE, IOBES, plain");
}

// The chunks' counts over sequences of found and true tags. A chunk is open exactly while
// the last tag's type is not outside (a chunk ends before a position only where another
// begins there or the position is outside; Ends and Begins below show it), so whether a
// chunk ends before position k and whether one begins at k are functions of tags k - 1 and
// k alone: for two tags of one chunk type, a table of their positions (at most 4 x 4);
// otherwise a comparison of types. Where the tags are few (kTableTags) those functions are
// read from a table of every pair of tags instead. A found chunk is correct when a true
// chunk begins at the same position with the same type and the two end together. So a
// sequence is counted in one pass over both lists, without a branch on the tags.
class ChunkCounter {
 public:
  struct Counts {
    int64_t found = 0, expected = 0, correct = 0;
  };

  // `counted`: whether each type 0 .. types - 1 counts.
  ChunkCounter(const ChunkScheme& scheme, int64_t types, const std::vector<char>& counted)
      : s_(scheme), outside_(types), outside_tag_(types << scheme.type_shift), counted_(counted) {
    counted_.push_back(0);  // the outside type, read for positions where nothing begins
    for (int64_t prev = 0; prev < s_.tag_types; ++prev) {
      for (int64_t pos = 0; pos < s_.tag_types; ++pos) {
        ends_[prev * s_.tag_types + pos] = Ends(prev, pos);
        begins_[prev * s_.tag_types + pos] = Begins(prev, pos);
      }
    }
    const int64_t tags = outside_tag_ + 1;
    if (tags <= kTableTags) {
      pairs_.resize(static_cast<size_t>(tags * tags));
      for (int64_t prev = 0; prev < tags; ++prev) {
        for (int64_t tag = 0; tag < tags; ++tag) pairs_[static_cast<size_t>(prev * tags + tag)] = Bits(prev, tag);
      }
    }
  }

  // Adds the counts of one sequence, found[0, n) against truth[0, n), to c. Tags lie in
  // 0 .. types * tag_types (checked by the caller).
  void Count(const int64_t* found, const int64_t* truth, int64_t n, Counts& c) const {
    if (pairs_.empty())
      return CountBy([this](int64_t prev, int64_t tag) { return Bits(prev, tag); }, found, truth, n, c);
    const int64_t tags = outside_tag_ + 1;
    const uint8_t* pairs = pairs_.data();
    CountBy([pairs, tags](int64_t prev, int64_t tag) { return int{pairs[prev * tags + tag]}; }, found, truth, n, c);
  }

 private:
  // What a pair of consecutive tags (prev, tag) says, as bits: a chunk ends before tag
  // (kEnds), one begins at it (kBegins), and that one counts (kCountedBegins).
  static constexpr int kEnds = 1, kBegins = 2, kCountedBegins = 4;
  // The most tags (outside included) read through a table of pairs: 4 KiB, in L1.
  static constexpr int64_t kTableTags = 64;

  template <class PairBits>
  void CountBy(PairBits bits, const int64_t* found, const int64_t* truth, int64_t n, Counts& c) const {
    // The counts in locals, not through c: a store through c may be a store to the tags, as
    // far as the compiler knows, and would be made at every position.
    int64_t prev_found = outside_tag_, prev_true = outside_tag_, found_chunks = 0, true_chunks = 0, correct = 0;
    int candidate = 0;  // whether the open found and true chunks began together, alike
    for (int64_t k = 0; k < n; ++k) {
      const int f = bits(prev_found, found[k]), t = bits(prev_true, truth[k]);
      correct += candidate & f & t & kEnds;
      // candidate goes stale when one chunk ends alone, but is only read where both are
      // open, which takes a begin since, which sets it anew.
      const int alike = ((f & t & kCountedBegins) != 0) & ((found[k] >> s_.type_shift) == (truth[k] >> s_.type_shift));
      candidate = (candidate & (((f | t) & kBegins) == 0)) | alike;
      found_chunks += (f & kCountedBegins) != 0;
      true_chunks += (t & kCountedBegins) != 0;
      prev_found = found[k];
      prev_true = truth[k];
    }
    correct += candidate & ((prev_found >> s_.type_shift) != outside_) & ((prev_true >> s_.type_shift) != outside_);
    c.found += found_chunks;
    c.expected += true_chunks;
    c.correct += correct;
  }

  int Bits(int64_t prev, int64_t tag) const {
    const int64_t prev_type = prev >> s_.type_shift, type = tag >> s_.type_shift;
    const size_t pair = static_cast<size_t>((prev & (s_.tag_types - 1)) * s_.tag_types + (tag & (s_.tag_types - 1)));
    const int prev_out = prev_type == outside_, out = type == outside_, differs = type != prev_type;
    const int ends = (prev_out ^ 1) & (out | differs | ends_[pair]);
    const int begins = (out ^ 1) & (prev_out | differs | begins_[pair]);
    return ends * kEnds | begins * kBegins | (begins & counted_[static_cast<size_t>(type)]) * kCountedBegins;
  }

  // For two consecutive tags of one chunk type, positions prev_pos then pos: whether the
  // chunk of the first ends between them, and whether one begins at the second. (Where the
  // types differ, or either is outside, a chunk ends before a tag that is outside or of
  // another type, and begins at one of another type after an outside tag or another type.)
  bool Ends(int64_t prev_pos, int64_t pos) const {
    if (prev_pos == s_.begin || prev_pos == s_.inside) return pos == s_.begin || pos == s_.single;
    return prev_pos == s_.end || prev_pos == s_.single;
  }
  bool Begins(int64_t prev_pos, int64_t pos) const {
    if (pos == s_.begin || pos == s_.single) return true;
    if (pos == s_.inside || pos == s_.end) return prev_pos == s_.end || prev_pos == s_.single;
    return false;
  }

  ChunkScheme s_;
  int64_t outside_, outside_tag_;
  std::vector<char> counted_;
  std::array<int, 16> ends_{}, begins_{};
  std::vector<uint8_t> pairs_;  // Bits of every (prev, tag), row prev; empty above kTableTags
};

// The sequences of the batch as [begin, end) offsets into the flattened tags.
SequenceRanges Sequences(KernelContext& ctx, const Tensor& inference, const Tensor& label) {
  if (std::optional<Tensor> lengths = OptionalInput(ctx, "SeqLength")) {
    const std::vector<int64_t> d = inference.dims();
    if (!(d.size() == 2 || (d.size() == 3 && d[2] == 1))) {
      throw Error("Inference " + DimsString(d) + " must be [B, S] or [B, S, 1] (padded) when SeqLength is given");
    }
    return RangesOfPadded("SeqLength", *lengths, d[0], d[1]);
  }
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "Label", label, 1);
  if (inference.lod() != label.lod()) throw Error("Inference and Label must have the same LoD (the same sequences)");
  return RangesOfOffsets(o);
}

void ChunkEval(KernelContext& ctx) {
  Tensor inference = ctx.Input("Inference"), label = ctx.Input("Label");
  if (inference.dims() != label.dims() || inference.dtype() != RILL_INT64 || label.dtype() != RILL_INT64) {
    throw Error("Inference " + DimsString(inference.dims()) + " and Label " + DimsString(label.dims()) +
                " must be int64 tags of the same shape");
  }
  const ChunkScheme scheme = SchemeNamed(ctx.Attr<std::string>("chunk_scheme"));
  const int64_t types = ctx.Attr<int64_t>("num_chunk_types");
  if (types < 1) throw Error("num_chunk_types must be at least 1, got " + std::to_string(types));
  // Whether each chunk type counts (a type outside 0 .. types - 1 is no chunk's).
  std::vector<char> counted(static_cast<size_t>(types), 1);
  for (const int64_t t : ctx.Attr<std::vector<int64_t>>("excluded_chunk_types")) {
    if (t >= 0 && t < types) counted[static_cast<size_t>(t)] = 0;
  }
  const int64_t *found_tags = inference.data<int64_t>(), *true_tags = label.data<int64_t>();
  const int64_t last_tag = types * scheme.tag_types;
  const SequenceRanges ranges = Sequences(ctx, inference, label);
  // The sequences in chunks on the team, each chunk's three counts kept apart and added
  // after (integers: the same totals in any order). A sequence holding a tag outside
  // 0 .. last_tag is not counted but marked, and the first such tag named after the pass.
  const auto seqs = static_cast<int64_t>(ranges.size());
  const double bytes = 2.0 * sizeof(int64_t) * static_cast<double>(inference.numel());
  const ChunkCounter counter(scheme, types, counted);
  std::vector<ChunkCounter::Counts> counts(static_cast<size_t>(ParallelChunks(seqs, bytes)));
  std::vector<char> bad(ranges.size(), 0);
  ParallelFor(seqs, bytes, [&](int64_t chunk, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const auto [begin, end] = ranges[static_cast<size_t>(s)];
      const int64_t n = end - begin;
      bool outside = false;
      for (const int64_t* tags : {found_tags + begin, true_tags + begin}) {
        outside |= ReduceRow<Reduction::kMin>(tags, n) < 0 || ReduceRow<Reduction::kMax>(tags, n) > last_tag;
      }
      bad[static_cast<size_t>(s)] = outside;
      if (!outside) {
        counter.Count(found_tags + begin, true_tags + begin, end - begin, counts[static_cast<size_t>(chunk)]);
      }
    }
  });
  for (size_t s = 0; s < ranges.size(); ++s) {
    if (!bad[s]) continue;
    for (int64_t k = ranges[s].first; k < ranges[s].second; ++k) {
      for (const int64_t t : {found_tags[k], true_tags[k]}) {
        if (t < 0 || t > last_tag) {
          throw Error("tag " + std::to_string(t) + " at position " + std::to_string(k) + " is outside 0 .. " +
                      std::to_string(last_tag) + " (num_chunk_types times the scheme's tag types)");
        }
      }
    }
  }
  int64_t found = 0, expected = 0, correct = 0;
  for (const ChunkCounter::Counts& c : counts) {
    found += c.found;
    expected += c.expected;
    correct += c.correct;
  }
  const float precision = found ? static_cast<float>(correct) / static_cast<float>(found) : 0.0f;
  const float recall = expected ? static_cast<float>(correct) / static_cast<float>(expected) : 0.0f;
  const float f1 = correct ? 2 * precision * recall / (precision + recall) : 0.0f;
  ctx.AllocateOutput<float>("Precision", {1})[0] = precision;
  ctx.AllocateOutput<float>("Recall", {1})[0] = recall;
  ctx.AllocateOutput<float>("F1-Score", {1})[0] = f1;
  ctx.AllocateOutput<int64_t>("NumInferChunks", {1})[0] = found;
  ctx.AllocateOutput<int64_t>("NumLabelChunks", {1})[0] = expected;
  ctx.AllocateOutput<int64_t>("NumCorrectChunks", {1})[0] = correct;
}

}  // namespace

void RegisterChunkEval(Registrar& r) {
  r.Op(OpSchema("chunk_eval")
           .Doc("Precision, recall and F1 of the chunks in Inference's tags against Label's, by chunk_scheme (IOB, "
                "IOE, IOBES, plain), with the chunk counts. As Paddle's; see chunk_eval.cc.")
           .Input("Inference", "int64 [N, 1] with sequences (LoD), or [B, S] / [B, S, 1] padded: the found tags")
           .Input("Label", "int64, shaped like Inference with its LoD: the true tags")
           .Input("SeqLength", "int64 [B]: each padded sequence's length", RILL_SLOT_OPTIONAL)
           .Output("Precision", "float [1]: correct / found chunks")
           .Output("Recall", "float [1]: correct / true chunks")
           .Output("F1-Score", "float [1]: their harmonic mean")
           .Output("NumInferChunks", "int64 [1]: the chunks found")
           .Output("NumLabelChunks", "int64 [1]: the true chunks")
           .Output("NumCorrectChunks", "int64 [1]: the chunks found that are true")
           .Attr("num_chunk_types", int64_t{1}, "the chunk types; type num_chunk_types is outside every chunk")
           .Attr("chunk_scheme", "IOB", "how a tag marks its position in a chunk: IOB, IOE, IOBES or plain")
           .Attr("excluded_chunk_types", std::vector<int64_t>{}, "chunk types not counted")
           .KernelDtypeFrom("Inference"));
  r.Kernel("chunk_eval", RILL_CPU, RILL_INT64, &ChunkEval);
}

}  // namespace rill::math
