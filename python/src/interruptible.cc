#include "interruptible.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rill::python {
namespace {

namespace py = pybind11;

// How long a side of a hand-off spins before it sleeps: the helper, for the next job after
// one ends; the caller, for the job to end. A training loop calls run after run, each a
// few hundred microseconds or less, and a sleeping thread takes tens of microseconds to
// wake here: spinning this long turns most hand-offs into a cache-line exchange, at a
// bounded cost in CPU time when no job comes. The caller spins only when its last run was
// shorter than kLongRun: a long run's kernels want every core (a spinning caller holds one
// they would use, slowing the run by more than a wake-up costs), and its end is worth a
// wake-up; a short run is mostly one thread's. A spinner yields its core at every look, so
// a run's threads (a parallel pass's helpers) get it whenever they want it.
constexpr auto kSpin = std::chrono::microseconds(100);
constexpr auto kLongRun = std::chrono::microseconds(200);

template <class Ready>
bool SpinFor(Ready ready, std::chrono::nanoseconds spin = kSpin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    if (ready()) return true;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

// One helper thread, which runs one job at a time and then waits for the next.
class Helper {
 public:
  Helper() : thread_([this] { Loop(); }) {}
  ~Helper() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Start(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      job_ = std::move(job);
      done_.store(false, std::memory_order_relaxed);
      pending_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for the job to end, spinning for `spin` of it first; true when
  // it has ended.
  bool WaitFor(std::chrono::milliseconds timeout, std::chrono::nanoseconds spin) {
    if (SpinFor([&] { return done_.load(std::memory_order_acquire); }, spin)) return true;
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_.load(std::memory_order_relaxed); });
  }

 private:
  void Loop() {
    for (;;) {
      SpinFor([&] { return pending_.load(std::memory_order_acquire); });
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return quit_ || pending_.load(std::memory_order_relaxed); });
      if (!pending_.load(std::memory_order_relaxed)) return;  // quit with no job pending
      std::function<void()> job = std::move(job_);
      pending_.store(false, std::memory_order_relaxed);
      lock.unlock();
      job();  // catches everything itself (RunInterruptibly's wrapper)
      job = nullptr;
      lock.lock();
      done_.store(true, std::memory_order_release);
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;       // guarded by mu_
  std::atomic<bool> pending_{false};  // a job is in job_; written under mu_
  std::atomic<bool> done_{true};      // the last job ended; written under mu_
  bool quit_ = false;               // guarded by mu_
  std::thread thread_;
};

// Idle helpers. Never destroyed: a process may exit while a helper is still ending a run
// another thread started, and joining threads during static destruction could hang.
std::mutex& PoolMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<std::unique_ptr<Helper>>& Idle() {
  static auto* idle = new std::vector<std::unique_ptr<Helper>>;
  return *idle;
}

std::unique_ptr<Helper> TakeHelper() {
  {
    std::lock_guard lock(PoolMutex());
    if (!Idle().empty()) {
      std::unique_ptr<Helper> h = std::move(Idle().back());
      Idle().pop_back();
      return h;
    }
  }
  return std::make_unique<Helper>();
}

void ReturnHelper(std::unique_ptr<Helper> h) {
  std::lock_guard lock(PoolMutex());
  Idle().push_back(std::move(h));
}

}  // namespace

void RunInterruptibly(const std::function<void(core::RunCanceller*)>& job) {
  core::RunCanceller canceller;
  std::exception_ptr failure;
  // How long this thread's last run took: it spins for this one only after a short one.
  thread_local std::chrono::nanoseconds last_run{0};
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::nanoseconds spin = last_run < kLongRun ? std::chrono::nanoseconds(kSpin) : std::chrono::nanoseconds(0);
  std::unique_ptr<Helper> helper = TakeHelper();
  helper->Start([&] {
    try {
      job(&canceller);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  std::unique_ptr<py::error_already_set> interrupted;
  {
    py::gil_scoped_release release;
    while (!helper->WaitFor(kPollInterval, spin)) {
      if (interrupted != nullptr) continue;  // cancelled: wait for the run to stop
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        interrupted = std::make_unique<py::error_already_set>();
        canceller.Cancel("interrupted (KeyboardInterrupt)");
      }
    }
  }
  last_run = std::chrono::steady_clock::now() - start;
  ReturnHelper(std::move(helper));
  if (interrupted != nullptr) throw std::move(*interrupted);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace rill::python
