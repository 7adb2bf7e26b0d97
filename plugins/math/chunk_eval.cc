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
#include <set>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

struct ChunkScheme {
  int64_t tag_types = 1;
  // Each position's code within tag_types, or -1 where the scheme has no such position.
  int64_t begin = -1, inside = -1, end = -1, single = -1;
};

ChunkScheme SchemeNamed(const std::string& name) {
  if (name == "IOB") return {2, 0, 1, -1, -1};
  if (name == "IOE") return {2, -1, 0, 1, -1};
  if (name == "IOBES") return {4, 0, 1, 2, 3};
  if (name == "plain") return {1, -1, -1, -1, -1};
  throw Error("chunk_scheme '" + name + "' is not one of IOB, IOE, IOBES, plain");
}

struct Chunk {
  int64_t first, last, type;
  bool operator==(const Chunk& o) const { return first == o.first && last == o.last && type == o.type; }
};

// The chunks of one sequence's tags, in order. `outside` is the type of no chunk.
class ChunkReader {
 public:
  ChunkReader(const ChunkScheme& scheme, int64_t outside) : s_(scheme), outside_(outside) {}

  std::vector<Chunk> Read(const int64_t* tags, int64_t length) const {
    std::vector<Chunk> chunks;
    int64_t first = 0, prev_pos = -1, prev_type = outside_;
    bool open = false;
    for (int64_t k = 0; k < length; ++k) {
      const int64_t pos = tags[k] % s_.tag_types, type = tags[k] / s_.tag_types;
      if (open && Ends(prev_pos, prev_type, pos, type)) {
        chunks.push_back({first, k - 1, prev_type});
        open = false;
      }
      if (Begins(prev_pos, prev_type, pos, type)) {
        first = k;
        open = true;
      }
      prev_pos = pos;
      prev_type = type;
    }
    if (open) chunks.push_back({first, length - 1, prev_type});
    return chunks;
  }

 private:
  // Whether a chunk of prev_type ends before a position tagged (pos, type).
  bool Ends(int64_t prev_pos, int64_t prev_type, int64_t pos, int64_t type) const {
    if (prev_type == outside_) return false;
    if (type == outside_ || type != prev_type) return true;
    if (prev_pos == s_.begin || prev_pos == s_.inside) return pos == s_.begin || pos == s_.single;
    return prev_pos == s_.end || prev_pos == s_.single;
  }
  // Whether a chunk begins at a position tagged (pos, type) after one tagged (prev_pos, prev_type).
  bool Begins(int64_t prev_pos, int64_t prev_type, int64_t pos, int64_t type) const {
    if (prev_type == outside_) return type != outside_;
    if (type == outside_) return false;
    if (type != prev_type || pos == s_.begin || pos == s_.single) return true;
    if (pos == s_.inside || pos == s_.end) return prev_pos == s_.end || prev_pos == s_.single;
    return false;
  }

  ChunkScheme s_;
  int64_t outside_;
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
  const std::vector<int64_t> excluded_list = ctx.Attr<std::vector<int64_t>>("excluded_chunk_types");
  const std::set<int64_t> excluded(excluded_list.begin(), excluded_list.end());
  const ChunkReader reader(scheme, types);
  const int64_t *found_tags = inference.data<int64_t>(), *true_tags = label.data<int64_t>();
  int64_t found = 0, expected = 0, correct = 0;
  for (const auto& [begin, end] : Sequences(ctx, inference, label)) {
    for (int64_t k = begin; k < end; ++k) {
      for (const int64_t t : {found_tags[k], true_tags[k]}) {
        if (t < 0 || t > types * scheme.tag_types) {
          throw Error("tag " + std::to_string(t) + " at position " + std::to_string(k) + " is outside 0 .. " +
                      std::to_string(types * scheme.tag_types) + " (num_chunk_types times the scheme's tag types)");
        }
      }
    }
    const std::vector<Chunk> a = reader.Read(found_tags + begin, end - begin);
    const std::vector<Chunk> b = reader.Read(true_tags + begin, end - begin);
    // Both lists are ordered by their last positions, and chunks of one list do not overlap.
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      if (a[i] == b[j] && excluded.count(a[i].type) == 0) ++correct;
      const int64_t ai = a[i].last, bj = b[j].last;
      if (ai <= bj) ++i;
      if (bj <= ai) ++j;
    }
    for (const Chunk& c : a) found += excluded.count(c.type) == 0;
    for (const Chunk& c : b) expected += excluded.count(c.type) == 0;
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
