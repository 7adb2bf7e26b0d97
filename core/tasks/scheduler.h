// core/tasks/scheduler.h — go blocks as user-space tasks, M:N over a few worker threads.
//
// Contract:
//  - RunTasks(options, main) runs `main` as the main task on up to `options.workers`
//    threads: the calling thread, and more started by the call as tasks become ready with
//    no started thread free to take them (none for a run that only ever has one ready), all
//    joined before it returns; one the system refuses fails the run (RESOURCE_EXHAUSTED).
//    It returns when the main task and every task spawned under it have ended. When the
//    main task ends, tasks still running are cancelled (parked ones wake with a CANCELLED
//    status, running ones stop at their next op) and waited for, so nothing outlives the
//    call.
//  - A task parks only through ParkCurrent(); Unpark() makes it runnable again. Park and
//    unpark follow LockSupport's permit rule: an unpark that comes before the park makes
//    the park return at once, and a park may return without its condition holding, so
//    callers re-check it under their own lock.
//  - When every live task is parked in ParkCurrent (nobody is left to wake them), the run
//    has deadlocked: each parked task wakes with a FAILED_PRECONDITION status whose
//    message lists every blocked op, and RunTasks throws that error.
//  - RunTasks throws the run's first error: the main task's, a go task's (which cancels
//    the rest) or the deadlock.
//  - A thread outside any scheduler may park too (it blocks on a condition variable); it
//    is not counted for deadlock detection.
#ifndef RILL_CORE_TASKS_SCHEDULER_H_
#define RILL_CORE_TASKS_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <new>
#include <type_traits>
#include <utility>

#include "rill/abi.h"

// Something parked that Unpark() wakes: a task, or a thread outside any scheduler.
struct RillTask {
  virtual void Unpark() = 0;

 protected:
  ~RillTask() = default;
};

namespace rill::core {

// What a task runs: a move-only void() callable. One that fits kInlineBytes (a go block's
// executor, block and scope do) is kept inside the task, which is reused, so a spawn
// allocates nothing; the allocation, freed on whichever worker ran the task, was a
// cross-thread malloc/free pair per go block. Larger callables go on the heap.
class TaskBody {
 public:
  static constexpr size_t kInlineBytes = 48;

  TaskBody() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, TaskBody>>>
  TaskBody(F&& f) {  // NOLINT: converts like std::function
    using T = std::decay_t<F>;
    if constexpr (sizeof(T) <= kInlineBytes && alignof(T) <= alignof(std::max_align_t)) {
      new (storage_) T(std::forward<F>(f));
      ops_ = &kInlineOps<T>;
    } else {
      *reinterpret_cast<T**>(storage_) = new T(std::forward<F>(f));
      ops_ = &kHeapOps<T>;
    }
  }
  TaskBody(TaskBody&& o) noexcept { Take(o); }
  TaskBody& operator=(TaskBody&& o) noexcept {
    if (this != &o) {
      Reset();
      Take(o);
    }
    return *this;
  }
  TaskBody(const TaskBody&) = delete;
  TaskBody& operator=(const TaskBody&) = delete;
  ~TaskBody() { Reset(); }

  void operator()() { ops_->invoke(storage_); }
  void Reset() {
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*move)(void* to, void* from);  // leaves `from` destroyed
    void (*destroy)(void*);
  };
  template <class T>
  static constexpr Ops kInlineOps = {[](void* s) { (*static_cast<T*>(s))(); },
                                     [](void* to, void* from) {
                                       new (to) T(std::move(*static_cast<T*>(from)));
                                       static_cast<T*>(from)->~T();
                                     },
                                     [](void* s) { static_cast<T*>(s)->~T(); }};
  template <class T>
  static constexpr Ops kHeapOps = {[](void* s) { (**static_cast<T**>(s))(); },
                                   [](void* to, void* from) { *static_cast<T**>(to) = *static_cast<T**>(from); },
                                   [](void* s) { delete *static_cast<T**>(s); }};

