// beam_search (one step of beam search) and beam_search_decode (the sentences the steps
// make), with Paddle's contracts (paddle/fluid/operators/beam_search_op.cc,
// math/beam_search.cc, beam_search_decode_op.*).
//
// A step's candidates are rows of a LoD tensor whose level `level` groups them by source
// sentence: row r is one prefix (a branch of the beam) with its K candidates (ids[r, k]
// with scores[r, k], or candidate k itself without ids). beam_search keeps, per source, the beam_size best
// candidates over all its prefixes: an ended prefix (pre_id == end_id) offers only end_id
// at its own score, so a finished branch stays in the beam until better ones push it out.
// Scores are accumulated (is_accumulated, the default) or probabilities whose log is added
// to the prefix's score. A source whose every kept candidate ends a branch that had ended
// already is dropped (its sentences are complete). The selection is a LoD tensor [n, 1]:
// level 0 the source's prefixes (as the input's, in absolute rows), level 1 each prefix's
// selected candidates; parent_idx gives each one's prefix row.
//
// beam_search_decode walks the steps back from the last: each candidate of a source's last
// step with any is a hypothesis that follows its prefixes through the steps' level-1 LoD
// (a step's prefixes are the step before's candidates), an end_id written once;
// the sentences come out longest-lived first (sorted by their final score, best first),
// each source's sentences a sequence of level 0, each sentence's words one of level 1.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Offsets of every level in rows (Fluid's ToAbsOffset): level l's offsets index level
// l + 1's sequences, which index the rows.
LoD AbsoluteLod(const LoD& lod) {
  LoD abs = lod;
  for (size_t l = abs.size(); l-- > 1;) {
    for (auto& o : abs[l - 1]) o = abs[l][o];
  }
  return abs;
}

struct Candidate {
  uint64_t row;  // the prefix it extends
  int64_t id;
  float score;
  // The beam's order: by score, then by row (a later row first among equal scores).
  bool operator<(const Candidate& o) const { return score < o.score || (score == o.score && row < o.row); }
};

// Keeps `beam` (best first) at most `size` long with `c` in its place.
void Offer(std::vector<Candidate>& beam, const Candidate& c, size_t size) {
  if (beam.size() == size && !(beam.back() < c)) return;
  if (beam.size() < size) beam.push_back(c);
  size_t k = beam.size() - 1;
  for (; k > 0 && beam[k - 1] < c; --k) beam[k] = beam[k - 1];
  beam[k] = c;
}

