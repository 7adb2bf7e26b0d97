#include "interruptible.h"

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <shared_mutex>
#include <utility>

#include "registry_mutex.h"

namespace rill::python {
namespace {

namespace py = pybind11;

// Whether the calling thread is Python's main thread, the one that runs signal handlers
// (threading.main_thread(): Python moves it to the forking thread in a forked child).
bool OnMainThread() {
  static auto* main_thread = new py::object(py::module_::import("threading").attr("main_thread"));
  return (*main_thread)().attr("ident").cast<unsigned long>() == PyThread_get_thread_ident();  // NOLINT(runtime/int)
}

}  // namespace

void RunInterruptibly(core::SchedulerOptions options, std::function<void()> main) {
  core::RunCanceller canceller;
  std::unique_ptr<py::error_already_set> interrupted;
  if (OnMainThread()) {
    options.poll_every = kPollInterval;
    options.poll = [&] {
      if (interrupted != nullptr) return;  // cancelled already: the run is winding down
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        interrupted = std::make_unique<py::error_already_set>();
        canceller.Cancel("interrupted (KeyboardInterrupt)");
      }
    };
  }
  std::exception_ptr failure;
  {
    py::gil_scoped_release release;
    std::shared_lock registry(RegistryMutex());  // no plugin loads while kernels are chosen
    try {
      core::RunTasks(options, std::move(main), &canceller);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (interrupted != nullptr) throw std::move(*interrupted);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace rill::python
