// plugins/math/recurrent_batches.h — the time-major order the recurrent ops (lstm, gru) run
// the sequences of a LoD tensor in, as Paddle's do (math/sequence2batch.h).
//
// A step of a recurrence depends on the step before it in the same sequence only, so step
// t of every sequence can run as one matrix product. The sequences are ordered longest
// first (ties by their order in the LoD), and the rows of the packed input are laid out
// step-major: step 0 of each sequence in that order, then step 1 of each sequence that has
// one, and so on ("batch" order, Paddle's BatchGate / BatchHidden outputs). Since the order
// is longest first, the k sequences that have a step t are the first k of those at step
// t - 1: row j of step t continues row j of step t - 1, so a step's previous states are
// the leading rows of the step before it. With is_reverse a sequence runs from its last
// row to its first.
#ifndef RILL_PLUGINS_MATH_RECURRENT_BATCHES_H_
#define RILL_PLUGINS_MATH_RECURRENT_BATCHES_H_

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "parallel_for.h"

namespace rill::math {

struct RecurrentBatches {
  std::vector<int64_t> order;   // the sequences (their index in the LoD), longest first
  std::vector<int64_t> starts;  // step t's rows are starts[t] .. starts[t + 1] - 1; starts.back() = rows
  std::vector<int64_t> source;  // batch row b is row source[b] of the packed (sequence-order) tensor

  int64_t steps() const { return static_cast<int64_t>(starts.size()) - 1; }
  int64_t rows() const { return starts.back(); }
  // The sequences that have a step t: the first Count(t) of `order`.
  int64_t Count(int64_t t) const { return starts[t + 1] - starts[t]; }
};

// The batch order of the sequences that `offsets` (a LoD level: 0 = o[0] <= ... <= o[S])
// packs.
inline RecurrentBatches RecurrentBatchesOf(const std::vector<uint64_t>& offsets, bool reverse) {
  RecurrentBatches b;
  const int64_t seqs = static_cast<int64_t>(offsets.size()) - 1;
  const auto length = [&](int64_t s) { return static_cast<int64_t>(offsets[s + 1] - offsets[s]); };
  b.order.resize(static_cast<size_t>(seqs));
  std::iota(b.order.begin(), b.order.end(), int64_t{0});
  std::stable_sort(b.order.begin(), b.order.end(), [&](int64_t x, int64_t y) { return length(x) > length(y); });
  const int64_t longest = seqs > 0 ? length(b.order[0]) : 0;
  b.starts.assign(1, 0);
  b.source.reserve(offsets.back());
  for (int64_t t = 0; t < longest; ++t) {
    for (int64_t s : b.order) {
      if (length(s) <= t) break;
      b.source.push_back(static_cast<int64_t>(reverse ? offsets[s + 1] - 1 - t : offsets[s] + t));
    }
    b.starts.push_back(static_cast<int64_t>(b.source.size()));
  }
  return b;
}

// to[i] = from[rows[i]] for rows of `width` elements: into batch order with `source`,
// or, for the initial states (one row a sequence), into the order of `order`.
template <class T> void GatherRows(const T* from, int64_t width, const std::vector<int64_t>& rows, int64_t n, T* to) {
  ParallelFor(n, 2.0 * n * width * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      std::copy(from + rows[i] * width, from + (rows[i] + 1) * width, to + i * width);
  });
}

// to[rows[i]] = from[i]: back from batch order (`rows` names each row once).
template <class T> void ScatterRows(const T* from, int64_t width, const std::vector<int64_t>& rows, int64_t n, T* to) {
  ParallelFor(n, 2.0 * n * width * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) std::copy(from + i * width, from + (i + 1) * width, to + rows[i] * width);
  });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_RECURRENT_BATCHES_H_
