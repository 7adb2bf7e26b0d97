// python/src/registry_mutex.h — loading plugins while programs run.
//
// Contract: a run holds RegistryMutex() shared for as long as its kernels may be chosen
// (the whole run); loading plugins into the process's registry holds it exclusively, so a
// load waits for the runs in progress, and runs started meanwhile wait for the load.
// Preparing a program reads the registry under the GIL, which a load also holds.
#ifndef RILL_PYTHON_SRC_REGISTRY_MUTEX_H_
#define RILL_PYTHON_SRC_REGISTRY_MUTEX_H_

#include <shared_mutex>

namespace rill::python {

inline std::shared_mutex& RegistryMutex() {
  static auto* mu = new std::shared_mutex;  // never destroyed: helper threads outlive statics
  return *mu;
}

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_REGISTRY_MUTEX_H_
