// The scheduler behind core/tasks/scheduler.h, after Go's runtime (proc.go):
//
//  - Each worker thread has a local run queue and a `runnext` slot. A task made ready by a
//    task running on worker W goes into W's runnext, so a hand-off (send to a parked
//    receiver, then park on the reply) runs the partner next on the same thread with no
//    kernel wake-up. Spawned tasks go to W's local queue. Threads outside the scheduler
//    put tasks on the global queue.
//  - An idle worker looks in its runnext, its queue, the global queue, then steals from
//    other workers' queues; it spins for a while (kSpinFor) before sleeping, stealing a
//    busy worker's runnext only once the same task has waited there kRunnextStealAfter:
//    the two tasks of a hand-off stay on one worker, where they run fastest. While such a
//    task is all there is, an idle worker sleeps and looks again every kRunnextStealAfter
//    (a watcher) instead of spinning. Making work ready wakes a sleeper only when no
//    worker is spinning or on its way up from a wake-up (Go's wakep); a hand-off into
//    runnext wakes none while a worker watches, and one made while the waker runs ops
//    defers its wake-up for a few ops (OpBoundaries in scheduler.h).
//  - Hot fields that one side writes on every hand-off and the other polls while spinning
//    live on separate cache lines (kCacheLine).
//  - Task states: RUNNING, NOTIFIED (running, an unpark is pending: the next park returns
//    at once), PARKED and DEAD (finished, kept for reuse). RUNNING -> PARKED happens on
//    the worker after the task is off its stack and after its unlock callback ran;
//    PARKED -> RUNNING only in Unpark, which then queues the task. So a task is queued at
//    most once and never runs on two threads. The state word also counts the task's
//    wake-ups and ends (kChangeOne), so two equal reads of it bracket an interval in
//    which the task stayed parked (or dead).
//  - Nothing global is written per spawn, end, park or unpark: two workers touching one
//    count or list on every spawn and end would each take a cross-core cache miss per
//    touch, serialising the workers on that line. Each worker counts the tasks it
//    spawned and ended; finished go tasks, with their stacks, go to the ending worker's
//    free list (spilling to a shared one in batches) and are reused by its next spawns;
//    every task ever made stays in `all_`, which only a new task's allocation writes.
//  - The run's end and deadlocks are found when workers go idle, as Go's checkdead does
//    when its last M stops: the last worker to go to sleep sums the counts (no task left:
//    the run is done) or scans every task's state twice (MaybeDeadlock): if all are
//    parked or dead with their state words unchanged between the passes, at the instant
//    between them nobody was awake to wake anyone.
//  - Sanitizers see fibers: ASan through start/finish_switch_fiber around each switch,
//    TSan through one fiber per task; a task switching out stays TSan's current fiber
//    until the worker has released its lock for it (TSan checks who unlocks a lock).
#include "core/tasks/scheduler.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/abi/status.h"
#include "core/runtime/profiler.h"
#include "core/errors.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/prefetch.h"
#include "core/runtime/small_objects.h"
#include "core/tasks/stack_pool.h"
#include "rill/spin_lock.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RILL_ASAN 1
#include <sanitizer/asan_interface.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define RILL_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif

namespace rill::core {
namespace {

namespace bctx = boost::context;

constexpr auto kSpinFor = std::chrono::microseconds(50);
// How long a task must have waited in a busy worker's runnext before an idle worker takes
// it. A task readied there is the running task's partner in a hand-off and runs on that
// worker as soon as the running one parks: a producer refilling a channel's buffer while
// the consumer drains it, say, a cycle of tens of microseconds. Taking it at the end of a
// 50 us spin split such pairs across two workers, where each message then crosses cores
// (a cache miss per message instead of a hit). The bound keeps a partner behind a task
// that does not park from waiting long.
constexpr auto kRunnextStealAfter = std::chrono::milliseconds(1);
constexpr size_t kCacheLine = 64;

// The clock of the calling thread's poll (SchedulerOptions::poll), in nanoseconds: the
// coarse one, read in a few nanoseconds without a system call, and fine enough for a
// poll every tens of milliseconds.
int64_t PollClockNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class Scheduler;
struct Worker;

// A task's state word: the state in the low bits, above them a count of its changes.
enum TaskState : uint64_t { kRunning = 0, kNotified = 1, kParked = 2, kDead = 3 };
constexpr uint64_t kStateMask = 3;
constexpr uint64_t kChangeOne = 4;  // counted on PARKED -> RUNNING and on -> DEAD
uint64_t StateOf(uint64_t word) { return word & kStateMask; }
uint64_t WithState(uint64_t word, TaskState s) { return (word & ~kStateMask) | s; }
// Finished go tasks move between a worker's free list and the shared one this many at a
// time: a worker that gathers twice as many gives a batch back, an empty one takes one.
constexpr size_t kFreeBatch = 32;
enum class Exit : uint8_t { kPark, kFinish };

// Where a fiber's stack is, for the sanitizers' fiber-switch annotations.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};

class Task final : public RillTask {
 public:
  Task(Scheduler* s, TaskBody body, const RillOpInfo* origin, bool is_main, StackPool* pool)
      : sched(s), body(std::move(body)), origin(origin), pool(pool), stack(pool->Allocate()), is_main(is_main) {}
  // From the small-object pages: a chain of go blocks makes a task per block on the
  // workers, and the scheduler frees them all on its caller's thread when the run ends.
  static void* operator new(size_t bytes) { return AllocateSmall(bytes); }
  static void operator delete(void* p, size_t bytes) { FreeSmall(p, bytes); }
  void Unpark() override;
  void Main();
  // Main's error path, out of line: its message temporaries would otherwise sit in Main's
  // frame, at the bottom of every task's stack.
  [[gnu::noinline, gnu::cold]] void Failed(const std::exception& e);
  void SwitchToWorker();
  // Readies a finished go task (kept with its stack) to run `b` as a new one.
  void Reuse(TaskBody b, const RillOpInfo* o) {
    body = std::move(b);
    origin = o;
    state.store(WithState(state.load(std::memory_order_relaxed), kRunning), std::memory_order_relaxed);
    exit = Exit::kFinish;
    stack_in_use = 0;  // it starts at the top again
    op_runs = 0;
    ops_until_due = OpBoundaries::kCheckEveryOps;
    wake_owed = false;
  }

