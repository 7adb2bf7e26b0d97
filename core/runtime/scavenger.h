// core/runtime/scavenger.h — gives memory that has stayed unused back to the kernel, from
// a background thread, as Go's scavenger does.
//
// Contract:
//  - A Scavengeable (the task stack pool, the small-object page pool) holds memory it could
//    give back once it has gone unused for a while. It calls Scavenger::Get().Watch(this)
//    when that may become so; the scavenger's one thread then calls its ReleaseIfIdle(now)
//    again at whatever time each call returns, until a call returns
//    Clock::time_point::max() (nothing to give back until it is watched again).
//  - A Watch only ever moves the time a Scavengeable's memory may be given back later
//    (its memory has been in use until now), never earlier than the time its last
//    ReleaseIfIdle returned. So a Watch of one already watched wakes nobody: the look
//    already scheduled for it comes no later than needed, and its answer schedules the next.
//  - Lock order: the scavenger's lock, then a Scavengeable's own. ReleaseIfIdle runs on the
//    scavenger's thread with the former held, so a Scavengeable calls Watch and Forget with
//    its own lock released.
//  - Forget(s) before s is destroyed: it waits out a ReleaseIfIdle in progress on s.
//  - The thread starts on the first Watch and is stopped and joined at exit (a thread
//    still alive then costs a TSan build a second at exit), in the process that started it
//    only: a forked child has no such thread, and its memory is not given back. Watch
//    stays safe to call during exit, after that (it then starts nothing).
#ifndef RILL_CORE_RUNTIME_SCAVENGER_H_
#define RILL_CORE_RUNTIME_SCAVENGER_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace rill::core {

class Scavengeable {
 public:
  using Clock = std::chrono::steady_clock;
  // Gives back what has been unused long enough at `now`; returns when to look again, or
  // Clock::time_point::max() for never (until the next Watch).
  virtual Clock::time_point ReleaseIfIdle(Clock::time_point now) = 0;

 protected:
  ~Scavengeable() = default;
};

class Scavenger {
 public:
  static Scavenger& Get();

  // Never fails (frees call it): without memory or a thread to spare, `s` is watched
  // from a later call.
  void Watch(Scavengeable* s) noexcept;
  void Forget(Scavengeable* s);

 private:
  Scavenger() = default;
  ~Scavenger() = delete;  // see Get
  void Loop();
  void Stop();  // at exit

  std::mutex mu_;  // held while a ReleaseIfIdle runs: Forget waits it out
  std::condition_variable cv_;
  std::vector<Scavengeable*> watched_;  // may have memory to give back
  bool stop_ = false;
  pid_t started_by_ = 0;
  std::thread thread_;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SCAVENGER_H_