void BeamSearch(KernelContext& ctx) {
  Tensor pre_ids = ctx.Input("pre_ids"), pre_scores = ctx.Input("pre_scores"), scores = ctx.Input("scores");
  const bool has_ids = ctx.HasInput("ids");
  const size_t level = static_cast<size_t>(ctx.Attr<int64_t>("level"));
  const int64_t beam_size = ctx.Attr<int64_t>("beam_size");
  const int64_t end_id = ctx.Attr<int64_t>("end_id");
  const bool accumulated = ctx.Attr<bool>("is_accumulated");
  if (beam_size <= 0) throw Error("beam_size must be positive, got " + std::to_string(beam_size));
  if (pre_ids.dtype() != RILL_INT64 || pre_scores.dtype() != RILL_FP32 || scores.dtype() != RILL_FP32) {
    throw Error(std::string("pre_ids must be int64 and pre_scores, scores fp32; got ") + DataTypeName(pre_ids.dtype()) +
                ", " + DataTypeName(pre_scores.dtype()) + ", " + DataTypeName(scores.dtype()));
  }
  SequenceOffsets(ctx.op(), "scores", scores, SIZE_MAX);
  const LoD lod = scores.lod();
  if (level >= lod.size()) {
    throw Error("level " + std::to_string(level) + " is not a LoD level of scores, which has " +
                std::to_string(lod.size()));
  }
  const std::vector<uint64_t> sources = AbsoluteLod(lod)[level];
  const int64_t rows = scores.ndim() > 0 ? scores.dims()[0] : 0;
  const int64_t width = rows > 0 ? scores.numel() / rows : 0;
  if (pre_ids.numel() != rows || pre_scores.numel() != rows) {
    throw Error("pre_ids and pre_scores must hold one value per row of scores (" + std::to_string(rows) + "), hold " +
                std::to_string(pre_ids.numel()) + " and " + std::to_string(pre_scores.numel()));
  }
  const int64_t* ids = nullptr;
  if (has_ids) {
    Tensor t = ctx.Input("ids");
    if (t.dtype() != RILL_INT64 || t.numel() != scores.numel()) {
      throw Error("ids must be int64 shaped like scores " + DimsString(scores.dims()) + ", is " +
                  DataTypeName(t.dtype()) + " " + DimsString(t.dims()));
    }
    ids = t.data<int64_t>();
  }
  const int64_t* prev_id = pre_ids.data<int64_t>();
  const float* prev_score = pre_scores.data<float>();
  const float* score = scores.data<float>();

  // Each source's beam on the passes' team, written to its own places of `kept`, from
  // room[s] on: as many as it can keep, beam_size or its candidates if fewer (how many it
  // kept in kept_count; 0 for a source that is done). Each source's candidates are its own
  // rows', so the split changes nothing.
  const auto source_count = static_cast<int64_t>(sources.size()) - 1;
  const auto size = static_cast<size_t>(beam_size);
  std::vector<size_t> room(sources.size(), 0);
  for (size_t s = 0; s + 1 < sources.size(); ++s) {
    const auto candidates =
        static_cast<size_t>(sources[s + 1] - sources[s]) * static_cast<size_t>(std::max<int64_t>(width, 1));
    room[s + 1] = room[s] + std::min(size, candidates);
  }
  std::vector<Candidate> kept(room.back());
  std::vector<size_t> kept_count(static_cast<size_t>(source_count), 0);
  ParallelFor(source_count, 12.0 * static_cast<double>(scores.numel()), [&](int64_t, int64_t first, int64_t end) {
    std::vector<Candidate> beam;
    for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(end); ++s) {
      beam.clear();
      Candidate last{};  // the beam's last (worst) once it is full
      for (uint64_t r = sources[s]; r < sources[s + 1]; ++r) {
        if (prev_id[r] == end_id) {
          Offer(beam, {r, end_id, prev_score[r]}, size);
          last = beam.back();
          continue;
        }
        // The row's scores and ids in locals, not read through the closure at each one.
        const float* row_scores = score + r * static_cast<uint64_t>(width);
        const int64_t* row_ids = ids ? ids + r * static_cast<uint64_t>(width) : nullptr;
        const float base = prev_score[r];
        for (int64_t k = 0; k < width; ++k) {
          const float sc = accumulated ? row_scores[k] : base + std::log(row_scores[k]);
          const Candidate c{r, row_ids ? row_ids[k] : k, sc};
          // Most candidates of a full beam are below its last: turned away here, by a
          // compare with a copy of the last kept in registers, not by a call.
          if (beam.size() < size || last < c) {
            Offer(beam, c, size);
            last = beam.back();
          }
        }
      }
      // A source all of whose kept candidates extend an ended branch with end_id is done.
      bool done = !beam.empty();
      for (const Candidate& c : beam) done = done && c.id == end_id && prev_id[c.row] == end_id;
      if (done) continue;
      // By prefix row, best first within a row, as the selection lists them.
      std::stable_sort(beam.begin(), beam.end(), [](const Candidate& a, const Candidate& b) { return a.row < b.row; });
      std::copy(beam.begin(), beam.end(), kept.begin() + static_cast<std::ptrdiff_t>(room[s]));
      kept_count[s] = beam.size();
    }
  });

  // Each prefix row's count of selected candidates, as offsets.
  std::vector<uint64_t> per_prefix(static_cast<size_t>(rows) + 1, 0);
  for (size_t s = 0; s < kept_count.size(); ++s) {
    for (size_t j = 0; j < kept_count[s]; ++j) ++per_prefix[kept[room[s] + j].row + 1];
  }
  for (size_t r = 1; r < per_prefix.size(); ++r) per_prefix[r] += per_prefix[r - 1];
  const auto n = static_cast<int64_t>(per_prefix.back());
  int64_t* out_ids = ctx.AllocateOutput<int64_t>("selected_ids", {n, 1});
  float* out_scores = ctx.AllocateOutput<float>("selected_scores", {n, 1});
  int32_t* parents = ctx.HasOutput("parent_idx") ? ctx.AllocateOutput<int32_t>("parent_idx", {n}) : nullptr;
  int64_t at = 0;  // the sources' rows are in order, and each source's kept in row order
  for (size_t s = 0; s < kept_count.size(); ++s) {
    for (size_t j = 0; j < kept_count[s]; ++j, ++at) {
      const Candidate& c = kept[room[s] + j];
      out_ids[at] = c.id;
      out_scores[at] = c.score;
      if (parents) parents[at] = static_cast<int32_t>(c.row);
    }
  }
  const LoD out_lod{sources, per_prefix};
  ctx.Output("selected_ids").set_lod(out_lod);
  ctx.Output("selected_scores").set_lod(out_lod);
}

