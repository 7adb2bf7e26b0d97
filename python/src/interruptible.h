// python/src/interruptible.h — running a program so that Ctrl-C stops it.
//
// Contract: RunInterruptibly(options, main) runs `main` as the main task of a task run
// (core::RunTasks) on the calling thread, with the GIL released and RegistryMutex() held
// shared (no plugin loads while kernels are chosen). On Python's main thread,
// the only one that runs signal handlers, the run polls every kPollInterval
// (SchedulerOptions::poll): it takes the GIL and lets Python run its handlers. If one
// raises (Ctrl-C's KeyboardInterrupt), the run is cancelled, waited for, and that exception
// propagates (py::error_already_set); otherwise the run's own error, if any, is rethrown.
// `main` must not touch Python objects. REQUIRES: the GIL held by the caller.
//
// Why polls rather than a run on another thread while this one waits: a hand-off to a
// thread and back costs more than a small op's whole run, and a waiting thread that spins
// to shorten it takes a core from the run's own threads. A poll comes between tasks and
// at op boundaries, so an op still in progress (a long kernel) ends before the run stops,
// as it would for a cancellation from any thread.
#ifndef RILL_PYTHON_SRC_INTERRUPTIBLE_H_
#define RILL_PYTHON_SRC_INTERRUPTIBLE_H_

#include <chrono>
#include <functional>

#include "core/tasks/scheduler.h"

namespace rill::python {

inline constexpr std::chrono::milliseconds kPollInterval{50};

void RunInterruptibly(core::SchedulerOptions options, std::function<void()> main);

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_INTERRUPTIBLE_H_
