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
#include <initializer_list>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels.h"
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
  // The sequences with any step (the non-empty ones): those an initial state starts.
  int64_t FirstCount() const { return steps() > 0 ? Count(0) : 0; }
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

// Writes output `slot`, [rows, width] in the packed (sequence) order, from `from` in batch
// order, with `lod`: the input's sequences, read before any output is written (an output may
// be the input's variable).
template <class T>
void WriteInSequenceOrder(KernelContext& ctx, const char* slot, const RecurrentBatches& b, int64_t width, const T* from,
                          const std::vector<std::vector<uint64_t>>& lod) {
  WriteOutput<T>(ctx, slot, {}, {b.rows(), width}, [&](T* p) { ScatterRows(from, width, b.source, b.rows(), p); });
  ctx.Output(slot).set_lod(lod);
}

// The initial states' rows ([N, width], a row a sequence) of the sequences with a step, in
// the order of `order`: step 0's previous states. Null without states (they are zeros).
template <class T>
std::unique_ptr<T[]> InitialStatesInOrder(const RecurrentBatches& b, const std::optional<Tensor>& states,
                                          int64_t width) {
  if (!states) return nullptr;
  std::unique_ptr<T[]> ordered = Scratch<T>(b.FirstCount() * width);
  GatherRows(states->data<T>(), width, b.order, b.FirstCount(), ordered.get());
  return ordered;
}

// Writes output `slot`, the initial states' gradient [N, width], from `ordered` (in the
// order of InitialStatesInOrder); an empty sequence's row is zeros.
template <class T>
void WriteInitialStateGrad(KernelContext& ctx, const char* slot, const RecurrentBatches& b, int64_t width,
                           const T* ordered) {
  const auto seqs = static_cast<int64_t>(b.order.size());
  WriteOutput<T>(ctx, slot, {}, {seqs, width}, [&](T* p) {
    std::fill(p, p + seqs * width, T(0));
    ScatterRows(ordered, width, b.order, b.FirstCount(), p);
  });
}

// The gradient op's inputs that its forward op wrote (slot, tensor, width): each must be
// [rows, width], as `op` wrote it.
inline void CheckWrittenBy(const char* op, int64_t rows,
                           std::initializer_list<std::tuple<const char*, const Tensor*, int64_t>> saved) {
  for (const auto& [slot, t, width] : saved) {
    if (t->dims() != std::vector<int64_t>{rows, width}) {
      throw Error(std::string(slot) + " " + DimsString(t->dims()) + " must be [" + std::to_string(rows) + ", " +
                  std::to_string(width) + "], as " + op + " wrote it");
    }
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_RECURRENT_BATCHES_H_