// One step of the decode's input: its selection (beam_search's selected_ids and
// selected_scores) and their LoD, borrowed from the step's tensors.
template <class T> struct DecodeStep {
  const int64_t* ids;
  const T* scores;
  Tensor::LodLevel prefixes;    // level 0: each source's prefixes, sources + 1 offsets
  Tensor::LodLevel candidates;  // level 1: each prefix's candidates (rows of this step)
};

// The sentences of a range of sources: its hypotheses walked back through the steps
// (WalkBack), their sizes then known, and written to their place in the output (Write).
// Source s has a hypothesis per candidate of its last step with any, best score there
// first (equal scores in the step's order, a NaN score last). A hypothesis goes from a
// candidate to its prefix, which is a candidate of the step before; its words are the last
// step's and, before it, those that are not end_id (an ended branch carries end_id forward,
// which the sentence keeps once).
template <class T> class DecodedRange {
 public:
  // The walk goes a step at a time over all the range's hypotheses, so that each step's
  // arrays are read in order, into a table of each one's word at each step (step-major,
  // written in order), and finds a candidate's prefix in a table of the range's candidates'
  // prefixes made per step.
  void WalkBack(const std::vector<DecodeStep<T>>& steps, size_t begin, size_t end, int64_t end_id) {
    std::vector<uint64_t> row, order;
    for (size_t s = begin; s < end; ++s) {
      size_t last = steps.size();
      uint64_t first = 0, count = 0;
      while (count == 0 && last-- > 0) {
        first = steps[last].candidates[steps[last].prefixes[s]];
        count = steps[last].candidates[steps[last].prefixes[s + 1]] - first;
      }
      sentences_per_source.push_back(count);
      order.resize(count);
      for (uint64_t h = 0; h < count; ++h) order[h] = first + h;
      const T* final_scores = count > 0 ? steps[last].scores : nullptr;
      // Best first, a NaN score last; ties (NaNs among them) in the step's order.
      std::sort(order.begin(), order.end(), [final_scores](uint64_t a, uint64_t b) {
        const T x = final_scores[a], y = final_scores[b];
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) == std::isnan(y) ? a < b : std::isnan(y);
        return x > y || (x == y && a < b);
      });
      row.insert(row.end(), order.begin(), order.end());
      last_.insert(last_.end(), count, last);
    }
    const size_t n = hypotheses_ = row.size();
    if (n == 0) return;
    const size_t top = *std::max_element(last_.begin(), last_.end());
    words_table_ = Scratch<int64_t>(static_cast<int64_t>((top + 1) * n));
    scores_table_ = Scratch<T>(static_cast<int64_t>((top + 1) * n));
    words_per_sentence.assign(n, 1);  // the last step's word, always kept
    std::vector<uint64_t> prefix_of;  // of candidate base + i, for the range's candidates
    for (size_t t = top + 1; t-- > 0;) {
      const DecodeStep<T>& step = steps[t];
      const uint64_t base = step.candidates[step.prefixes[begin]];
      if (t > 0) {
        prefix_of.resize(step.candidates[step.prefixes[end]] - base);
        for (uint64_t p = step.prefixes[begin]; p < step.prefixes[end]; ++p) {
          for (uint64_t c = step.candidates[p]; c < step.candidates[p + 1]; ++c) prefix_of[c - base] = p;
        }
      }
      // Locals the compiler may keep in registers: no store here can change them.
      int64_t* __restrict words = words_table_.get() + t * n;
      T* __restrict scores = scores_table_.get() + t * n;
      uint64_t* __restrict kept = words_per_sentence.data();
      uint64_t* __restrict rows = row.data();
      const size_t* __restrict last = last_.data();
      const int64_t* __restrict ids = step.ids;
      const T* __restrict step_scores = step.scores;
      const uint64_t* __restrict prefix = prefix_of.data();
      for (size_t h = 0; h < n; ++h) {
        if (last[h] < t) continue;
        const uint64_t r = rows[h];
        const int64_t word = ids[r];
        words[h] = word;
        scores[h] = step_scores[r];
        kept[h] += (t < last[h]) & (word != end_id);
        if (t > 0) rows[h] = prefix[r - base];
      }
    }
    for (const uint64_t k : words_per_sentence) words += k;
  }

  // Writes the range's sentences, `words` words, to out_words and out_scores.
  void Write(int64_t end_id, int64_t* out_words, T* out_scores) const {
    const size_t n = hypotheses_;
    const int64_t* __restrict words = words_table_.get();
    const T* __restrict scores = scores_table_.get();
    int64_t* __restrict to_words = out_words;
    T* __restrict to_scores = out_scores;
    size_t at = 0;
    for (size_t h = 0; h < n; ++h) {
      // Each word is written where the next kept one goes and kept by moving past it: a
      // sentence's last word is always kept, so no write lands past the sentence.
      const size_t last = last_[h];
      for (size_t t = 0, k = h; t <= last; ++t, k += n) {
        const int64_t word = words[k];
        to_words[at] = word;
        to_scores[at] = scores[k];
        at += (t == last) | (word != end_id);
      }
    }
  }

  std::vector<uint64_t> sentences_per_source, words_per_sentence;
  uint64_t words = 0;

 private:
  size_t hypotheses_ = 0;
  std::vector<size_t> last_;  // each hypothesis's last step
  std::unique_ptr<int64_t[]> words_table_;
  std::unique_ptr<T[]> scores_table_;
};

