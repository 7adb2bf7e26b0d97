#include "parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "intra_op.h"
#include "per_process.h"

namespace rill::math {
namespace {

constexpr double kChunkBytes = 128 * 1024;
constexpr int64_t kMaxChunks = 64;

// How long a helper keeps looking for the next pass before it sleeps. Waking a sleeping
// thread costs about this much (a futex wake, and on a virtual machine the hypervisor's
// wake of an idle virtual CPU), so spinning no longer than that wastes at most as much as
// sleeping at once would have cost, and passes that follow each other closely (an op's
// passes, a model's ops) find their helpers awake.
constexpr std::chrono::microseconds kSpinBeforeSleep(100);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The team that runs ParallelFor's chunks: the calling thread and ThreadBudget() - 1 helper
// threads, one pass at a time.
//
// The caller joins its own pass, so a pass costs no hand-off to another thread and back:
// the caller opens the pass, runs chunks, and returns once every chunk is done. Participant
// p (the caller is 0, helper i is i + 1) first takes the chunks of its own contiguous range
// [p * chunks / P, (p + 1) * chunks / P), so that consecutive passes over the same tensors
// find each share in the same core's cache, then takes what is left of the others' ranges:
// a helper that is late (asleep, or its core busy) costs the pass nothing but its share,
// which the others take. Which thread runs a chunk never changes what the chunk computes.
//
// Protocol. `state_` packs the pass generation (bits 17 and up), whether the pass is open
// (bit 16), and how many helpers are inside it (bits 0-15). A helper touches the pass's
// fields only while inside: it enters by raising the count with a compare-and-swap that
// also checks the pass is open and not one it has already run, and leaves by lowering it.
// The caller fills the fields while no helper is inside (closed, count 0), opens the pass
// with a new generation, runs chunks until no range has any left, closes it, and waits for
// the count to reach 0: every chunk taken has then been run, and no helper will read the
// pass again. A closed pass is never entered, so a helper that wakes late finds nothing.
class Team {
 public:
  explicit Team(int threads) : participants_(std::max(1, std::min(threads, kMaxParticipants))) {
    for (int i = 1; i < participants_; ++i) std::thread([this, i] { Help(i); }).detach();
  }

  // Runs body's `chunks` chunks of [0, n) on the team; false (having run nothing) when the
  // team is running another pass: a concurrent caller, or a chunk calling ParallelFor.
  bool TryRun(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    struct Release {
      std::atomic<bool>& busy;
      ~Release() { busy.store(false, std::memory_order_release); }
    } release{busy_};
    body_ = &body;
    n_ = n;
    chunks_ = chunks;
    for (int p = 0; p < participants_; ++p) {
      next_[p].value.store(chunks * p / participants_, std::memory_order_relaxed);
      end_[p] = chunks * (p + 1) / participants_;
    }
    std::fill(errors_, errors_ + chunks, nullptr);
    const uint64_t generation = (state_.load(std::memory_order_relaxed) >> kGenerationShift) + 1;
    state_.store(generation << kGenerationShift | kOpen, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      if (sleepers_ > 0) wake_.notify_all();
    }
    RunChunks(0);
    state_.fetch_and(~kOpen, std::memory_order_acq_rel);
    for (int spins = 0; (state_.load(std::memory_order_acquire) & kInsideMask) != 0; ++spins) {
      if (spins < 4096) {
        CpuRelax();
      } else {
        std::this_thread::yield();  // a helper inside was preempted mid-chunk
      }
    }
    for (int64_t c = 0; c < chunks; ++c) {
      if (errors_[c]) std::rethrow_exception(errors_[c]);
    }
    return true;
  }

 private:
  static constexpr int kMaxParticipants = 64;
  static constexpr uint64_t kInsideMask = 0xffff, kOpen = uint64_t{1} << 16;
  static constexpr int kGenerationShift = 17;

  struct alignas(64) Cursor {  // one cache line each: participants take from their own
    std::atomic<int64_t> value{0};
  };

  // Participant p's chunks, then the others'. An exception may not leave a helper: each
  // chunk's is kept, the first rethrown by the caller.
  void RunChunks(int p) {
    for (int k = 0; k < participants_; ++k) {
      const int q = (p + k) % participants_;
      for (int64_t c; (c = next_[q].value.fetch_add(1, std::memory_order_relaxed)) < end_[q];) {
        try {
          (*body_)(c, n_ * c / chunks_, n_ * (c + 1) / chunks_);
        } catch (...) {
          errors_[c] = std::current_exception();
        }
      }
    }
  }

  // Helper p: enters each open pass it has not run, runs chunks, leaves; spins a while for
  // the next pass, then sleeps until a caller opens one.
  void Help(int p) {
    uint64_t last_generation = 0;
    for (;;) {
      const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
      bool ran = false;
      for (int spins = 0; !ran; ++spins) {
        uint64_t s = state_.load(std::memory_order_acquire);
        if ((s & kOpen) != 0 && (s >> kGenerationShift) != last_generation) {
          if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
            last_generation = s >> kGenerationShift;
            RunChunks(p);
            state_.fetch_sub(1, std::memory_order_release);
            ran = true;
          }
          continue;
        }
        if (spins % 64 == 63 && std::chrono::steady_clock::now() > spin_until) break;
        std::this_thread::yield();  // a thread waiting for this core gets it
      }
      if (ran) continue;
      std::unique_lock<std::mutex> lock(sleep_mu_);
      ++sleepers_;
      wake_.wait(lock, [&] {
        const uint64_t s = state_.load(std::memory_order_acquire);
        return (s & kOpen) != 0 && (s >> kGenerationShift) != last_generation;
      });
      --sleepers_;
    }
  }

  const int participants_;
  std::atomic<bool> busy_{false};  // set by the caller running a pass
  std::atomic<uint64_t> state_{0};
  // The pass: written by its caller while no helper is inside, read by those inside.
  const std::function<void(int64_t, int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0, chunks_ = 1;
  Cursor next_[kMaxParticipants];
  int64_t end_[kMaxParticipants] = {};
  std::exception_ptr errors_[kMaxChunks];
  // Sleeping helpers; a caller that opens a pass wakes them under sleep_mu_, and a helper
  // checks for an open pass under it before sleeping, so none sleeps through an opening.
  std::mutex sleep_mu_;
  std::condition_variable wake_;
  int sleepers_ = 0;
};

// The process's team, started on first use.
Team& TheTeam() {
  return PerProcess<Team>([] { return new Team(ThreadBudget()); });
}

}  // namespace

void ParallelCopy(const void* from, void* to, size_t bytes) {
  const auto* in = static_cast<const char*>(from);
  auto* out = static_cast<char*>(to);
  ParallelFor(static_cast<int64_t>(bytes), 2.0 * static_cast<double>(bytes),
              [in, out](int64_t, int64_t begin, int64_t end) {
                CopyBytes(out + begin, in + begin, static_cast<size_t>(end - begin));
              });
}

int64_t ParallelChunks(int64_t n, double bytes) {
  if (bytes < kParallelBytes || n <= 1) return 1;
  return std::min({static_cast<int64_t>(std::ceil(bytes / kChunkBytes)), kMaxChunks, n});
}

namespace detail {

void RunChunks(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  if (ThreadBudget() > 1 && TheTeam().TryRun(n, chunks, body)) return;
  for (int64_t c = 0; c < chunks; ++c) body(c, n * c / chunks, n * (c + 1) / chunks);
}

}  // namespace detail
}  // namespace rill::math
