// plugins/math/parallel_for.h — the plugin's own memory-bound passes (activations,
// elementwise ops, sum, batch norm's passes) on more than one core.
//
// ParallelFor(n, bytes, body) runs body(chunk, begin, end) for each of ParallelChunks(n,
// bytes) contiguous chunks of [0, n), a pass moving `bytes` of memory. A pass under
// kParallelBytes is one chunk, run inline. A larger one runs on the passes' team: the
// calling thread and ThreadBudget() - 1 helpers (intra_op.h), each taking a contiguous run
// of chunks first, so that consecutive passes over the same tensors find their shares in
// the same cores' caches, then the chunks others have not started (parallel_for.cc argues
// the protocol). A pass while the team runs another (another worker's, or one a chunk
// starts) runs its chunks in order on its caller, as every pass does with a budget of 1.
//
// The chunks depend on n and bytes only, never on the budget or on which thread ran
// them: a caller that keeps a partial result per chunk (a sum) and combines them in chunk
// order gets the same bits on every run, with any number of threads.
//
// `body` must not block on other tasks (channels, go blocks): the helpers would wait with
// it. A chunk's exception is rethrown to the caller (the first in chunk order, when several
// throw) after the pass.
#ifndef RILL_PLUGINS_MATH_PARALLEL_FOR_H_
#define RILL_PLUGINS_MATH_PARALLEL_FOR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "memory_loops.h"

namespace rill::math {

inline constexpr double kParallelBytes = 512 * 1024;

// How many chunks ParallelFor splits a pass over n items moving `bytes` into: 1 under
// kParallelBytes, else one per 128 KiB moved, at most 64 and at most n.
int64_t ParallelChunks(int64_t n, double bytes);

namespace detail {
// `body` is a reference to the caller's callable (held by std::function without allocating).
void RunChunks(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body);
}  // namespace detail

// ParallelFor with the caller's own count of chunks, `chunks` (1 to n): for work whose
// cost is not the memory it moves (a matrix product's blocks).
template <class F> void ParallelForBlocks(int64_t n, int64_t chunks, F&& body) {
  if (chunks <= 1) return body(int64_t{0}, int64_t{0}, n);
  detail::RunChunks(n, chunks, std::ref(body));
}

template <class F> void ParallelFor(int64_t n, double bytes, F&& body) {
  ParallelForBlocks(n, ParallelChunks(n, bytes), body);
}

// CopyBytes of `bytes` from `from` to `to` (not overlapping), as a ParallelFor pass.
void ParallelCopy(const void* from, void* to, size_t bytes);

// p[0, n) = value, as a ParallelFor pass of the widest stores the machine has
// (memory_loops.h): T is any type of 1, 2, 4 or 8 bytes, written as its bytes.
template <class T> void ParallelFill(T* p, int64_t n, T value) {
  static_assert(std::is_trivially_copyable_v<T>, "a fill writes T's bytes");
  using Word = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(T) == sizeof(Word), "a fill writes elements of 1, 2, 4 or 8 bytes");
  Word bits;
  std::memcpy(&bits, &value, sizeof(T));
  Word* words = reinterpret_cast<Word*>(p);
  const auto fill = memory::FillFor<Word>();
  ParallelFor(n, static_cast<double>(sizeof(T)) * n,
              [words, bits, fill](int64_t, int64_t begin, int64_t end) { fill(words + begin, end - begin, bits); });
}

// How many of p[0, n) satisfy `holds`, counted per chunk as a ParallelFor pass and the
// counts added after: a count, not a short-circuiting test, is a loop the compiler
// vectorizes.
template <class T, class P> int64_t ParallelCount(const T* p, int64_t n, P holds) {
  const double bytes = static_cast<double>(sizeof(T)) * n;
  std::vector<int64_t> counts(static_cast<size_t>(ParallelChunks(n, bytes)), 0);
  ParallelFor(n, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
    int64_t count = 0;
    for (int64_t i = begin; i < end; ++i) count += holds(p[i]);
    counts[static_cast<size_t>(chunk)] = count;
  });
  int64_t total = 0;
  for (const int64_t c : counts) total += c;
  return total;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_PARALLEL_FOR_H_