template <class T> void BeamSearchDecode(KernelContext& ctx) {
  Variable ids_var = ctx.InputVar("Ids"), scores_var = ctx.InputVar("Scores");
  if (!ids_var.IsTensorArray() || !scores_var.IsTensorArray()) throw Error("Ids and Scores must be tensor arrays");
  const size_t step_count = ids_var.TensorArraySize();
  if (step_count == 0 || scores_var.TensorArraySize() != step_count) {
    throw Error("Ids and Scores must hold the same number of steps, at least one; hold " + std::to_string(step_count) +
                " and " + std::to_string(scores_var.TensorArraySize()));
  }
  const int64_t end_id = ctx.Attr<int64_t>("end_id");
  std::vector<DecodeStep<T>> steps(step_count);
  double bytes = 0;
  for (size_t t = 0; t < step_count; ++t) {
    Tensor ids = ids_var.TensorArrayAt(t), scores = scores_var.TensorArrayAt(t);
    if (ids.lod_levels() != 2 || ids.dtype() != RILL_INT64 || scores.dtype() != DataTypeOf<T>::value ||
        scores.numel() != ids.numel()) {
      throw Error("step " + std::to_string(t) +
                  ": Ids must be int64 with a LoD of 2 levels (beam_search's output) "
                  "and Scores " +
                  DataTypeName(DataTypeOf<T>::value) + " of as many values; got " + DataTypeName(ids.dtype()) +
                  " with " + std::to_string(ids.lod_levels()) + " levels, " + DataTypeName(scores.dtype()) + " of " +
                  std::to_string(scores.numel()));
    }
    DecodeStep<T>& step = steps[t];
    step = {ids.data<int64_t>(), scores.data<T>(), ids.lod_level(0), ids.lod_level(1)};
    if (step.prefixes.size != steps[0].prefixes.size) {
      throw Error("step " + std::to_string(t) + " has " + std::to_string(step.prefixes.size - 1) + " sources, step 0 " +
                  std::to_string(steps[0].prefixes.size - 1));
    }
    const uint64_t prefixes = step.prefixes[step.prefixes.size - 1];
    const uint64_t candidates = step.candidates[step.candidates.size - 1];
    if (prefixes + 1 != step.candidates.size || candidates != static_cast<uint64_t>(ids.numel())) {
      throw Error("step " + std::to_string(t) + ": Ids' LoD does not fit it (" + std::to_string(prefixes) +
                  " prefixes of " + std::to_string(step.candidates.size - 1) + ", " + std::to_string(candidates) +
                  " candidates of " + std::to_string(ids.numel()) + ")");
    }
    // Each step's prefixes are the step before's candidates, source by source: a walk from
    // a source's candidate stays among that source's rows.
    if (t > 0) {
      const DecodeStep<T>& before = steps[t - 1];
      for (size_t s = 0; s < step.prefixes.size; ++s) {
        if (step.prefixes[s] != before.candidates[before.prefixes[s]]) {
          throw Error("step " + std::to_string(t) + ": source " + std::to_string(s) + "'s prefixes start at row " +
                      std::to_string(step.prefixes[s]) + " but its candidates at step " + std::to_string(t - 1) +
                      " at row " + std::to_string(before.candidates[before.prefixes[s]]) +
                      " (a step's prefixes are the candidates of the step before)");
        }
      }
    }
    bytes += static_cast<double>(ids.numel()) * static_cast<double>(sizeof(int64_t) + sizeof(T));
  }
  // Sources are decoded in ranges on the team, each range's sentences placed after the
  // ranges before it, so the output does not depend on the split.
  const int64_t sources = static_cast<int64_t>(steps[0].prefixes.size) - 1;
  const int64_t chunks = ParallelChunks(sources, bytes);
  std::vector<DecodedRange<T>> decoded(static_cast<size_t>(chunks));
  ParallelForBlocks(sources, chunks, [&](int64_t chunk, int64_t begin, int64_t end) {
    decoded[static_cast<size_t>(chunk)].WalkBack(steps, static_cast<size_t>(begin), static_cast<size_t>(end), end_id);
  });
  std::vector<uint64_t> source_lod{0}, sentence_lod{0}, placed{0};
  for (const auto& part : decoded) {
    for (const uint64_t k : part.sentences_per_source) source_lod.push_back(source_lod.back() + k);
    for (const uint64_t k : part.words_per_sentence) sentence_lod.push_back(sentence_lod.back() + k);
    placed.push_back(placed.back() + part.words);
  }
  const auto n = static_cast<int64_t>(placed.back());
  int64_t* words = ctx.AllocateOutput<int64_t>("SentenceIds", {n});
  T* word_scores = ctx.AllocateOutput<T>("SentenceScores", {n});
  ParallelForBlocks(chunks, chunks, [&](int64_t chunk, int64_t, int64_t) {
    const auto c = static_cast<size_t>(chunk);
    decoded[c].Write(end_id, words + placed[c], word_scores + placed[c]);
  });
  ctx.Output("SentenceIds").set_lod({source_lod, sentence_lod});
  ctx.Output("SentenceScores").set_lod({source_lod, sentence_lod});
}

}  // namespace

