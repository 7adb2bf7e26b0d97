// core/tasks/stack_pool.h — memory for task stacks.
//
// Contract:
//  - StackPool::Lease(bytes) is the process's pool of stacks of that size, leased by each
//    scheduler while it runs, so later runs reuse stacks whose pages are already mapped in.
//    When its last lessee leaves, a pool hands the pages of all but its first kKeptSlabs
//    slabs to the kernel to reclaim under memory pressure (MADV_FREE): a run of 100,000
//    tasks does not pin their memory for the life of the process. Only slabs that handed
//    out a stack since are advised again, so a small run after a big one costs nothing.
//  - Allocate() hands out a stack, Release() takes it back; both are thread-safe. Memory is
//    reserved in slabs (MAP_NORESERVE): a stack costs physical memory only for the pages a
//    task touches, so 100,000 parked tasks fit.
//  - Each stack has a PROT_NONE guard page below it while the process's map budget
//    allows (every guard splits a mapping, and vm.max_map_count is often 65530); beyond
//    that, stacks come without guards (logged once, at info level).
#ifndef RILL_CORE_TASKS_STACK_POOL_H_
#define RILL_CORE_TASKS_STACK_POOL_H_

#include <cstddef>
#include <mutex>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::core {

struct Stack {
  void* base = nullptr;  // lowest usable address
  size_t size = 0;       // usable bytes; the stack grows down from base + size
  size_t slab = 0;       // the pool's slab it lies in
};

class __attribute__((visibility("hidden"))) StackPool {  // hidden: holds an SDK SpinLock
 public:
  static constexpr size_t kKeptSlabs = 256;  // 16,384 stacks keep their pages between runs

  // The shared pool for stacks of `stack_bytes`, leased: call Unlease when done with it.
  static StackPool& Lease(size_t stack_bytes);
  void Unlease();

  Stack Allocate();  // throws Error (RESOURCE_EXHAUSTED) when no memory can be mapped
  void Release(Stack stack);

  explicit StackPool(size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

 private:
  struct Slab {
    void* base;
    size_t bytes;
    size_t guarded;  // stacks of this slab with a guard page
    bool used;       // handed out a stack since the last MADV_FREE
  };
  void AddSlab();  // with mu_ held

  const size_t page_;
  const size_t usable_;  // per stack, page multiple
  const size_t guarded_limit_;  // stacks that may get a guard page
  SpinLock mu_;
  size_t lessees_ = 0;
  std::vector<Stack> free_;
  std::vector<Slab> slabs_;
  size_t guarded_ = 0;
  bool logged_ = false;
};

}  // namespace rill::core

#endif  // RILL_CORE_TASKS_STACK_POOL_H_
