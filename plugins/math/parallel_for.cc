#include "parallel_for.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "intra_op.h"

namespace rill::math {
namespace {

constexpr double kChunkBytes = 128 * 1024;
constexpr int64_t kMaxChunks = 64;

// One ParallelFor call: its chunks are handed out by `next`; the caller and each helper
// that joined take them until none is left.
struct Pass {
  const std::function<void(int64_t, int64_t, int64_t)>* body;
  int64_t n = 0, chunks = 0;
  std::atomic<int64_t> next{0};
  int helpers = 0;           // helpers inside RunChunks of this pass (guarded by the pool's mu_)
  std::exception_ptr error;  // the first chunk's exception (guarded by the pool's mu_)
};

// The pass helpers: threads that sleep until a pass is queued, then take its chunks.
// Never destroyed (a pass may run while the process exits); the threads are detached.
class PassHelpers {
 public:
  explicit PassHelpers(int count) {
    for (int i = 0; i < count; ++i) std::thread([this] { Loop(); }).detach();
  }

  // Runs every chunk of `pass`, on this thread and on the helpers that wake in time.
  void Run(Pass& pass) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(&pass);
    }
    ready_.notify_all();
    RunChunks(pass);
    std::unique_lock<std::mutex> lock(mu_);
    Dequeue(&pass);  // no helper joins it from here on
    finished_.wait(lock, [&] { return pass.helpers == 0; });
    if (pass.error) std::rethrow_exception(pass.error);
  }

 private:
  // Takes chunks of `pass` until none is left. Called without mu_ held.
  void RunChunks(Pass& pass) {
    for (;;) {
      const int64_t c = pass.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= pass.chunks) return;
      try {
        (*pass.body)(c, pass.n * c / pass.chunks, pass.n * (c + 1) / pass.chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!pass.error) pass.error = std::current_exception();
      }
    }
  }

  void Dequeue(Pass* pass) {
    const auto it = std::find(queue_.begin(), queue_.end(), pass);
    if (it != queue_.end()) queue_.erase(it);
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ready_.wait(lock, [&] { return !queue_.empty(); });
      Pass* pass = queue_.front();
      ++pass->helpers;
      lock.unlock();
      RunChunks(*pass);
      lock.lock();
      Dequeue(pass);  // every chunk is taken: the next helper waits for another pass
      if (--pass->helpers == 0) finished_.notify_all();
    }
  }

  std::mutex mu_;  // guards queue_ and the queued passes' `helpers` and `error`
  std::condition_variable ready_, finished_;
  std::deque<Pass*> queue_;  // passes that may have chunks left, oldest first
};

// The process's helpers, started on first use: IntraOpBudget() - 1 of them, or one under
// ThreadSanitizer (whose budget is 1), so that TSan checks the hand-off. A child made by
// fork() has no copy of the parent's threads, so it starts its own.
PassHelpers& Helpers() {
  static std::mutex mu;
  static PassHelpers* helpers = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (helpers == nullptr || owner != getpid()) {
    helpers = new PassHelpers(kThreadSanitizer ? 1 : IntraOpBudget() - 1);
    owner = getpid();
  }
  return *helpers;
}

}  // namespace

int64_t ParallelChunks(int64_t n, double bytes) {
  if (bytes < kParallelBytes || n <= 1) return 1;
  return std::min({static_cast<int64_t>(std::ceil(bytes / kChunkBytes)), kMaxChunks, n});
}

namespace detail {

void RunChunks(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  Pass pass;
  pass.body = &body;
  pass.n = n;
  pass.chunks = chunks;
  if (!kThreadSanitizer && IntraOpBudget() == 1) {
    // No helpers: the chunks in order, here (the same chunks, so the same sums).
    for (int64_t c = 0; c < chunks; ++c) body(c, n * c / chunks, n * (c + 1) / chunks);
    return;
  }
  Helpers().Run(pass);
}

}  // namespace detail
}  // namespace rill::math
