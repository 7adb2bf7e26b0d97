// python/src/registry_mutex.h — loading plugins while programs run.
//
// Contract: whatever reads the process's registry (a run, for as long as its kernels may be
// chosen: the whole run; preparing a program; an op's schema) holds RegistryMutex()
// shared; loading plugins holds it exclusively, so a load waits for the runs in progress
// and everything started meanwhile waits for the load. Nobody waits for it holding the
// GIL (ReadRegistry), and a load holds no GIL: a run may need the GIL (to drop a borrowed
// array) while a load waits for it to end.
#ifndef RILL_PYTHON_SRC_REGISTRY_MUTEX_H_
#define RILL_PYTHON_SRC_REGISTRY_MUTEX_H_

#include <pybind11/pybind11.h>

#include <shared_mutex>

namespace rill::python {

inline std::shared_mutex& RegistryMutex() {
  static auto* mu = new std::shared_mutex;  // never destroyed: a run on another thread may outlive statics
  return *mu;
}

// A shared hold for a caller holding the GIL, which it lets go of while it waits.
inline std::shared_lock<std::shared_mutex> ReadRegistry() {
  std::shared_lock lock(RegistryMutex(), std::try_to_lock);
  if (!lock.owns_lock()) {
    pybind11::gil_scoped_release release;
    lock.lock();
  }
  return lock;
}

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_REGISTRY_MUTEX_H_