  Scheduler* const sched;
  TaskBody body;
  const RillOpInfo* origin;  // the go op that started it (null: the main task)
  StackPool* const pool;
  const Stack stack;
  bctx::fiber fiber;   // the task, while it is not running
  bctx::fiber caller;  // the worker that runs it, while it runs
  Worker* worker = nullptr;
  std::atomic<uint64_t> state{kRunning};
  // Touched only by the task itself (see OpBoundaries): block runs in progress, the ops
  // left before the next cancellation check (and owed wake-up), and whether it deferred a
  // wake-up.
  int op_runs = 0;
  int ops_until_due = OpBoundaries::kCheckEveryOps;
  bool wake_owed = false;
  // Here, with the flag and the count below, in 8 bytes: a task fits 192 bytes.
  Exit exit = Exit::kFinish;
  const bool is_main;
  // How far below its top the stack was in use when the task last parked (0: not since
  // it started), for the prefetches below.
  uint32_t stack_in_use = 0;
  // The park in progress.
  void (*unlock)(void*) = nullptr;
  void* unlock_arg = nullptr;
  // What it waits for, read by deadlock reports from other threads.
  std::atomic<const RillOpInfo*> blocked_op{nullptr};
  std::atomic<const char*> blocked_what{nullptr};
#if RILL_ASAN
  void* fake_stack = nullptr;
  StackBounds caller_stack;
#endif
#if RILL_TSAN
  void* tsan_fiber = nullptr;
#endif
};

static_assert(sizeof(Task) <= kMaxSmallBytes);
#if !RILL_ASAN && !RILL_TSAN
static_assert(sizeof(Task) <= 192, "a task is one 192-byte small object (a chain of 100,000 holds 100,000)");
#endif

struct Worker {
  Scheduler* sched = nullptr;
  size_t index = 0;
  SpinLock mu;
  std::deque<Task*> local;
  std::atomic<size_t> queued{0};  // local.size(), readable without mu (spinners poll it)
  // Written on every hand-off, so not on the line spinners poll (`queued`): sharing it
  // made each hand-off a cache miss while another worker spun.
  alignas(kCacheLine) std::atomic<Task*> runnext{nullptr};
  // Tasks put into runnext so far (only this worker puts): a thief that reads the same
  // count twice knows the task there waited at least as long as between its reads.
  std::atomic<uint64_t> runnext_puts{0};
  // This worker's own: written only by it, read by the last worker to go idle.
  alignas(kCacheLine) std::atomic<uint64_t> spawned{0};
  std::atomic<uint64_t> finished{0};
  std::vector<Task*> free;                           // finished go tasks, reused by spawns on this worker
  std::vector<std::shared_ptr<void>> release_later;  // see ReleaseLater
  // As a thief: each worker's runnext_puts as this one last read it, and since when.
  struct RunnextSeen {
    uint64_t puts = ~uint64_t{0};
    std::chrono::steady_clock::time_point since;
  };
  std::vector<RunnextSeen> runnext_seen;
  std::thread thread;
  bool fresh = false;  // started and yet to find work (FindWork); its own
#if RILL_ASAN
  void* fake_stack = nullptr;
#endif
#if RILL_TSAN
  void* tsan_fiber = nullptr;
#endif
};

// Drops what ReleaseLater gathered on `w` (no destructor it runs calls ReleaseLater).
void ReleaseHeld(Worker* w) { w->release_later.clear(); }

// Prefetches: the lines a task touches first when it runs are the task itself and the
// part of its stack below the top that it returns through (what it used when it parked,
// Task::stack_in_use) or, new, writes its first frames to. In a long chain of go blocks
// these were last used a whole chain ago, so each is a miss, on the switch into the task
// and on making it. Asked for a task ahead (the next one queued, the next one to be
// reused) or when it is readied, they arrive while the worker finishes what it is running.
//
// Forced inline, as PrefetchLines must be (core/runtime/prefetch.h).
constexpr size_t kNewTaskStackBytes = 1536;  // what a go block's first run writes before it parks
constexpr size_t kFiberRecordBytes = 256;    // what making its fiber writes at the top
constexpr size_t kMaxStackBytes = 4096;

// For a queued task: the task, then its stack from where it resumes (the saved registers,
// read first) up, or from the top down for a new one.
[[gnu::always_inline]] inline void PrefetchQueued(const Task* t) {
  PrefetchLines(t, sizeof(Task));
  const size_t in_use = t->stack_in_use != 0 ? std::min<size_t>(t->stack_in_use, kMaxStackBytes) : kNewTaskStackBytes;
  PrefetchLines(t->stack.top() - in_use, in_use);
}

// For a parked task readied by a hand-off: the four stack lines it resumes on first; the
// hardware's prefetcher follows a cold stack up from there. Not the task: its unpark has
// just written it. Kept short because the task is often still cached (a ping-pong's
// partner), where each line asked for costs an instruction or two for nothing.
[[gnu::always_inline]] inline void PrefetchReadied(const Task* t) {
  if (t->stack_in_use == 0) return;  // new: its spawn has just written its stack's top
  const char* from = t->stack.top() - t->stack_in_use;
  __builtin_prefetch(from, 1, 3);  // written out: a loop here was not unrolled
  __builtin_prefetch(from + kCacheLine, 1, 3);
  __builtin_prefetch(from + 2 * kCacheLine, 1, 3);
  __builtin_prefetch(from + 3 * kCacheLine, 1, 3);
}

// For a finished task about to be reused by a spawn: the task and its fiber's record.
[[gnu::always_inline]] inline void PrefetchToSpawn(const Task* t) {
  PrefetchLines(t, sizeof(Task));
  PrefetchLines(t->stack.top() - kFiberRecordBytes, kFiberRecordBytes);
}

// Thread-locals are read through noinline functions: a task can resume on another thread,
// and a compiler may otherwise reuse a thread-local's address across the switch.
thread_local Task* tls_task = nullptr;
thread_local Worker* tls_worker = nullptr;
__attribute__((noinline)) Task* CurrentTask() { return tls_task; }
__attribute__((noinline)) Worker* CurrentWorker() { return tls_worker; }
__attribute__((noinline)) void SetCurrent(Worker* w, Task* t) {
  tls_worker = w;
  tls_task = t;
}

// A thread outside any scheduler waiting in ParkCurrent.
class ThreadParker final : public RillTask {
 public:
  void Unpark() override {
    std::lock_guard lock(mu_);
    permit_ = true;
    cv_.notify_one();
  }
  void Park(void (*unlock)(void*), void* arg) {
    std::unique_lock lock(mu_);
    unlock(arg);
    cv_.wait(lock, [&] { return permit_; });
    permit_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool permit_ = false;
};

ThreadParker& ThisThreadParker() {
  static thread_local ThreadParker parker;
  return parker;
}

class Scheduler {
 public:
  explicit Scheduler(const SchedulerOptions& o)
      : task_stacks_(StackPool::Shared(o.task_stack_bytes).Lease()),
        main_stacks_(StackPool::Shared(o.main_stack_bytes).Lease()),
        poll_(o.poll),
        poll_every_ns_(std::chrono::nanoseconds(o.poll_every).count()) {
    int n = o.workers;
    const char* from = "--workers";
    if (n <= 0) {
      const char* env = std::getenv("RILL_WORKERS");
      n = env != nullptr ? std::atoi(env) : 0;
      from = "RILL_WORKERS";
    }
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    n = std::max(n, 1);
    if (n > SchedulerOptions::kMaxWorkers) {
      throw Error(std::string(from) + " " + std::to_string(n) + " is more worker threads than the " +
                      std::to_string(SchedulerOptions::kMaxWorkers) + " a run may have (this machine has " +
                      std::to_string(std::thread::hardware_concurrency()) + " hardware threads)",
                  RILL_INVALID_ARGUMENT);
    }
    for (int i = 0; i < n; ++i) {
      workers_.push_back(std::make_unique<Worker>());
      workers_.back()->sched = this;
      workers_.back()->index = static_cast<size_t>(i);
    }
    for (auto& w : workers_) w->runnext_seen.resize(workers_.size());
  }

