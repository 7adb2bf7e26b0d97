// core/tasks/stack_pool.h — memory for task stacks.
//
// Contract:
//  - StackPool::Shared(bytes) is the process's pool of stacks of that size. Each scheduler
//    leases it (Lease/Unlease) while it runs, so later runs reuse stacks whose pages are
//    already mapped in: on some hosts touching a page again after the kernel was told it
//    may take it back costs as much as a fresh fault, more than a short task's whole run.
//  - Memory goes back lazily, as Go's scavenger does it: once a pool has had no lessee for
//    `release_after` (1 s), it hands the pages of all but its first `kept_slabs` slabs to
//    the kernel to reclaim under memory pressure (MADV_FREE), from the scavenger's thread
//    (core/runtime/scavenger.h). A run of 100,000 tasks does not pin their memory for the
//    life of the process, and runs that follow one another (a benchmark's repetitions, a
//    server running programs) reuse it warm. Only slabs that handed out a stack since are
//    advised again.
//  - Allocate() hands out a stack, Release() takes it back; both are thread-safe. Memory is
//    reserved in slabs (MAP_NORESERVE): a stack costs physical memory only for the pages a
//    task touches, so 100,000 parked tasks fit.
//  - Each stack has a PROT_NONE guard page below it while the process's map budget
//    allows (every guard splits a mapping, and vm.max_map_count is often 65530); beyond
//    that, stacks come without guards (logged once, at info level).
#ifndef RILL_CORE_TASKS_STACK_POOL_H_
#define RILL_CORE_TASKS_STACK_POOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/runtime/scavenger.h"
#include "rill/spin_lock.hpp"

namespace rill::core {

// 16 bytes: a parked go block's task holds one (a chain of 100,000 holds 100,000).
struct Stack {
  void* base = nullptr;  // lowest usable address
  uint32_t size = 0;     // usable bytes; the stack grows down from base + size
  uint32_t slab = 0;     // the pool's slab it lies in
  char* top() const { return static_cast<char*>(base) + size; }
};

class StackPool final : private Scavengeable {
 public:
  using Clock = Scavengeable::Clock;
  static constexpr size_t kStacksPerSlab = 64;
  static constexpr size_t kKeptSlabs = 256;  // 16,384 stacks keep their pages for good
  static constexpr Clock::duration kReleaseAfter = std::chrono::seconds(1);

  // The process's pool for stacks of `stack_bytes` (never destroyed).
  static StackPool& Shared(size_t stack_bytes);

  StackPool(size_t stack_bytes, size_t kept_slabs = kKeptSlabs, Clock::duration release_after = kReleaseAfter);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // A scheduler uses the pool between these; the last Unlease starts the release clock.
  StackPool& Lease();
  void Unlease();

  Stack Allocate();  // throws Error (RESOURCE_EXHAUSTED) when no memory can be mapped
  void Release(Stack stack);

  // Slabs that handed out a stack since their pages were last given back (or ever).
  size_t warm_slabs();

 private:
  struct Slab {
    void* base;
    size_t bytes;
    bool used;  // handed out a stack since the last MADV_FREE
  };
  void AddSlab();  // with mu_ held
  // Gives back the pages of warm slabs past kept_slabs_ if the pool has been idle for
  // release_after_ at `now`; else says when to look again (Clock::time_point::max(): never).
  Clock::time_point ReleaseIfIdle(Clock::time_point now) override;

  const size_t page_;
  const size_t usable_;         // per stack, page multiple
  const size_t guarded_limit_;  // stacks that may get a guard page
  const size_t kept_slabs_;
  const Clock::duration release_after_;
  SpinLock mu_;
  size_t lessees_ = 0;
  Clock::time_point idle_since_;  // when the last lessee left (valid while lessees_ == 0)
  std::vector<Stack> free_;
  std::vector<Slab> slabs_;
  size_t guarded_ = 0;
  bool logged_ = false;
};

}  // namespace rill::core

#endif  // RILL_CORE_TASKS_STACK_POOL_H_
