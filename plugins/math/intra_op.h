// plugins/math/intra_op.h — how large library calls (oneDNN's) use more than one core
// without multiplying threads with the task scheduler's workers.
//
// RunIntraOp(flops, bytes, work) runs `work`, a library call of `flops` arithmetic that
// moves `bytes` of memory:
//  - inline on the calling thread, single-threaded, when it is small (under kParallelFlops
//    and kParallelLibraryBytes: the hand-off and a parallel region's fork and join would
//    cost more than they save), or when the budget is 1 (the calling thread's OpenMP
//    setting is put back after);
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
// `work` must not block on other tasks (channels, go blocks), nor call RunIntraOp: it holds
// the intra-op thread, and with it every other large op, until it returns.
#ifndef RILL_PLUGINS_MATH_INTRA_OP_H_
#define RILL_PLUGINS_MATH_INTRA_OP_H_

#include <functional>
#include <type_traits>

namespace rill::math {

inline constexpr double kParallelFlops = 4e6;
inline constexpr double kParallelLibraryBytes = 512 * 1024;
inline bool IsLargeWork(double flops, double bytes) {
  return flops >= kParallelFlops || bytes >= kParallelLibraryBytes;
}

namespace detail {
// `work` is a reference to the caller's callable (std::function holds that without
// allocating: a kernel may call this for every small GEMM).
void RunIntraOp(bool large, const std::function<void()>& work);
}  // namespace detail

// Returns what `work` returns (a default-constructible value, or nothing).
template <class F> auto RunIntraOp(double flops, double bytes, F&& work) {
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

// The budget as configured ($RILL_INTRA_OP_THREADS, else OpenMP's default), which the
// plugin's own passes (parallel_for.h) use under ThreadSanitizer too: their threads and
// synchronization are the plugin's own, which TSan sees.
int ThreadBudget();

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INTRA_OP_H_
