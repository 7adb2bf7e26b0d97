// plugins/math/intra_op.h — how large ops (oneDNN's calls, the plugin's own memory-bound
// passes) use more than one core without multiplying threads with the task scheduler's
// workers.
//
// RunIntraOp(flops, bytes, work) runs `work`, a library call of `flops` arithmetic that
// moves `bytes` of memory:
//  - inline on the calling thread, single-threaded, when it is small (under kParallelFlops
//    and kParallelBytes: a parallel region's fork and join would cost more than they
//    save), or when the budget is 1 (the calling thread's OpenMP setting is put back after);
//  - otherwise on the intra-op thread, one call at a time, with the whole budget of
//    OpenMP threads, while the caller waits (and its exceptions come back to it).
// So however many workers run large ops at once, at most `budget` threads compute, and
// the OpenMP team belongs to one long-lived thread: it is made once per process, not once
// per scheduler (a Model::Run starts fresh workers, which would each make their own team).
//
// The budget is $RILL_INTRA_OP_THREADS if set, else OpenMP's default (OMP_NUM_THREADS, or
// one per hardware thread). Under ThreadSanitizer it is 1 and every call, small ones too,
// goes to the intra-op thread: libgomp and libdnnl are not instrumented, so TSan cannot
// see their barriers and locks.
//
// ParallelFor(n, bytes, body) does the same for memory-bound passes over n items (an
// elementwise op's elements, batch norm's per-channel runs): when the pass moves at least
// kParallelBytes, it splits [0, n) into ParallelParts(n, bytes) contiguous ranges and runs
// body(part, begin, end) for each on the intra-op team; otherwise body(0, 0, n) inline.
// A caller that keeps a partial result per part (a sum) asks ParallelParts first; parts
// combined in part order give the same result on every run with the same budget.
//
// `work` and `body` must not block on other tasks (channels, go blocks): they hold the
// intra-op thread, and with it every other large op, until they return.
#ifndef RILL_PLUGINS_MATH_INTRA_OP_H_
#define RILL_PLUGINS_MATH_INTRA_OP_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace rill::math {

inline constexpr double kParallelFlops = 4e6;
inline constexpr double kParallelBytes = 512 * 1024;
inline bool IsLargeWork(double flops, double bytes) { return flops >= kParallelFlops || bytes >= kParallelBytes; }

namespace detail {
// `work` is a reference to the caller's callable (std::function holds that without
// allocating: a kernel may call this for every small GEMM).
void RunIntraOp(bool large, const std::function<void()>& work);
void ParallelFor(int64_t n, int parts, const std::function<void(int, int64_t, int64_t)>& body);
}  // namespace detail

// Returns what `work` returns (a default-constructible value, or nothing).
template <class F>
auto RunIntraOp(double flops, double bytes, F&& work) {
  using Result = decltype(work());
  const bool large = IsLargeWork(flops, bytes);
  if constexpr (std::is_void_v<Result>) {
    detail::RunIntraOp(large, std::ref(work));
  } else {
    Result result{};
    detail::RunIntraOp(large, [&result, &work] { result = work(); });
    return result;
  }
}

// The budget: the threads a large call gets.
int IntraOpBudget();

// How many parts ParallelFor splits a pass over n items moving `bytes` into: the budget
// (at most n), or 1.
inline int ParallelParts(int64_t n, double bytes) {
  return bytes < kParallelBytes ? 1 : static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(IntraOpBudget(), n)));
}

template <class F>
void ParallelFor(int64_t n, double bytes, F&& body) {
  const int parts = ParallelParts(n, bytes);
  if (parts == 1) return body(0, int64_t{0}, n);
  detail::ParallelFor(n, parts, std::ref(body));
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INTRA_OP_H_