  ~Scheduler() {
    for (Task* t : all_) {
      t->pool->Release(t->stack);
      delete t;
    }
    task_stacks_.Unlease();
    main_stacks_.Unlease();
  }

  void Run(std::function<void()> main, RunCanceller* canceller) {
    // The calling thread is worker 0: it takes the main task first, with no thread to
    // wake, and is among those whose going idle ends the run. Workers 1.. are threads
    // started by WakeIfIdle the first time work is readied with no started worker free to
    // take it, so a run that never has two tasks ready at once (most programs without go
    // blocks) starts none. Until it starts, a worker counts as asleep: the run's end and
    // deadlocks are still seen by the last started worker to go idle.
    Spawn(std::move(main), nullptr, /*is_main=*/true);  // no worker is asleep yet: wakes none
    {
      std::lock_guard lock(idle_mu_);
      sleepers_.store(static_cast<int>(workers_.size()) - 1);
    }
    if (canceller != nullptr) {
      // Before worker 0 takes the main task: a run cancelled already ends without running it.
      canceller->Attach([this](const std::string& message, int32_t code) {
        Fail(Error(message, static_cast<RillStatusCode>(code)));
      });
    }
    // The caller may itself be a task of another run (a kernel serving a model): its
    // thread's current task and worker are put back after.
    Task* const outer_task = CurrentTask();
    Worker* const outer_worker = CurrentWorker();
    SchedulePoll();
    WorkerLoop(workers_[0].get());
    if (canceller != nullptr) canceller->Detach();
    SetCurrent(outer_worker, outer_task);
    std::vector<std::thread> started;
    {
      std::lock_guard lock(idle_mu_);  // no worker starts once stop_ is set (WakeIfIdle)
      for (auto& w : workers_) {
        if (w->thread.joinable()) started.push_back(std::move(w->thread));
      }
    }
    for (std::thread& t : started) t.join();
    if (error_) throw *error_;
  }

  void Spawn(TaskBody body, const RillOpInfo* origin, bool is_main) {
    if (cancelled_.load(std::memory_order_acquire)) {
      throw Error("cannot start a go block: " + CancelMessage(), RILL_CANCELLED);
    }
    // A go block is spawned by a task, so on one of this scheduler's workers (SpawnTask
    // takes the scheduler from the calling task); the main task, once, by Run.
    Worker* w = is_main ? nullptr : CurrentWorker();
    Task* t = is_main ? nullptr : TakeFreeTask(w);
    if (t != nullptr) {
      t->Reuse(std::move(body), origin);
    } else {
      t = new Task(this, std::move(body), origin, is_main, is_main ? &main_stacks_ : &task_stacks_);
      std::lock_guard lock(all_mu_);
      all_.push_back(t);
    }
    t->fiber = bctx::fiber(std::allocator_arg, PoolStack{t->stack}, [t](bctx::fiber&& caller) {
      t->caller = std::move(caller);
      t->Main();
      return std::move(t->caller);
    });
#if RILL_TSAN
    t->tsan_fiber = __tsan_create_fiber(0);
#endif
    // Counted before it can run (and end): see LiveTasks.
    if (w != nullptr) w->spawned.fetch_add(1, std::memory_order_seq_cst);
    Ready(t, /*next=*/false);
  }

