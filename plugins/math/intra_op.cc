#include "intra_op.h"

#include <omp.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "per_process.h"
#include "rill/sdk.hpp"

namespace rill::math {
namespace {

#if defined(__SANITIZE_THREAD__)
#define RILL_MATH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RILL_MATH_TSAN 1
#endif
#endif

// Under ThreadSanitizer every call, small ones too, goes to the intra-op thread with a
// budget of 1: libgomp and libdnnl are not instrumented, so TSan cannot see their locks
// and would report oneDNN's primitive cache touched from several threads; on one thread
// there is nothing to report, and the hand-off to that thread is itself checked.
#ifdef RILL_MATH_TSAN
constexpr bool kOneThreadForAll = true;
#else
constexpr bool kOneThreadForAll = false;
#endif

int ReadBudget() {
  const char* env = std::getenv("RILL_INTRA_OP_THREADS");
  if (env == nullptr || *env == '\0') return std::max(1, omp_get_max_threads());
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096) {
    throw Error("RILL_INTRA_OP_THREADS '" + std::string(env) + "' is not a thread count from 1 to 4096",
                RILL_INVALID_ARGUMENT);
  }
  return static_cast<int>(n);
}

// One call handed to the intra-op thread; the caller waits on `done`.
struct Job {
  const std::function<void()>* work;
  std::exception_ptr error;
  bool done = false;
};

// The intra-op thread and its queue. Never destroyed (ops may run while the process
// exits); the thread is detached and sleeps when there is nothing to do.
class IntraOpThread {
 public:
  explicit IntraOpThread(int budget) : budget_(budget) {
    std::thread([this] { Loop(); }).detach();
  }

  void Run(const std::function<void()>& work) {
    Job job{&work, nullptr, false};
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&job);
    ready_.notify_one();
    finished_.wait(lock, [&] { return job.done; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  void Loop() {
    omp_set_num_threads(budget_);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ready_.wait(lock, [&] { return !queue_.empty(); });
      Job* job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      try {
        (*job->work)();
      } catch (...) {
        job->error = std::current_exception();
      }
      lock.lock();
      job->done = true;
      finished_.notify_all();
    }
  }

  const int budget_;
  std::mutex mu_;  // guards queue_ and every queued Job's `done`
  std::condition_variable ready_, finished_;
  std::deque<Job*> queue_;
};

// The process's intra-op thread, started on first use.
IntraOpThread& Thread() {
  return PerProcess<IntraOpThread>([] { return new IntraOpThread(IntraOpBudget()); });
}

}  // namespace

int ThreadBudget() {
  static const int budget = ReadBudget();
  return budget;
}

int IntraOpBudget() { return kOneThreadForAll ? 1 : ThreadBudget(); }

namespace detail {

void RunIntraOp(bool large, const std::function<void()>& work) {
  if (kOneThreadForAll) return Thread().Run(work);
  if (!large || IntraOpBudget() == 1) {
    // Single-threaded on the caller's thread, whose OpenMP setting is the embedder's:
    // restored after.
    struct Restore {
      int threads = omp_get_max_threads();
      ~Restore() { omp_set_num_threads(threads); }
    } restore;
    omp_set_num_threads(1);
    return work();
  }
  Thread().Run(work);
}

}  // namespace detail
}  // namespace rill::math
