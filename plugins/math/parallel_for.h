// plugins/math/parallel_for.h — the plugin's own memory-bound passes (activations,
// elementwise ops, sum, batch norm's passes) on more than one core.
//
// ParallelFor(n, bytes, body) runs body(chunk, begin, end) for each of ParallelChunks(n,
// bytes) contiguous chunks of [0, n), a pass moving `bytes` of memory. A pass under
// kParallelBytes is one chunk, run inline. A larger one is split; the calling thread runs
// chunks itself while the pass helpers (IntraOpBudget() - 1 threads, shared by every
// caller) take the rest as they wake, one chunk at a time. So a pass never waits for a
// helper that has not started: on a busy machine, where a helper may not get a core for
// milliseconds, the caller does the chunks alone, at about its single-threaded speed; it
// waits only for chunks a helper has begun.
//
// The chunks depend on n and bytes only, never on which thread ran them: a caller that
// keeps a partial result per chunk (a sum) and combines them in chunk order gets the same
// result on every run.
//
// OpenMP is not used here: its barriers spin while a team thread has no core, which on a
// shared machine costs a pass milliseconds (the library calls of intra_op.h keep it).
// `body` must not block on other tasks (channels, go blocks), and a chunk's exception is
// rethrown to the caller (the first, when several throw) once every started chunk ended.
#ifndef RILL_PLUGINS_MATH_PARALLEL_FOR_H_
#define RILL_PLUGINS_MATH_PARALLEL_FOR_H_

#include <cstdint>
#include <functional>

namespace rill::math {

inline constexpr double kParallelBytes = 512 * 1024;

// How many chunks ParallelFor splits a pass over n items moving `bytes` into: 1 under
// kParallelBytes, else one per 128 KiB moved, at most 64 and at most n.
int64_t ParallelChunks(int64_t n, double bytes);

namespace detail {
// `body` is a reference to the caller's callable (held by std::function without allocating).
void RunChunks(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body);
}  // namespace detail

template <class F>
void ParallelFor(int64_t n, double bytes, F&& body) {
  const int64_t chunks = ParallelChunks(n, bytes);
  if (chunks == 1) return body(int64_t{0}, int64_t{0}, n);
  detail::RunChunks(n, chunks, std::ref(body));
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_PARALLEL_FOR_H_