  void Take(TaskBody& o) {
    if (o.ops_ != nullptr) o.ops_->move(storage_, o.storage_);
    ops_ = o.ops_;
    o.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

struct SchedulerOptions {
  // Each worker keeps a word per other worker (runnext_seen): the count is bounded, as
  // Go bounds GOMAXPROCS, and a larger one is an Error naming the bound.
  static constexpr int kMaxWorkers = 1024;
  int workers = 0;                       // 0: $RILL_WORKERS if set, else one per hardware thread
  size_t task_stack_bytes = 256 * 1024;  // go tasks (virtual; touched pages only)
  size_t main_stack_bytes = 8 * 1024 * 1024;
  // A check that only the thread calling RunTasks can make, made while its run goes on:
  // Python, say, runs signal handlers (Ctrl-C) only on its main thread, and that thread is
  // the run's worker 0. When set, `poll` runs on the calling thread, on that thread's own
  // stack, outside every task and every lock of the run, about every `poll_every` until
  // the run ends: while the thread waits for work, and while it runs a task, at that
  // task's next op-boundary check (OpBoundaries), where the task steps aside to the
  // worker loop, which polls and then takes it up again. An op in progress ends first: a
  // kernel that computes or blocks for long delays the poll to its end. `poll` may cancel
  // the run through the RunCanceller given to RunTasks; it must not throw.
  std::function<void()> poll{};
  std::chrono::milliseconds poll_every{50};
};

// Cancels a RunTasks run from outside it: another thread (a caller interrupted by the
// user, a deadline). Cancel() ends the run as a failed task would: parked tasks wake with
// a status of `code`, running ones stop at their next op boundary, and RunTasks throws
// Error(message, code). A Cancel before the run starts ends it before its main task runs;
// a Cancel after it ended does nothing. Thread-safe; one canceller per run.
class RunCanceller {
 public:
  void Cancel(const std::string& message, int32_t code = RILL_CANCELLED);

  // RunTasks's side: `cancel` cancels the run now in progress (until Detach).
  void Attach(std::function<void(const std::string&, int32_t)> cancel);
  void Detach();

 private:
  std::mutex mu_;
  std::function<void(const std::string&, int32_t)> cancel_;  // guarded by mu_
  bool cancelled_ = false;                                   // guarded by mu_
  std::string message_;
  int32_t code_ = RILL_CANCELLED;
};

// `canceller`, when given, can cancel the run from another thread.
void RunTasks(const SchedulerOptions& options, std::function<void()> main, RunCanceller* canceller = nullptr);

// The running task or this thread's parker; never null.
RillTask* CurrentParkable();

// Parks the caller until unparked. `unlock(arg)` runs once the caller is off its stack
// (so a waker that takes the same lock cannot miss it). `op` and `what` describe the wait
// in deadlock reports and must stay valid while parked. Returns NULL, or the run's
// cancellation / deadlock status (owned by the caller).
RillStatus* ParkCurrent(const RillOpInfo* op, const char* what, void (*unlock)(void*), void* arg);

// Starts `body` as a new task of the caller's scheduler; `origin` (the go op) names it in
// reports. Throws Error outside a task or once the run is ending.
void SpawnTask(TaskBody body, const RillOpInfo* origin);

// Drops `held` later, in a burst with others dropped on the same worker: when a batch of
// kReleaseBatch has gathered, when the worker next finds no work at once, and at the
// latest before RunTasks returns. Outside a task, or in a run of one worker, it drops
// `held` at once. For what a go block's end lets go of, its scope: that end writes lines
// the spawning worker writes at every go op (the parent scope's reference count, each
// bound channel's holder count), so dropping the blocks of a spawn loop one by one on
// another worker passes each line back and forth once a block; in bursts, once a batch.
// Whatever `held` keeps alive (the scope's variables) lives that much longer, which
// nothing in a program can observe.
inline constexpr size_t kReleaseBatch = 32;
void ReleaseLater(std::shared_ptr<void> held);

// How many workers of the calling task's run are asleep, waiting for work or not yet
// started (what decides whether readying a task wakes or starts one); -1 outside a task.
// For tests that need a worker asleep before they ready a task.
int SleepingWorkers();

// Throws Error(CANCELLED) if the calling task's run is being cancelled.
void ThrowIfTaskCancelled();

// What the executor does between two ops of the calling task; one per block run (runs
// nest), on the task's stack. Outside a task it does nothing.
//  - Check() throws Error(CANCELLED) once the task's run is being cancelled, within
//    kCheckEveryOps ops of the later of the cancellation and the task's last hand-off (a
//    hand-off sets the count to kDeferredWakeOps; the partners of a cancelled run end at
//    their next park, so the hand-offs stop): a cancelled run's tasks stop at their next
//    park or within that many ops. The usual op boundary is one decrement of the task's
//    count instead of two flags read.
//  - While ops run, a task this task readies into its worker's runnext slot (a channel
//    hand-off) does not wake a sleeping worker at once: the partner runs on this worker as
//    soon as this task parks, which in a hand-off is a few ops away, and waking a worker
//    costs a system call here and usually migrates the partner. If this task runs
//    kDeferredWakeOps more ops without parking, Check() makes the wake-up then (unless a
//    worker already watches the runnexts; see scheduler.cc). A task whose ops end keeps
//    what it owes: its worker runs the partner when the task parks or ends (a go block
//    ends right after its ops; so does a run's main block), or a later run's ops make the
//    wake-up. So a readied task waits at most that many ops and the op in progress, or for
//    the end of host code that runs in a task between block runs, and then until this task
//    parks or, at most, until it has sat in runnext for 1 ms, when the woken worker takes
//    it (kRunnextStealAfter in scheduler.cc).
//  - In a run with a poll (SchedulerOptions::poll), a task on the calling thread steps
//    aside for it at the first Check() that finds it due.
class OpBoundaries {
 public:
  static constexpr int kDeferredWakeOps = 8;
  static constexpr int kCheckEveryOps = 16;
  // The stack a block run needs left below its start. Blocks nest by recursion (an op
  // runs a block whose op runs a block...): each run checks that this much of the task's
  // (or thread's) stack is left and otherwise throws Error(RILL_RESOURCE_EXHAUSTED) "block
  // nesting exceeds N", so deep nesting ends with that error on a go block's 256 KiB
  // stack and the main task's 8 MiB alike, never in an overflow. It is the room one
  // nesting level's frames and any kernel's own use (PLUGIN_GUIDE.md: at most 32 KiB)
  // must fit in; the check covers task stacks past the guard-page budget too.
  static constexpr size_t kStackReserve = 64 * 1024;

  // Throws as above when the stack has too little left.
  OpBoundaries();
  ~OpBoundaries();
  OpBoundaries(const OpBoundaries&) = delete;
  OpBoundaries& operator=(const OpBoundaries&) = delete;

  void Check() {
    if (--*until_due_ <= 0) Due();
  }
  // Block runs in progress on this task (or thread), this one included: 1 for a block no
  // op of this task runs.
  int depth() const { return *op_runs_; }

 private:
  // The cancellation check, the owed wake-up and the poll, when the count runs out.
  [[gnu::noinline]] void Due();

  // The task's count of ops left before Due (scheduler.cc's Task::ops_until_due, which a
  // deferred wake-up shortens), or own_until_due_ outside a task.
  int* until_due_ = &own_until_due_;
  int own_until_due_ = INT_MAX;
  const std::atomic<bool>* cancelled_ = nullptr;  // the task's run's; valid on any worker
  bool* wake_owed_ = nullptr;                     // the task's: it deferred a wake-up
  bool polled_ = false;                           // the task's run has a poll (SchedulerOptions)
  int* op_runs_ = nullptr;                        // the task's (or thread's) block runs in progress
};

}  // namespace rill::core

#endif  // RILL_CORE_TASKS_SCHEDULER_H_
