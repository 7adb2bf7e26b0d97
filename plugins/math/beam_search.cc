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
// beam_search_decode walks the steps back from the last: each source's beam_size
// hypotheses follow their prefixes through the steps' level-1 LoD, an end_id written once;
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

template <class T> struct Sentence {
  std::vector<int64_t> words;  // last first, as the walk back finds them
  std::vector<T> scores;
};

template <class T> void BeamSearchDecode(KernelContext& ctx) {
  Variable ids_var = ctx.InputVar("Ids"), scores_var = ctx.InputVar("Scores");
  if (!ids_var.IsTensorArray() || !scores_var.IsTensorArray()) throw Error("Ids and Scores must be tensor arrays");
  const size_t steps = ids_var.TensorArraySize();
  if (steps == 0 || scores_var.TensorArraySize() != steps) {
    throw Error("Ids and Scores must hold the same number of steps, at least one; hold " + std::to_string(steps) +
                " and " + std::to_string(scores_var.TensorArraySize()));
  }
  const int64_t beam_size = ctx.Attr<int64_t>("beam_size");
  const int64_t end_id = ctx.Attr<int64_t>("end_id");
  std::vector<LoD> lods(steps);
  for (size_t t = 0; t < steps; ++t) {
    Tensor ids = ids_var.TensorArrayAt(t), scores = scores_var.TensorArrayAt(t);
    lods[t] = ids.lod();
    if (lods[t].size() != 2 || ids.dtype() != RILL_INT64 || scores.dtype() != DataTypeOf<T>::value ||
        scores.numel() != ids.numel()) {
      throw Error("step " + std::to_string(t) +
                  ": Ids must be int64 with a LoD of 2 levels (beam_search's output) "
                  "and Scores " +
                  DataTypeName(DataTypeOf<T>::value) + " of as many values; got " + DataTypeName(ids.dtype()) +
                  " with " + std::to_string(lods[t].size()) + " levels, " + DataTypeName(scores.dtype()) + " of " +
                  std::to_string(scores.numel()));
    }
  }
  const size_t sources = lods[0][0].size() - 1;
  std::vector<std::vector<Sentence<T>>> sentences(sources, std::vector<Sentence<T>>(static_cast<size_t>(beam_size)));
  // Per source, each hypothesis's candidate row at the step being walked; empty until the
  // source's last step (where it was dropped, or the last step) starts its hypotheses.
  std::vector<std::vector<uint64_t>> at(sources);
  for (size_t t = steps; t-- > 0;) {
    const LoD& lod = lods[t];
    if (lod[0].size() != sources + 1) {
      throw Error("step " + std::to_string(t) + " has " + std::to_string(lod[0].size() - 1) + " sources, step 0 " +
                  std::to_string(sources));
    }
    const int64_t* id = ids_var.TensorArrayAt(t).template data<int64_t>();
    const T* score = scores_var.TensorArrayAt(t).template data<T>();
    for (size_t s = 0; s < sources; ++s) {
      auto& hyp = sentences[s];
      auto& rows = at[s];
      const uint64_t first_prefix = lod[0][s], last_prefix = lod[0][s + 1];
      if (rows.empty()) {
        for (uint64_t p = first_prefix; p < last_prefix; ++p) {
          for (uint64_t c = lod[1][p]; c < lod[1][p + 1]; ++c) {
            if (rows.size() == hyp.size()) hyp.emplace_back();
            rows.push_back(p);
            hyp[rows.size() - 1].words.push_back(id[c]);
            hyp[rows.size() - 1].scores.push_back(score[c]);
          }
        }
        continue;
      }
      for (size_t h = 0; h < rows.size(); ++h) {
        const uint64_t c = rows[h];
        if (id[c] != end_id || hyp[h].words.empty()) {
          hyp[h].words.push_back(id[c]);
          hyp[h].scores.push_back(score[c]);
        }
        // The prefix candidate c extends, which is a candidate of the step before.
        uint64_t p = first_prefix;
        while (p < last_prefix && lod[1][p + 1] <= c) ++p;
        rows[h] = p;
      }
    }
  }

  std::vector<uint64_t> source_lod{0}, sentence_lod{0};
  std::vector<int64_t> words;
  std::vector<T> word_scores;
  for (auto& hyp : sentences) {
    hyp.erase(std::remove_if(hyp.begin(), hyp.end(), [](const Sentence<T>& x) { return x.words.empty(); }), hyp.end());
    std::stable_sort(hyp.begin(), hyp.end(),
                     [](const Sentence<T>& a, const Sentence<T>& b) { return a.scores.front() > b.scores.front(); });
    for (const auto& x : hyp) {
      words.insert(words.end(), x.words.rbegin(), x.words.rend());
      word_scores.insert(word_scores.end(), x.scores.rbegin(), x.scores.rend());
      sentence_lod.push_back(sentence_lod.back() + x.words.size());
    }
    source_lod.push_back(source_lod.back() + hyp.size());
  }
  const int64_t n = static_cast<int64_t>(words.size());
  std::copy(words.begin(), words.end(), ctx.AllocateOutput<int64_t>("SentenceIds", {n}));
  std::copy(word_scores.begin(), word_scores.end(), ctx.AllocateOutput<T>("SentenceScores", {n}));
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
