#include "core/runtime/scavenger.h"

#include <unistd.h>

#include <algorithm>

namespace rill::core {

Scavenger& Scavenger::Get() {
  // Never destroyed: the small-object pool watches itself when blocks are freed, which
  // goes on while the process exits (other statics' destructors, threads still ending).
  // Only its thread is stopped then, by this object's destructor.
  static Scavenger* scavenger = new Scavenger;
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

void Scavenger::Watch(Scavengeable* s) {
  std::lock_guard lock(mu_);
  if (std::find(watched_.begin(), watched_.end(), s) == watched_.end()) watched_.push_back(s);
  if (!thread_.joinable() && !stop_) {
    started_by_ = getpid();
    thread_ = std::thread([this] { Loop(); });
  }
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
