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
#include <string>
#include <vector>

#include "chunk_eval_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// The scheme named chunk_scheme.
ChunkScheme SchemeNamed(const std::string& name) {
  if (name == "IOB") return {2, 1, 0, 1, -1, -1};
  if (name == "IOE") return {2, 1, -1, 0, 1, -1};
  if (name == "IOBES") return {4, 2, 0, 1, 2, 3};
  if (name == "plain") return {1, 0, -1, -1, -1, -1};
  throw Error("chunk_scheme '" + name + "' is not one of IOB, IOE, IOBES, plain");
}

// For two consecutive tags of one chunk type, positions prev_pos then pos: whether the
// chunk of the first ends between them, and whether one begins at the second. (Where the
// types differ, or either is outside, a chunk ends before a tag that is outside or of
// another type, and begins at one of another type after an outside tag or another type.)
bool Ends(const ChunkScheme& s, int64_t prev_pos, int64_t pos) {
  if (prev_pos == s.begin || prev_pos == s.inside) return pos == s.begin || pos == s.single;
  return prev_pos == s.end || prev_pos == s.single;
}
bool Begins(const ChunkScheme& s, int64_t prev_pos, int64_t pos) {
  if (pos == s.begin || pos == s.single) return true;
  if (pos == s.inside || pos == s.end) return prev_pos == s.end || prev_pos == s.single;
  return false;
}

}  // namespace

ChunkRules::ChunkRules(const ChunkScheme& scheme, int64_t types, const std::vector<char>& counted_types_given)
    : type_shift(scheme.type_shift),
      position_mask(scheme.tag_types - 1),
      tag_types(scheme.tag_types),
      outside(types),
      outside_tag(types << scheme.type_shift),
      counted(counted_types_given) {
  counted.push_back(0);  // the outside type, read for positions where nothing begins
  for (int64_t prev = 0; prev < tag_types; ++prev) {
    for (int64_t pos = 0; pos < tag_types; ++pos) {
      ends |= static_cast<uint32_t>(Ends(scheme, prev, pos)) << (prev * tag_types + pos);
      begins |= static_cast<uint32_t>(Begins(scheme, prev, pos)) << (prev * tag_types + pos);
    }
  }
  if (outside < 64) {
    for (int64_t t = 0; t < outside; ++t)
      counted_types |= static_cast<uint64_t>(counted[static_cast<size_t>(t)] != 0) << t;
  }
  const int64_t tags = outside_tag + 1;
  if (tags <= kTableTags) {
    pairs.resize(static_cast<size_t>(tags * tags));
    for (int64_t prev = 0; prev < tags; ++prev) {
      for (int64_t tag = 0; tag < tags; ++tag) {
        pairs[static_cast<size_t>(prev * tags + tag)] = static_cast<uint8_t>(PairBits(*this, prev, tag));
      }
    }
  }
}

namespace {

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
  const ChunkRules rules(scheme, types, counted);
  const int64_t last_tag = rules.outside_tag;
  const SequenceRanges ranges = Sequences(ctx, inference, label);
  // The sequences in chunks on the team, each chunk's three counts kept apart and added
  // after (integers: the same totals in any order). A sequence holding a tag outside
  // 0 .. last_tag is not counted but marked, and the first such tag named after the pass.
  const auto seqs = static_cast<int64_t>(ranges.size());
  const double bytes = 2.0 * sizeof(int64_t) * static_cast<double>(inference.numel());
  const CountChunksLoop count = CountChunksLoopFor();
  std::vector<ChunkCounts> counts(static_cast<size_t>(ParallelChunks(seqs, bytes)));
  std::vector<char> bad(ranges.size(), 0);
  ParallelFor(seqs, bytes, [&](int64_t chunk, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const auto [begin, end] = ranges[static_cast<size_t>(s)];
      bad[static_cast<size_t>(s)] =
          !count(rules, found_tags + begin, true_tags + begin, end - begin, counts[static_cast<size_t>(chunk)]);
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
  for (const ChunkCounts& c : counts) {
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
