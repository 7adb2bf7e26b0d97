// rill/spin_lock.hpp — a lock for the task-parking protocol (RillHostApi::task_park).
//
// Header-only, no ABI: it crosses no boundary. The host uses the same lock for its own
// wait queues and pages, so it lives in a header of its own, outside the plugin layer.
//
// For critical sections of a few dozen nanoseconds that never block (a wait queue):
// waiting spins, then yields the CPU in case the holder's thread was preempted, instead
// of sleeping in the kernel as a contended std::mutex does. It may be released on another
// fiber of the thread that took it (task_park's unlock callback runs on the scheduler's
// side of the switch), which std::mutex forbids.
#ifndef RILL_SPIN_LOCK_HPP_
#define RILL_SPIN_LOCK_HPP_

#include <sched.h>

#include <atomic>

namespace rill {
inline namespace util_v1 {

// Tells the CPU the caller is spinning (in a wait loop that spins before it parks).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          CpuRelax();
        } else {
          sched_yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // inline namespace util_v1
}  // namespace rill

#endif  // RILL_SPIN_LOCK_HPP_
