// The scheduler behind core/tasks/scheduler.h, after Go's runtime (proc.go):
//
//  - Each worker thread has a local run queue and a `runnext` slot. A task made ready by a
//    task running on worker W goes into W's runnext, so a hand-off (send to a parked
//    receiver, then park on the reply) runs the partner next on the same thread with no
//    kernel wake-up. Spawned tasks go to W's local queue. Threads outside the scheduler
//    put tasks on the global queue.
//  - An idle worker looks in its runnext, its queue, the global queue, then steals from
//    other workers' queues; it spins for a while (kSpinFor) before sleeping, stealing a
//    busy worker's runnext only at the end of the spin. Making work ready wakes a sleeper
//    only when no worker is spinning, and a hand-off into runnext made while the waker
//    runs ops defers that wake-up for a few ops (OpBoundaries in scheduler.h).
//  - Hot fields that one side writes on every hand-off and the other polls while spinning
//    live on separate cache lines (kCacheLine).
//  - Task states: RUNNING, NOTIFIED (running, an unpark is pending: the next park returns
//    at once) and PARKED. RUNNING -> PARKED happens on the worker after the task is off
//    its stack and after its unlock callback ran; PARKED -> RUNNING only in Unpark, which
//    then queues the task. So a task is queued at most once and never runs on two threads.
//  - counts_ packs (live tasks << 32 | parked tasks) in one word, read after each park
//    commits and each task ends. A parking task is counted just before it turns PARKED
//    and an unpark uncounts just after, so the count may run ahead of the truth for an
//    instant: parked == live > 0 only triggers a scan of every task's state
//    (MaybeDeadlock), which declares a deadlock only if no unpark happened during it.
//  - Finished go tasks are kept, with their stacks, and reused by the next spawn.
//  - Sanitizers see fibers: ASan through start/finish_switch_fiber around each switch,
//    TSan through one fiber per task; a task switching out stays TSan's current fiber
//    until the worker has released its lock for it (TSan checks who unlocks a lock).
#include "core/tasks/scheduler.h"

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/status.h"
#include "core/errors.h"
#include "core/runtime/op_instance.h"
#include "core/tasks/stack_pool.h"
#include "rill/sdk.hpp"

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
constexpr size_t kCacheLine = 64;
constexpr uint64_t kLiveOne = uint64_t{1} << 32;
uint32_t LiveOf(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
uint32_t ParkedOf(uint64_t c) { return static_cast<uint32_t>(c); }

class Scheduler;
struct Worker;

enum TaskState : int { kRunning = 0, kNotified = 1, kParked = 2 };
enum class Exit { kPark, kFinish };

// Where a fiber's stack is, for the sanitizers' fiber-switch annotations.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};

class Task final : public RillTask {
 public:
  Task(Scheduler* s, std::function<void()> body, const RillOpInfo* origin, bool is_main, StackPool* pool)
      : sched(s), body(std::move(body)), origin(origin), is_main(is_main), pool(pool), stack(pool->Allocate()) {}
  void Unpark() override;
  void Main();
  void SwitchToWorker();
  // Readies a finished go task (kept with its stack) to run `b` as a new one.
  void Reuse(std::function<void()> b, const RillOpInfo* o) {
    body = std::move(b);
    origin = o;
    state.store(kRunning, std::memory_order_relaxed);
    exit = Exit::kFinish;
    op_runs = owed_wake_ops = 0;
    prev = next = nullptr;
  }

  Scheduler* const sched;
  std::function<void()> body;
  const RillOpInfo* origin;  // the go op that started it (null: the main task)
  const bool is_main;
  StackPool* const pool;
  const Stack stack;
  bctx::fiber fiber;   // the task, while it is not running
  bctx::fiber caller;  // the worker that runs it, while it runs
  Worker* worker = nullptr;
  std::atomic<int> state{kRunning};
  Exit exit = Exit::kFinish;
  // Touched only by the task itself (see OpBoundaries): block runs in progress, and the
  // ops left before a wake-up it deferred is made (0: none owed).
  int op_runs = 0;
  int owed_wake_ops = 0;
  // The park in progress.
  void (*unlock)(void*) = nullptr;
  void* unlock_arg = nullptr;
  // What it waits for, read by deadlock reports from other threads.
  std::atomic<const RillOpInfo*> blocked_op{nullptr};
  std::atomic<const char*> blocked_what{nullptr};
  // Intrusive list of the scheduler's live tasks (tasks_mu_).
  Task* prev = nullptr;
  Task* next = nullptr;
#if RILL_ASAN
  void* fake_stack = nullptr;
  StackBounds caller_stack;
#endif
#if RILL_TSAN
  void* tsan_fiber = nullptr;
#endif
};

struct Worker {
  Scheduler* sched = nullptr;
  size_t index = 0;
  SpinLock mu;
  std::deque<Task*> local;
  std::atomic<size_t> queued{0};  // local.size(), readable without mu (spinners poll it)
  // Written on every hand-off, so not on the line spinners poll (`queued`): sharing it
  // made each hand-off a cache miss while another worker spun.
  alignas(kCacheLine) std::atomic<Task*> runnext{nullptr};
  std::thread thread;
#if RILL_ASAN
  void* fake_stack = nullptr;
#endif
#if RILL_TSAN
  void* tsan_fiber = nullptr;
#endif
};

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
        main_stacks_(StackPool::Shared(o.main_stack_bytes).Lease()) {
    int n = o.workers;
    if (n <= 0) {
      const char* env = std::getenv("RILL_WORKERS");
      n = env != nullptr ? std::atoi(env) : 0;
    }
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    n = std::max(n, 1);
    for (int i = 0; i < n; ++i) {
      workers_.push_back(std::make_unique<Worker>());
      workers_.back()->sched = this;
      workers_.back()->index = static_cast<size_t>(i);
    }
  }

  ~Scheduler() {
    for (Task* t : free_tasks_) {
      t->pool->Release(t->stack);
      delete t;
    }
    task_stacks_.Unlease();
    main_stacks_.Unlease();
  }

  void Run(std::function<void()> main) {
    Spawn(std::move(main), nullptr, /*is_main=*/true);
    for (auto& w : workers_) w->thread = std::thread([this, w = w.get()] { WorkerLoop(w); });
    {
      std::unique_lock lock(done_mu_);
      done_cv_.wait(lock, [&] { return done_; });
    }
    {
      std::lock_guard lock(idle_mu_);
      stop_.store(true);
      idle_cv_.notify_all();
    }
    for (auto& w : workers_) w->thread.join();
    if (error_) throw *error_;
  }

  void Spawn(std::function<void()> body, const RillOpInfo* origin, bool is_main) {
    if (cancelled_.load(std::memory_order_acquire)) {
      throw Error("cannot start a go block: " + CancelMessage(), RILL_CANCELLED);
    }
    Task* t = is_main ? nullptr : TakeFreeTask();
    if (t != nullptr) {
      t->Reuse(std::move(body), origin);
    } else {
      t = new Task(this, std::move(body), origin, is_main, is_main ? &main_stacks_ : &task_stacks_);
    }
    t->fiber = bctx::fiber(std::allocator_arg, PoolStack{t->stack}, [t](bctx::fiber&& caller) {
      t->caller = std::move(caller);
      t->Main();
      return std::move(t->caller);
    });
#if RILL_TSAN
    t->tsan_fiber = __tsan_create_fiber(0);
#endif
    {
      std::lock_guard lock(tasks_mu_);
      t->next = tasks_;
      if (tasks_ != nullptr) tasks_->prev = t;
      tasks_ = t;
    }
    counts_.fetch_add(kLiveOne);
    Ready(t, /*next=*/false);
  }

  Task* TakeFreeTask() {
    std::lock_guard lock(free_mu_);
    if (free_tasks_.empty()) return nullptr;
    Task* t = free_tasks_.back();
    free_tasks_.pop_back();
    return t;
  }

  // Queues a runnable task; see the file comment for where it goes.
  void Ready(Task* t, bool next) {
    Worker* w = CurrentWorker();
    if (w != nullptr && w->sched == this) {
      if (next) {
        t = w->runnext.exchange(t, std::memory_order_acq_rel);
        if (t == nullptr) {
          Task* waker = CurrentTask();
          if (waker != nullptr && waker->op_runs > 0) {
            waker->owed_wake_ops = OpBoundaries::kDeferredWakeOps;  // see OpBoundaries
          } else {
            WakeIfIdle();
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

  void OnUnparked() {
    unparks_.fetch_add(1, std::memory_order_acq_rel);
    counts_.fetch_sub(1, std::memory_order_acq_rel);
  }

  void Finished(Task* t) {
    {
      std::lock_guard lock(tasks_mu_);
      if (t->prev != nullptr) t->prev->next = t->next;
      else tasks_ = t->next;
      if (t->next != nullptr) t->next->prev = t->prev;
    }
#if RILL_TSAN
    __tsan_destroy_fiber(t->tsan_fiber);
#endif
    if (t->is_main) {
      t->pool->Release(t->stack);
      delete t;
    } else {
      std::lock_guard lock(free_mu_);  // kept, stack and all, for the next go block
      free_tasks_.push_back(t);
    }
    const uint64_t c = counts_.fetch_sub(kLiveOne, std::memory_order_acq_rel) - kLiveOne;
    if (LiveOf(c) == 0) {
      std::lock_guard lock(done_mu_);
      done_ = true;
      done_cv_.notify_all();
    } else if (ParkedOf(c) == LiveOf(c)) {
      MaybeDeadlock();
    }
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
    std::lock_guard lock(tasks_mu_);
    for (Task* t = tasks_; t != nullptr; t = t->next) t->Unpark();
  }

  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  const std::atomic<bool>* cancelled_flag() const { return &cancelled_; }
  // Wakes a sleeping worker unless one is spinning (it will find the work).
  void WakeIfIdle() {
    if (sleepers_.load() > 0 && spinners_.load() == 0) {
      std::lock_guard lock(idle_mu_);
      idle_cv_.notify_one();
    }
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
      sc.sp = static_cast<char*>(s.base) + s.size;
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
      if (got.empty() && runnext_too && v->runnext.load(std::memory_order_relaxed) != nullptr) {
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

  bool AnyWork() {
    if (global_queued_.load() > 0) return true;
    for (auto& w : workers_) {
      if (w->runnext.load() != nullptr || w->queued.load() > 0) return true;
    }
    return false;
  }

  Task* FindWork(Worker* w) {
    for (;;) {
      if (Task* t = TryFind(w, false)) return t;
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
        WakeIfIdle();  // there may be more: let a sleeper look
        return found;
      }
      std::unique_lock lock(idle_mu_);
      if (stop_.load()) return nullptr;
      sleepers_.fetch_add(1);
      if (!AnyWork()) idle_cv_.wait(lock);
      sleepers_.fetch_sub(1);
      if (stop_.load()) return nullptr;
    }
  }

  void WorkerLoop(Worker* w) {
#if RILL_TSAN
    w->tsan_fiber = __tsan_get_current_fiber();
#endif
    while (Task* t = FindWork(w)) RunTask(w, t);
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
      Finished(t);
      return;
    }
    // Then commit the park unless an unpark came. Counted before the state changes, so an
    // Unpark (which uncounts after it) never takes the count below zero; checked after,
    // so the last task to park sees it.
    counts_.fetch_add(1, std::memory_order_acq_rel);
    int expected = kRunning;
    if (t->state.compare_exchange_strong(expected, kParked, std::memory_order_acq_rel)) {
      const uint64_t c = counts_.load(std::memory_order_acquire);
      if (ParkedOf(c) == LiveOf(c)) MaybeDeadlock();
    } else {
      counts_.fetch_sub(1, std::memory_order_acq_rel);
      t->state.store(kRunning, std::memory_order_release);  // consume the pending unpark
      Ready(t, /*next=*/true);
    }
  }

  // Declares a deadlock if every task is parked at once. The scan reads the tasks one by
  // one; a task seen parked could have been woken (and another parked) before the scan
  // ends, so the scan counts only if no unpark happened meanwhile (unparks_ unchanged).
  void MaybeDeadlock() {
    std::string report;
    size_t n = 0;
    {
      std::lock_guard lock(tasks_mu_);
      const uint64_t unparks = unparks_.load(std::memory_order_acquire);
      for (Task* t = tasks_; t != nullptr; t = t->next) {
        if (t->state.load(std::memory_order_acquire) != kParked) return;  // someone is awake
      }
      if (unparks_.load(std::memory_order_acquire) != unparks) return;
      // Every task is parked and none can wake another: their waits are stable to read.
      for (Task* t = tasks_; t != nullptr; t = t->next) {
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
    Fail(Error("deadlock: all " + std::to_string(n) + " tasks are blocked: " + report,
               RILL_FAILED_PRECONDITION));
  }

  StackPool& task_stacks_;
  StackPool& main_stacks_;
  std::vector<std::unique_ptr<Worker>> workers_;
  SpinLock global_mu_;
  std::deque<Task*> global_;
  // Polled by spinning workers on every round: kept apart from what a busy worker
  // writes on every hand-off (counts_, unparks_), so spinning costs the busy worker nothing.
  alignas(kCacheLine) std::atomic<size_t> global_queued_{0};
  std::atomic<int> sleepers_{0}, spinners_{0};
  std::atomic<bool> stop_{false};
  alignas(kCacheLine) std::atomic<uint64_t> counts_{0};
  std::atomic<uint64_t> unparks_{0};  // PARKED -> RUNNING transitions, for MaybeDeadlock
  alignas(kCacheLine) std::mutex idle_mu_;
  std::condition_variable idle_cv_;
  SpinLock tasks_mu_;
  Task* tasks_ = nullptr;
  SpinLock free_mu_;
  std::vector<Task*> free_tasks_;  // finished go tasks, reused by Spawn (no malloc, warm stack)
  std::mutex error_mu_;
  std::optional<Error> error_;
  std::atomic<bool> cancelled_{false};
  std::string cancel_message_;
  int32_t cancel_code_ = RILL_CANCELLED;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

void Task::Unpark() {
  int s = state.load(std::memory_order_acquire);
  for (;;) {
    if (s == kNotified) return;
    if (s == kRunning) {
      if (state.compare_exchange_weak(s, kNotified, std::memory_order_acq_rel)) return;
    } else if (state.compare_exchange_weak(s, kRunning, std::memory_order_acq_rel)) {
      sched->OnUnparked();  // before Ready: a deadlock scan must see it before the task runs
      sched->Ready(this, /*next=*/true);
      return;
    }
  }
}

void Task::SwitchToWorker() {
#if RILL_ASAN
  __sanitizer_start_switch_fiber(exit == Exit::kFinish ? nullptr : &fake_stack, caller_stack.bottom,
                                 caller_stack.size);
#endif
  caller = std::move(caller).resume();
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &caller_stack.bottom, &caller_stack.size);
#endif
}

void Task::Main() {
#if RILL_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &caller_stack.bottom, &caller_stack.size);
#endif
  if (!sched->cancelled()) {
    try {
      body();
    } catch (const Error& e) {
      if (is_main || !sched->cancelled()) {
        sched->Fail(is_main || origin == nullptr
                        ? e
                        : Error("go block started by " + origin->Where() + " failed: " + e.what(), e.code()));
      }
    } catch (const std::exception& e) {
      sched->Fail(Error(std::string("unexpected exception in a task: ") + e.what(), RILL_INTERNAL));
    }
  }
  body = nullptr;  // drops captured scopes here, on the task's own stack
  if (is_main) sched->Cancel("the main block ended", RILL_CANCELLED);
  exit = Exit::kFinish;
#if RILL_ASAN
  __sanitizer_start_switch_fiber(nullptr, caller_stack.bottom, caller_stack.size);
#endif
}

}  // namespace

void RunTasks(const SchedulerOptions& options, std::function<void()> main) {
  Scheduler s(options);
  s.Run(std::move(main));
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
  int notified = kNotified;
  if (t->state.compare_exchange_strong(notified, kRunning, std::memory_order_acq_rel)) {
    unlock(arg);  // an unpark came first: do not sleep
  } else {
    t->blocked_op.store(op, std::memory_order_release);
    t->blocked_what.store(what, std::memory_order_release);
    t->unlock = unlock;
    t->unlock_arg = arg;
    t->owed_wake_ops = 0;  // this worker runs the task it readied next: nothing to wake
    t->exit = Exit::kPark;
    t->SwitchToWorker();
    t->blocked_op.store(nullptr, std::memory_order_relaxed);
    t->blocked_what.store(nullptr, std::memory_order_relaxed);
  }
  return t->sched->cancelled() ? t->sched->CancelStatus() : nullptr;
}

void SpawnTask(std::function<void()> body, const RillOpInfo* origin) {
  Task* t = CurrentTask();
  if (t == nullptr) {
    throw Error("go needs the task scheduler: run the program with `rill run` (or inside "
                "rill::core::RunTasks)", RILL_FAILED_PRECONDITION);
  }
  t->sched->Spawn(std::move(body), origin, /*is_main=*/false);
}

OpBoundaries::OpBoundaries() {
  if (Task* t = CurrentTask()) {
    cancelled_ = t->sched->cancelled_flag();
    owed_ = &t->owed_wake_ops;
    op_runs_ = &t->op_runs;
    ++*op_runs_;
  }
}

OpBoundaries::~OpBoundaries() {
  if (op_runs_ != nullptr) --*op_runs_;
}

void OpBoundaries::WakeOwed() {
  Task* t = CurrentTask();
  t->owed_wake_ops = 0;
  t->sched->WakeIfIdle();
}

void ThrowIfTaskCancelled() {
  Task* t = CurrentTask();
  if (t != nullptr && t->sched->cancelled()) {
    throw Error(t->sched->CancelMessage(), RILL_CANCELLED);
  }
}

}  // namespace rill::core