  // A finished go task to reuse from `w`'s free list, refilled from the shared one a batch
  // at a time; nullptr if none.
  Task* TakeFreeTask(Worker* w) {
    if (w->free.empty()) {
      std::lock_guard lock(free_mu_);
      if (free_.empty()) return nullptr;
      const size_t take = std::min(free_.size(), kFreeBatch);
      w->free.insert(w->free.end(), free_.end() - static_cast<std::ptrdiff_t>(take), free_.end());
      free_.resize(free_.size() - take);
    }
    Task* t = w->free.back();
    w->free.pop_back();
    if (!w->free.empty()) PrefetchToSpawn(w->free.back());
    return t;
  }

  void PutFreeTask(Worker* w, Task* t) {
    w->free.push_back(t);
    if (w->free.size() < 2 * kFreeBatch) return;
    std::lock_guard lock(free_mu_);
    free_.insert(free_.end(), w->free.end() - kFreeBatch, w->free.end());
    w->free.resize(w->free.size() - kFreeBatch);
  }

  // Queues a runnable task; see the file comment for where it goes.
  void Ready(Task* t, bool next) {
    PrefetchReadied(t);
    Worker* w = CurrentWorker();
    if (w != nullptr && w->sched == this) {
      if (next) {
        t = w->runnext.exchange(t, std::memory_order_acq_rel);
        if (t == nullptr) {
          w->runnext_puts.store(w->runnext_puts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          Task* waker = CurrentTask();
          if (waker != nullptr && waker->op_runs > 0) {
            waker->wake_owed = true;  // made kDeferredWakeOps ops from now; see OpBoundaries
            waker->ops_until_due = OpBoundaries::kDeferredWakeOps;
          } else {
            WakeForRunnext();
          }
          return;
        }
      }
      std::lock_guard lock(w->mu);
      w->local.push_back(t);
      w->queued.store(w->local.size(), std::memory_order_release);
    } else {
      std::lock_guard lock(global_mu_);
      global_.push_back(t);
      global_queued_.store(global_.size(), std::memory_order_release);
    }
    WakeIfIdle();
  }

  // `t` ended on `w`. A go task is kept, stack and all, for a next go block; the main task
  // stays in all_ until the scheduler goes.
  void Finished(Worker* w, Task* t) {
#if RILL_TSAN
    __tsan_destroy_fiber(t->tsan_fiber);
#endif
    t->state.store(WithState(t->state.load(std::memory_order_relaxed), kDead) + kChangeOne, std::memory_order_release);
    if (!t->is_main) PutFreeTask(w, t);
    w->finished.fetch_add(1, std::memory_order_seq_cst);
  }

  // Tasks spawned and not ended; exact once no worker is running one. Ends are read
  // before spawns, and a spawn is counted before the task can end, so the sum never
  // reads below the truth: a worker that reads 0 is right.
  uint64_t LiveTasks() {
    uint64_t ended = 0, spawned = 1;  // the main task, spawned by Run before any worker starts
    for (auto& w : workers_) ended += w->finished.load(std::memory_order_seq_cst);
    for (auto& w : workers_) spawned += w->spawned.load(std::memory_order_seq_cst);
    return spawned - ended;
  }

  // Records the run's first error and cancels every task.
  void Fail(const Error& e) {
    {
      std::lock_guard lock(error_mu_);
      if (!error_) error_ = e;
    }
    Cancel(e.what(), e.code());
  }

  void Cancel(const std::string& message, int32_t code) {
    {
      std::lock_guard lock(error_mu_);
      if (cancelled_.load()) return;
      cancel_message_ = message;
      cancel_code_ = code;
      cancelled_.store(true, std::memory_order_release);
    }
    std::lock_guard lock(all_mu_);
    for (Task* t : all_) t->Unpark();  // a dead one stays dead
  }

  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  int sleeping() const { return sleepers_.load(); }
  bool single_worker() const { return workers_.size() == 1; }
  const std::atomic<bool>* cancelled_flag() const { return &cancelled_; }
  bool polled() const { return static_cast<bool>(poll_); }
  // Whether worker `w` makes the run's poll: the calling thread's, in a run that has one.
  // The poll's clock is that worker's alone: `w` is the worker of the thread that asks.
  bool Polls(const Worker* w) const { return poll_ && w == workers_[0].get(); }
  bool PollDue(const Worker* w) const { return Polls(w) && PollClockNs() >= next_poll_ns_; }
  // Makes the poll, on the calling thread's own stack with no lock held, and sets the next.
  void Poll() {
    poll_();
    SchedulePoll();
  }
  void SchedulePoll() { next_poll_ns_ = PollClockNs() + poll_every_ns_; }

  // Wakes a sleeping worker unless one is spinning or already being woken (either will
  // find the work). Without the second condition every task readied while a woken worker
  // was still on its way up (tens of microseconds here) woke it again: a spawn loop made
  // thousands of futex calls a run, each a system call and, in a VM, an exit.
  // A worker not yet started (see Run) is asleep too: it is started rather than notified
  // when no started one waits. A thread the system refuses fails the run (after idle_mu_ is
  // released: failing readies every parked task, which comes back here).
  void WakeIfIdle() {
    if (sleepers_.load() > 0 && spinners_.load() == 0 && waking_.load() == 0) {
      std::optional<Error> not_started;
      {
        std::lock_guard lock(idle_mu_);
        if (waiting_ > waking_.load(std::memory_order_relaxed)) {
          waking_.fetch_add(1);
          idle_cv_.notify_one();
        } else if (next_to_start_ < workers_.size() && !stop_.load()) {
          not_started = StartWorker();
        }
      }
      if (not_started) Fail(*not_started);
    }
  }
  // Starts worker next_to_start_, which then settles the wake-up (waking_) as a woken
  // sleeper does; the error if the system refuses the thread, after which no other is
  // tried. REQUIRES: idle_mu_ held.
  std::optional<Error> StartWorker() {
    Worker* w = workers_[next_to_start_].get();
    sleepers_.fetch_sub(1);
    waking_.fetch_add(1);
    try {
      w->thread = std::thread([this, w] {
        if (waking_.load(std::memory_order_relaxed) > 0) waking_.fetch_sub(1);
        w->fresh = true;
        WorkerLoop(w);
      });
    } catch (const std::system_error& e) {
      sleepers_.fetch_add(1);
      waking_.fetch_sub(1);
      next_to_start_ = workers_.size();
      return Error("cannot start worker thread " + std::to_string(w->index + 1) + " of " +
                       std::to_string(workers_.size()) + ": " + e.what(),
                   RILL_RESOURCE_EXHAUSTED);
    }
    ++next_to_start_;
    return std::nullopt;
  }
  // After a task was put into a runnext: no wake-up while a worker watches the runnexts
  // (FindWork), which looks again within kRunnextStealAfter, the earliest it may take it.
  void WakeForRunnext() {
    if (watchers_.load() == 0) WakeIfIdle();
  }
  std::string CancelMessage() {
    std::lock_guard lock(error_mu_);
    return cancel_message_;
  }
  RillStatus* CancelStatus() {
    std::lock_guard lock(error_mu_);
    return new RillStatus{cancel_code_, cancel_message_};
  }

 private:
  struct PoolStack {
    Stack s;
    bctx::stack_context allocate() {
      bctx::stack_context sc;
      sc.size = s.size;
      sc.sp = s.top();
      return sc;
    }
    void deallocate(bctx::stack_context&) noexcept {}  // the pool takes it back in Finished
  };

  Task* PopLocal(Worker* w) {
    if (w->runnext.load(std::memory_order_relaxed) != nullptr) {
      if (Task* t = w->runnext.exchange(nullptr, std::memory_order_acq_rel)) return t;
    }
    if (w->queued.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(w->mu);
    if (w->local.empty()) return nullptr;
    Task* t = w->local.front();
    w->local.pop_front();
    w->queued.store(w->local.size(), std::memory_order_release);
    if (!w->local.empty()) PrefetchQueued(w->local.front());
    return t;
  }

  Task* PopGlobal() {
    if (global_queued_.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(global_mu_);
    if (global_.empty()) return nullptr;
    Task* t = global_.front();
    global_.pop_front();
    global_queued_.store(global_.size(), std::memory_order_release);
    return t;
  }

  // Whether the task in `v`'s runnext has sat there kRunnextStealAfter, as far as thief
  // `w` has watched it (it starts watching at its first look).
  static bool RunnextWaitedLong(Worker* w, Worker* v) {
    Worker::RunnextSeen& seen = w->runnext_seen[v->index];
    const uint64_t puts = v->runnext_puts.load(std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    if (seen.puts != puts) {
      seen = {puts, now};
      return false;
    }
    return now - seen.since >= kRunnextStealAfter;
  }

  // Takes half of another worker's queue (the rest of it goes to w's own queue).
  Task* Steal(Worker* w, bool runnext_too) {
    const size_t n = workers_.size();
    const size_t start = w->index;
    for (size_t k = 1; k < n; ++k) {
      Worker* v = workers_[(start + k) % n].get();
      std::vector<Task*> got;
      if (v->queued.load(std::memory_order_acquire) > 0) {
        std::lock_guard lock(v->mu);
        const size_t take = (v->local.size() + 1) / 2;
        for (size_t i = 0; i < take; ++i) {
          got.push_back(v->local.back());
          v->local.pop_back();
        }
        v->queued.store(v->local.size(), std::memory_order_release);
      }
      if (got.empty() && runnext_too && v->runnext.load(std::memory_order_relaxed) != nullptr &&
          RunnextWaitedLong(w, v)) {
        if (Task* t = v->runnext.exchange(nullptr, std::memory_order_acq_rel)) return t;
      }
      if (got.empty()) continue;
      if (got.size() > 1) {
        std::lock_guard lock(w->mu);
        w->local.insert(w->local.end(), got.begin() + 1, got.end());
        w->queued.store(w->local.size(), std::memory_order_release);
      }
      return got.front();
    }
    return nullptr;
  }

  Task* TryFind(Worker* w, bool runnext_too) {
    if (Task* t = PopLocal(w)) return t;
    if (Task* t = PopGlobal()) return t;
    return Steal(w, runnext_too);
  }

  // Work any idle worker may take at once.
  bool AnyQueued() {
    if (global_queued_.load() > 0) return true;
    for (auto& w : workers_) {
      if (w->queued.load() > 0) return true;
    }
    return false;
  }
  bool AnyRunnext() {
    for (auto& w : workers_) {
      if (w->runnext.load() != nullptr) return true;
    }
    return false;
  }

  Task* FindWork(Worker* w) {
    bool watched = false;  // back from watching a runnext task (see below)
    for (;;) {
      if (PollDue(w)) Poll();
      if (Task* t = TryFind(w, watched)) {
        // A worker just started that finds work lets another start when more is queued,
        // so a burst of readied tasks gets every worker it can use (as Go's wakep once a
        // spinning M finds work): starting one per readied task alone would stop short when
        // the burst is readied faster than threads come up.
        if (std::exchange(w->fresh, false) && AnyQueued()) WakeIfIdle();
        return t;
      }
      ReleaseHeld(w);  // no work at once: a good time for the burst
      // Spinning catches work that comes soon; once the run is cancelled (the main task
      // ended, or a task failed) what is left only winds down, and the run's end is seen
      // by going to sleep: so a run's last moments cost no spin.
      if (!watched && !cancelled_.load(std::memory_order_relaxed)) {
        spinners_.fetch_add(1);
        const auto until = std::chrono::steady_clock::now() + kSpinFor;
        Task* found = nullptr;
        for (unsigned round = 1; found == nullptr && !stop_.load(std::memory_order_relaxed); ++round) {
          const bool last = round % 64 == 0 && std::chrono::steady_clock::now() >= until;
          found = TryFind(w, last);
          if (last) break;
          for (int i = 0; i < 16; ++i) CpuRelax();
        }
        spinners_.fetch_sub(1);
        if (found != nullptr) {
          w->fresh = false;
          WakeIfIdle();  // there may be more: let a sleeper look
          return found;
        }
      }
      watched = false;
      std::unique_lock lock(idle_mu_);
      if (stop_.load()) return nullptr;
      if (AnyQueued()) continue;
      if (sleepers_.fetch_add(1) + 1 == static_cast<int>(workers_.size())) {
        // The last worker awake: nothing runs, so the run is over or every task is parked.
        lock.unlock();
        const bool done = LiveTasks() == 0;
        if (!done) MaybeDeadlock();
        lock.lock();
        if (done) {  // every worker leaves, worker 0 (the caller of Run) with them
          stop_.store(true);
          idle_cv_.notify_all();
        }
      }
      if (!stop_.load() && !AnyQueued()) {
        if (AnyRunnext()) {
          // A busy worker's runnext task, not to be taken before it waited
          // kRunnextStealAfter: look again then, rather than spin beside its worker (or on
          // its CPU) meanwhile. Hand-offs do not wake a watcher (WakeForRunnext).
          watchers_.fetch_add(1);
          Wait(lock, kRunnextStealAfter);
          watchers_.fetch_sub(1);
          watched = true;
        } else {
          Wait(lock, UntilPoll(w));
        }
      }
      sleepers_.fetch_sub(1);
      if (stop_.load()) return nullptr;
    }
  }

  // Sleeps on idle_cv_ (idle_mu_ held by `lock`) until notified, or for `at_most`. A
  // return, for whatever reason, settles one pending wake-up (waking_): the worker looks
  // for work next, which is what the notifier wanted of it. Settling one meant for
  // another sleeper only lets WakeIfIdle wake again early; never too late.
  void Wait(std::unique_lock<std::mutex>& lock, std::optional<std::chrono::milliseconds> at_most) {
    ++waiting_;
    if (at_most) {
      idle_cv_.wait_for(lock, *at_most);
    } else {
      idle_cv_.wait(lock);
    }
    --waiting_;
    if (waking_.load(std::memory_order_relaxed) > 0) waking_.fetch_sub(1);
  }

  // How long worker `w` may sleep before its poll is due; nullopt: it has none.
  std::optional<std::chrono::milliseconds> UntilPoll(const Worker* w) const {
    if (!Polls(w)) return std::nullopt;
    const int64_t ns = std::max<int64_t>(next_poll_ns_ - PollClockNs(), 0);
    return std::chrono::milliseconds(ns / 1000000 + 1);
  }

  void WorkerLoop(Worker* w) {
#if RILL_TSAN
    w->tsan_fiber = __tsan_get_current_fiber();
#endif
    if (Profiler::Active()) Profiler::NameLane("worker " + std::to_string(w->index));
    while (Task* t = FindWork(w)) RunTask(w, t);
    ReleaseHeld(w);
  }

  void RunTask(Worker* w, Task* t) {
    t->worker = w;
    SetCurrent(w, t);
#if RILL_ASAN
    __sanitizer_start_switch_fiber(&w->fake_stack, t->stack.base, t->stack.size);
#endif
#if RILL_TSAN
    __tsan_switch_to_fiber(t->tsan_fiber, 0);
#endif
    t->fiber = std::move(t->fiber).resume();
#if RILL_ASAN
    __sanitizer_finish_switch_fiber(w->fake_stack, nullptr, nullptr);
#endif
    // Park: the task is off its stack; let wakers in. (TSan still sees the task's fiber
    // here, so the lock it took is released by "its" thread; then the worker's.)
    if (t->exit == Exit::kPark) t->unlock(t->unlock_arg);
#if RILL_TSAN
    __tsan_switch_to_fiber(w->tsan_fiber, 0);
#endif
    SetCurrent(w, nullptr);
    if (t->exit == Exit::kFinish) {
      Finished(w, t);
      return;
    }
    // Then commit the park unless an unpark came (only Unpark changes the word meanwhile,
    // and only RUNNING -> NOTIFIED while the task is not parked).
    uint64_t word = t->state.load(std::memory_order_acquire);
    if (StateOf(word) == kRunning &&
        t->state.compare_exchange_strong(word, WithState(word, kParked), std::memory_order_acq_rel)) {
      return;
    }
    t->state.store(WithState(word, kRunning), std::memory_order_release);  // consume the pending unpark
    Ready(t, /*next=*/true);
  }

  // Declares a deadlock if every task is parked at once (see the file comment). A task
  // seen parked could be woken (and another parked) while the tasks are read one by one,
  // so they are read twice: unchanged words mean each stayed parked or dead from its
  // first read to its second, and so all were at once between the passes.
  void MaybeDeadlock() {
    std::string report;
    size_t n = 0;
    {
      std::lock_guard lock(all_mu_);
      std::vector<uint64_t> seen;
      seen.reserve(all_.size());
      for (Task* t : all_) {
        const uint64_t word = t->state.load(std::memory_order_acquire);
        if (StateOf(word) == kRunning || StateOf(word) == kNotified) return;  // someone is awake
        seen.push_back(word);
      }
      for (size_t i = 0; i < all_.size(); ++i) {
        if (all_[i]->state.load(std::memory_order_acquire) != seen[i]) return;
      }
      // Every task is parked or dead and none can wake another: their waits are stable.
      for (size_t i = 0; i < all_.size(); ++i) {
        if (StateOf(seen[i]) == kDead) continue;
        Task* t = all_[i];
        ++n;
        if (n > 20) continue;
        report += n == 1 ? "" : "; ";
        report += t->is_main ? "main: " : t->origin ? "go block (started by " + t->origin->Where() + "): " : "task: ";
        if (const RillOpInfo* op = t->blocked_op.load(std::memory_order_acquire)) report += op->Where() + " ";
        const char* what = t->blocked_what.load(std::memory_order_acquire);
        report += what != nullptr ? what : "parked";
      }
    }
    if (n == 0 || cancelled()) return;
    if (n > 20) report += "; and " + std::to_string(n - 20) + " more";
    Fail(Error("deadlock: all " + std::to_string(n) + " tasks are blocked: " + report, RILL_FAILED_PRECONDITION));
  }

  StackPool& task_stacks_;
  StackPool& main_stacks_;
  std::vector<std::unique_ptr<Worker>> workers_;
  SpinLock global_mu_;
  std::deque<Task*> global_;
  // Polled by spinning workers on every round: kept apart from what a busy worker
  // writes on every hand-off, so spinning costs the busy worker nothing.
  alignas(kCacheLine) std::atomic<size_t> global_queued_{0};
  std::atomic<int> sleepers_{0}, spinners_{0};
  std::atomic<int> watchers_{0};  // sleepers that look at the runnexts again soon
  // Written under idle_mu_: workers inside idle_cv_'s wait, and how many of them were
  // notified and have not yet returned from it (read without the lock by WakeIfIdle).
  int waiting_ = 0;
  std::atomic<int> waking_{0};
  size_t next_to_start_ = 1;  // under idle_mu_: the next worker thread to start (see Run)
  std::atomic<bool> stop_{false};
  alignas(kCacheLine) std::mutex idle_mu_;
  std::condition_variable idle_cv_;
  SpinLock all_mu_;
  std::vector<Task*> all_;  // every task this scheduler made, live or dead
  SpinLock free_mu_;
  std::vector<Task*> free_;  // finished go tasks beyond what workers keep (no malloc, warm stack)
  std::mutex error_mu_;
  std::optional<Error> error_;
  std::atomic<bool> cancelled_{false};
  std::string cancel_message_;
  int32_t cancel_code_ = RILL_CANCELLED;
  const std::function<void()> poll_;  // SchedulerOptions::poll, run by worker 0 only
  const int64_t poll_every_ns_;
  int64_t next_poll_ns_ = 0;  // worker 0's: when its poll is next due (PollClockNs)
};

void Task::Unpark() {
  uint64_t word = state.load(std::memory_order_acquire);
  for (;;) {
    switch (StateOf(word)) {
      case kNotified:
      case kDead: return;
      case kRunning:
        if (state.compare_exchange_weak(word, WithState(word, kNotified), std::memory_order_acq_rel)) return;
        break;
      default:  // kParked
        if (state.compare_exchange_weak(word, WithState(word, kRunning) + kChangeOne, std::memory_order_acq_rel)) {
          sched->Ready(this, /*next=*/true);
          return;
        }
    }
  }
}

void Task::SwitchToWorker() {
  if (exit == Exit::kPark) {
    // This frame, and the registers the switch saves below it: two lines of slack.
    const char* frame = static_cast<const char*>(__builtin_frame_address(0));
    stack_in_use = static_cast<uint32_t>(stack.top() - frame) + 2 * kCacheLine;
  }
#if RILL_ASAN
  __sanitizer_start_switch_fiber(exit == Exit::kFinish ? nullptr : &fake_stack, caller_stack.bottom, caller_stack.size);
#endif
  caller = std::move(caller).resume();
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &caller_stack.bottom, &caller_stack.size);
#endif
}

void Task::Failed(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    sched->Fail(Error(std::string("out of memory in a task (") + e.what() + ")", RILL_RESOURCE_EXHAUSTED));
  } else if (error == nullptr) {
    sched->Fail(Error(std::string("unexpected exception in a task: ") + e.what(), RILL_INTERNAL));
  } else if (is_main || !sched->cancelled()) {
    sched->Fail(is_main || origin == nullptr
                    ? *error
                    : Error("go block started by " + origin->Where() + " failed: " + e.what(), error->code()));
  }
}

void Task::Main() {
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &caller_stack.bottom, &caller_stack.size);
#endif
  if (!sched->cancelled()) {
    try {
      body();
    } catch (const std::exception& e) {
      Failed(e);
    } catch (...) {  // nothing may leave a task's stack: that ends the process
      Failed(Error("unexpected exception of unknown type in a task", RILL_INTERNAL));
    }
  }
  body.Reset();  // drops captured scopes here, on the task's own stack
  if (is_main) sched->Cancel("the main block ended", RILL_CANCELLED);
  exit = Exit::kFinish;
#if RILL_ASAN
  __sanitizer_start_switch_fiber(nullptr, caller_stack.bottom, caller_stack.size);
#endif
}

}  // namespace

void RunTasks(const SchedulerOptions& options, std::function<void()> main, RunCanceller* canceller) {
  Scheduler s(options);
  s.Run(std::move(main), canceller);
}

void RunCanceller::Cancel(const std::string& message, int32_t code) {
  std::lock_guard lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  message_ = message;
  code_ = code;
  if (cancel_) cancel_(message_, code_);
}

void RunCanceller::Attach(std::function<void(const std::string&, int32_t)> cancel) {
  std::lock_guard lock(mu_);
  cancel_ = std::move(cancel);
  if (cancelled_) cancel_(message_, code_);
}

void RunCanceller::Detach() {
  std::lock_guard lock(mu_);
  cancel_ = nullptr;
}

RillTask* CurrentParkable() {
  if (Task* t = CurrentTask()) return t;
  return &ThisThreadParker();
}

RillStatus* ParkCurrent(const RillOpInfo* op, const char* what, void (*unlock)(void*), void* arg) {
  Task* t = CurrentTask();
  if (t == nullptr) {
    ThisThreadParker().Park(unlock, arg);
    return nullptr;
  }
  const uint64_t word = t->state.load(std::memory_order_acquire);
  if (StateOf(word) == kNotified) {
    // An unpark came first: do not sleep. (Unpark leaves a NOTIFIED word alone.)
    t->state.store(WithState(word, kRunning), std::memory_order_release);
    unlock(arg);
  } else {
    t->blocked_op.store(op, std::memory_order_release);
    t->blocked_what.store(what, std::memory_order_release);
    t->unlock = unlock;
    t->unlock_arg = arg;
    t->wake_owed = false;  // this worker runs the task it readied next: nothing to wake
    t->exit = Exit::kPark;
    const bool profiled = Profiler::Active();
    if (profiled) Profiler::RecordWait(true, t, op, what);
    t->SwitchToWorker();
    if (profiled) Profiler::RecordWait(false, t, op, what);
    t->blocked_op.store(nullptr, std::memory_order_relaxed);
    t->blocked_what.store(nullptr, std::memory_order_relaxed);
  }
  return t->sched->cancelled() ? t->sched->CancelStatus() : nullptr;
}

void SpawnTask(TaskBody body, const RillOpInfo* origin) {
  Task* t = CurrentTask();
  if (t == nullptr) {
    throw Error(
        "go needs the task scheduler: run the program with `rill run` (or inside "
        "rill::core::RunTasks)",
        RILL_FAILED_PRECONDITION);
  }
  if (Profiler::Active()) Profiler::RecordSpawn(origin);
  t->sched->Spawn(std::move(body), origin, /*is_main=*/false);
}

namespace {

// Block runs in progress on a thread outside any task.
thread_local int tls_op_runs = 0;

// The lowest address of the calling thread's own stack (not a task's).
const char* ThreadStackLow() {
  static thread_local const char* low = [] {
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    return static_cast<const char*>(addr);
  }();
  return low;
}

// `stack_bytes`: the task's stack size; 0 on a thread's own stack.
[[noreturn, gnu::noinline, gnu::cold]] void ThrowNestingTooDeep(int depth, size_t stack_bytes) {
  throw Error("block nesting exceeds " + std::to_string(depth) + ": less than " +
                  std::to_string(OpBoundaries::kStackReserve / 1024) + " KiB of the " +
                  (stack_bytes > 0 ? "task's " + std::to_string(stack_bytes / 1024) + " KiB stack"
                                   : std::string("thread's stack")) +
                  " is left for a block nested deeper",
              RILL_RESOURCE_EXHAUSTED);
}

// In a run with a poll: when it is due on this task's worker, lets the worker make it.
void StepAsideIfPollDue() {
  Task* t = CurrentTask();
  if (t == nullptr || !t->sched->PollDue(t->worker)) return;
  // A park that readies itself once off its stack: the worker polls (FindWork) and runs
  // the task next, from its runnext slot.
  std::unique_ptr<RillStatus> cancelled(ParkCurrent(
      nullptr, "stepping aside for the calling thread's poll", [](void* task) { static_cast<Task*>(task)->Unpark(); },
      t));
  if (cancelled != nullptr) ThrowIfTaskCancelled();
}

}  // namespace

OpBoundaries::OpBoundaries() {
  const char* low;  // the lowest address of the stack this runs on; null: unknown
  size_t stack_bytes = 0;
  if (Task* t = CurrentTask()) {
    low = static_cast<const char*>(t->stack.base);
    stack_bytes = t->stack.size;
    until_due_ = &t->ops_until_due;
    cancelled_ = t->sched->cancelled_flag();
    wake_owed_ = &t->wake_owed;
    polled_ = t->sched->polled();
    op_runs_ = &t->op_runs;
  } else {
    low = ThreadStackLow();
    op_runs_ = &tls_op_runs;
  }
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  if (low != nullptr && static_cast<size_t>(here - low) < kStackReserve) ThrowNestingTooDeep(*op_runs_, stack_bytes);
  ++*op_runs_;
}

OpBoundaries::~OpBoundaries() { --*op_runs_; }

void OpBoundaries::Due() {
  if (cancelled_ == nullptr) {  // outside a task
    own_until_due_ = INT_MAX;
    return;
  }
  *until_due_ = kCheckEveryOps;
  if (*wake_owed_) {
    *wake_owed_ = false;
    CurrentTask()->sched->WakeForRunnext();
  }
  if (cancelled_->load(std::memory_order_acquire)) ThrowIfTaskCancelled();
  if (polled_) StepAsideIfPollDue();
}

void ReleaseLater(std::shared_ptr<void> held) {
  Task* t = CurrentTask();
  // With one worker no line passes between workers: holding on would only let what is
  // held go cold (a one-worker spawn loop read 1.07-1.20 of its time so).
  if (t == nullptr || t->sched->single_worker()) return;  // `held` goes now
  Worker* w = t->worker;  // the one running it (RunTask sets it), as it does not park here
  w->release_later.push_back(std::move(held));
  if (w->release_later.size() >= kReleaseBatch) ReleaseHeld(w);
}

int SleepingWorkers() {
  const Task* t = CurrentTask();
  return t != nullptr ? t->sched->sleeping() : -1;
}

void ThrowIfTaskCancelled() {
  Task* t = CurrentTask();
  if (t != nullptr && t->sched->cancelled()) {
    throw Error(t->sched->CancelMessage(), RILL_CANCELLED);
  }
}

}  // namespace rill::core
