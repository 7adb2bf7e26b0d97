// python/src/interruptible.h — running a program so that Ctrl-C stops it.
//
// Contract: RunInterruptibly(job) runs job(canceller) on a helper thread while the
// calling thread, with the GIL released, waits for it; every kPollInterval it takes the
// GIL and lets Python run its signal handlers. If one raises (Ctrl-C's KeyboardInterrupt),
// the run is cancelled through `canceller`, waited for, and that exception propagates
// (py::error_already_set); otherwise the job's own exception, if any, is rethrown on the
// calling thread. The job must not touch Python objects. Helper threads are kept for
// the next run, one per run in progress. REQUIRES: the GIL held by the caller.
//
// Why a helper thread: Python runs signal handlers only on its main thread, and only
// while it holds the GIL; a run on the calling thread would leave nobody to see Ctrl-C
// until the run ends (a program blocked on a channel or an RPC never would).
#ifndef RILL_PYTHON_SRC_INTERRUPTIBLE_H_
#define RILL_PYTHON_SRC_INTERRUPTIBLE_H_

#include <chrono>
#include <functional>

#include "core/tasks/scheduler.h"

namespace rill::python {

inline constexpr std::chrono::milliseconds kPollInterval{50};

void RunInterruptibly(const std::function<void(core::RunCanceller*)>& job);

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_INTERRUPTIBLE_H_
