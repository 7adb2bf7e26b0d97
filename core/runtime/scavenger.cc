#include "core/runtime/scavenger.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace rill::core {

Scavenger& Scavenger::Get() {
  // Never destroyed: the small-object pool watches itself when blocks are freed, which
  // goes on while the process exits (other statics' destructors, threads still ending).
  // Only its thread is stopped then, by the Stopper's destructor below.
  static Scavenger* scavenger = [] {
    // A forked child has only the forking thread, so nobody in it can hold the lock; but it
    // may have been held in the parent when it forked (the thread, inside a ReleaseIfIdle
    // waiting for the small-object pool's lock, which the pool's fork handler holds), and
    // the child's first Watch would then wait for good. So the child makes it anew, as
    // glibc does its own locks. (Holding it across fork instead, as the pool does its
    // own, would deadlock the fork whenever the pool's handler ran first.)
    pthread_atfork(nullptr, nullptr, [] {
      new (&scavenger->mu_) std::mutex;
      new (&scavenger->cv_) std::condition_variable;
    });
    return new Scavenger;
  }();
  static const struct Stopper {
    ~Stopper() { scavenger->Stop(); }
  } stopper;
  return *scavenger;
}

void Scavenger::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable() && started_by_ == getpid()) {
    thread_.join();
  } else if (thread_.joinable()) {
    thread_.detach();
  }
}

void Scavenger::Watch(Scavengeable* s) noexcept {
  std::lock_guard lock(mu_);
  // Watch is called by frees, which cannot fail. Out of memory or threads, `s` goes
  // unwatched for now: it keeps its idle memory, and its next Watch tries again.
  // One watched already has a look scheduled, at the latest when its last ReleaseIfIdle
  // said (see the contract): that wakes nobody, so that a run's end, which watches the
  // stack pools, costs no wake-up of the scavenger's thread.
  if (std::find(watched_.begin(), watched_.end(), s) != watched_.end()) return;
  try {
    watched_.push_back(s);
    if (!thread_.joinable() && !stop_) {
      thread_ = std::thread([this] { Loop(); });
      started_by_ = getpid();
    }
  } catch (const std::exception&) {}
  cv_.notify_one();
}

void Scavenger::Forget(Scavengeable* s) {
  std::lock_guard lock(mu_);  // waits out a release in progress on `s`
  watched_.erase(std::remove(watched_.begin(), watched_.end(), s), watched_.end());
}

void Scavenger::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto next = Scavengeable::Clock::time_point::max();
    const auto now = Scavengeable::Clock::now();
    for (size_t i = 0; i < watched_.size();) {
      const auto again = watched_[i]->ReleaseIfIdle(now);
      if (again == Scavengeable::Clock::time_point::max()) {
        watched_.erase(watched_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        next = std::min(next, again);
        ++i;
      }
    }
    if (watched_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, next);
    }
  }
}

}  // namespace rill::core
