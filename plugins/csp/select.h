// plugins/csp/select.h — Go's select over channels.
//
// Contract (the Go specification's select statement):
//  - Among the cases that can proceed now, one is chosen uniformly at random; a receive
//    from a closed channel can always proceed (it yields the zero value). With none ready,
//    the default case runs if there is one; otherwise the task parks until one can
//    proceed, and exactly one case completes.
//  - A send case on a closed channel fails the select, as a send would.
//  - Channels are locked in increasing id order, each once, so selects and single
//    operations never deadlock on locks.
#ifndef RILL_PLUGINS_CSP_SELECT_H_
#define RILL_PLUGINS_CSP_SELECT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "channel.h"

// Hidden like the SDK layer it builds on: these types never cross a library boundary.
namespace rill {
namespace [[gnu::visibility("hidden")]] csp {

struct SelectCase {
  enum Kind { kDefault = 0, kSend = 1, kRecv = 2 };
  Kind kind = kDefault;
  // Send and receive cases. Borrowed, as ChannelOf gives it: RunSelect takes its own
  // references only before it waits (two shared counts per case and round otherwise).
  Channel* channel = nullptr;
  RillVariable* var = nullptr;  // send: the value (moved); receive: where it goes
};

// n value-initialised elements of T for one select: inline for up to kInline (a select of
// a few cases, run in a loop, allocates nothing), on the heap beyond. Only the n in use are
// constructed: a select makes several of these per round.
template <class T, size_t kInline = 8> class PerCase {
 public:
  explicit PerCase(size_t n) : n_(n), heap_(Heap(n)), data_(heap_ ? heap_.get() : reinterpret_cast<T*>(inline_)) {
    if (!heap_) std::uninitialized_value_construct_n(data_, n);
  }
  ~PerCase() {
    if (!heap_) std::destroy_n(data_, n_);
  }
  PerCase(const PerCase&) = delete;
  PerCase& operator=(const PerCase&) = delete;
  size_t size() const { return n_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  static std::unique_ptr<T[]> Heap(size_t n) {
    if (n <= kInline) return nullptr;
    if (n > PTRDIFF_MAX / sizeof(T)) throw std::bad_array_new_length();  // what new T[n] may not check
    return std::unique_ptr<T[]>(new T[n]());
  }

  const size_t n_;
  alignas(T) unsigned char inline_[kInline * sizeof(T)];
  const std::unique_ptr<T[]> heap_;
  T* const data_;
};

// Runs the select of cases[0, n); returns the position of the case that ran. Throws Error
// for a send on a closed channel, or when the task's run is ending.
size_t RunSelect(const SelectCase* cases, size_t n, RillKernelContext* ctx, const char* what);
inline size_t RunSelect(const std::vector<SelectCase>& cases, RillKernelContext* ctx, const char* what) {
  return RunSelect(cases.data(), cases.size(), ctx, what);
}

}  // namespace csp
}  // namespace rill

#endif  // RILL_PLUGINS_CSP_SELECT_H_
