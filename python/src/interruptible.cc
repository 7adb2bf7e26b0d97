#include "interruptible.h"

#include <pybind11/pybind11.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rill::python {
namespace {

namespace py = pybind11;

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
      done_ = false;
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for the job to end; true when it has.
  bool WaitFor(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_; });
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return quit_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // quit with no job pending
      std::function<void()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();  // catches everything itself (RunInterruptibly's wrapper)
      job = nullptr;
      lock.lock();
      done_ = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;  // guarded by mu_
  bool done_ = true;           // guarded by mu_
  bool quit_ = false;          // guarded by mu_
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
    while (!helper->WaitFor(kPollInterval)) {
      if (interrupted != nullptr) continue;  // cancelled: wait for the run to stop
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        interrupted = std::make_unique<py::error_already_set>();
        canceller.Cancel("interrupted (KeyboardInterrupt)");
      }
    }
  }
  ReturnHelper(std::move(helper));
  if (interrupted != nullptr) throw std::move(*interrupted);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace rill::python