void RegisterBeamSearch(Registrar& r) {
  r.Op(OpSchema("beam_search")
           .Doc("One step of beam search: per source sentence (scores' LoD level `level`), the beam_size best "
                "candidates over its prefixes (rows); an ended prefix offers only end_id. selected_ids and "
                "selected_scores [n, 1] carry a LoD of 2 levels (the sources' prefixes, each prefix's selected "
                "candidates); parent_idx each one's prefix row. As Paddle's.")
           .Input("pre_ids", "int64 [N, 1], each prefix's last id")
           .Input("pre_scores", "fp32 [N, 1], each prefix's score")
           .Input("ids", "int64 [N, K], the candidates (none: candidate k is id k)", RILL_SLOT_OPTIONAL)
           .Input("scores", "fp32 [N, K] with a LoD, the candidates' scores")
           .Output("selected_ids", "int64 [n, 1]")
           .Output("selected_scores", "fp32 [n, 1]")
           .Output("parent_idx", "int32 [n], each selected candidate's prefix row", RILL_SLOT_OPTIONAL)
           .Attr("level", int64_t{0}, "the LoD level of the source sentences")
           .RequiredAttr("beam_size", RILL_ATTR_INT, "candidates kept per source")
           .RequiredAttr("end_id", RILL_ATTR_INT, "the id that ends a sentence")
           .Attr("is_accumulated", true, "scores are accumulated; false: probabilities, their log added"));
  r.Kernel("beam_search", RILL_CPU, RILL_ANY_DTYPE, &BeamSearch);
  r.Op(OpSchema("beam_search_decode")
           .Doc("The sentences beam search made: walks the steps' selections (tensor arrays of beam_search's "
                "outputs) back from the last; SentenceIds and SentenceScores carry a LoD of 2 levels (each "
                "source's sentences, best final score first; each sentence's words).")
           .Input("Ids", "tensor array of each step's selected_ids")
           .Input("Scores", "tensor array of each step's selected_scores")
           .Output("SentenceIds", "int64, the sentences' words")
           .Output("SentenceScores", "the words' scores")
           .RequiredAttr("beam_size", RILL_ATTR_INT, "the beam's size")
           .RequiredAttr("end_id", RILL_ATTR_INT, "the id that ends a sentence")
           .KernelDtypeFrom("Scores"));
  RegisterCpu<float, double>(r, "beam_search_decode", [](auto t) { return &BeamSearchDecode<decltype(t)>; });
}

}  // namespace rill::math
