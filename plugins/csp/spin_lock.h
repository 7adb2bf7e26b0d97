// plugins/csp/spin_lock.h — the lock of a channel.
//
// Channel critical sections are a few dozen nanoseconds and never block, so waiting for
// one by spinning (then yielding the CPU, in case the holder's thread was preempted) is
// far cheaper than sleeping in the kernel, which a contended std::mutex does. It may be
// released on another fiber of the same thread than the one that took it (a parking
// task's lock is released by the scheduler after the switch), which std::mutex forbids.
#ifndef RILL_PLUGINS_CSP_SPIN_LOCK_H_
#define RILL_PLUGINS_CSP_SPIN_LOCK_H_

#include <sched.h>

#include <atomic>

#include "rill/sdk.hpp"

namespace rill {
namespace csp __attribute__((visibility("hidden"))) {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ) {
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

}  // namespace csp
}  // namespace rill

#endif  // RILL_PLUGINS_CSP_SPIN_LOCK_H_
