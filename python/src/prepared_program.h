// python/src/prepared_program.h — one program prepared to run from Python, as
// fluid.Executor.run runs it.
//
// Contract: a PreparedProgram is a core::Session (session.h) of a serialized ProgramDesc
// whose block 0 holds Fluid's feed and fetch ops (fluid.Executor adds them). Run(scope,
// feeds) feeds the session (each feed checked against its declaration, every feed op's
// given), runs it as the main task of RunTasks (go blocks as tasks; `workers` threads,
// the calling thread first), interruptibly (interruptible.h), and returns the fetch ops' values in col order as
// numpy arrays (copies), or, with as_tensors, as Tensors (copies keeping their LoD: Fluid's
// return_numpy=False). Persistable variables live in `scope`'s root; the others, and
// the feed and fetch lists, in a child scope of `scope` kept for the next run in the same
// scope (so a run reuses the last run's memory, and runs of different programs in one
// scope at once keep their feeds apart). Feeds are borrowed, not copied, where numpy_tensor.h allows; they
// are never written in place. Runs of one PreparedProgram take turns; the GIL is
// released while one waits and while the program runs.
#ifndef RILL_PYTHON_SRC_PREPARED_PROGRAM_H_
#define RILL_PYTHON_SRC_PREPARED_PROGRAM_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/api/session.h"
#include "core/registry/registry.h"
#include "core/runtime/scope.h"

namespace rill::python {

namespace py = pybind11;

class PreparedProgram {
 public:
  // `cuda_device` >= 0: kernels run on that CUDA device where they can.
  PreparedProgram(const core::Registry& registry, const std::string& program_bytes, int workers, int cuda_device);

  // `feeds`: (name, numpy array or core.Tensor) pairs.
  py::list Run(const std::shared_ptr<core::Scope>& scope, const py::list& feeds, bool as_tensors);

  std::vector<std::string> feed_names() const;
  std::vector<std::string> fetch_names() const;

 private:
  // Empties the feed lists and the fed variables in local_. REQUIRES: mu_ held.
  void ReleaseFeeds();

  // A variable the program writes (Session::Writes) is fed a copy, never a borrowed
  // array, which an op writing in place would write through.
  core::Session session_;
  // Guarded by mu_: per feed, the memory its last copy went into. A run lets go of its
  // feeds when it ends (ReleaseFeeds), so the next copy of the same size reuses this
  // memory instead of faulting in new pages, and a borrowed array is not held past the run.
  std::map<std::string, core::Tensor> staging_;
  int workers_;
  std::mutex mu_;                          // one run at a time
  std::weak_ptr<core::Scope> last_scope_;  // guarded by mu_: the scope `local_` is a child of
  std::shared_ptr<core::Scope> local_;     // guarded by mu_
};

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_PREPARED_PROGRAM_H_
