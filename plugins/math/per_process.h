// plugins/math/per_process.h — an object each process has one of, whose threads a child
// made by fork() does not inherit (the intra-op thread, the passes' helpers).
#ifndef RILL_PLUGINS_MATH_PER_PROCESS_H_
#define RILL_PLUGINS_MATH_PER_PROCESS_H_

#include <unistd.h>

#include <mutex>

namespace rill::math {

// This process's T, made by make() (a new T*) on first use, and made again in a child of
// fork(), which has no copy of the parent's threads. Never destroyed: ops may run while the
// process exits. One object per T.
template <class T, class Make> T& PerProcess(Make make) {
  static std::mutex mu;
  static T* object = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (object == nullptr || owner != getpid()) {
    object = make();
    owner = getpid();
  }
  return *object;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_PER_PROCESS_H_
