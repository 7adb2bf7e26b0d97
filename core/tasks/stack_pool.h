// core/tasks/stack_pool.h — memory for task stacks.
//
// Contract:
//  - Allocate() hands out a stack of the pool's size, Release() takes it back for reuse;
//    both are thread-safe. Memory is reserved in slabs (MAP_NORESERVE): a stack costs
//    physical memory only for the pages a task touches, so 100,000 parked tasks fit.
//  - Each stack has a PROT_NONE guard page below it while the process's map budget
//    allows (every guard splits a mapping, and vm.max_map_count is often 65530); beyond
//    that, stacks come without guards and a warning says so once.
//  - The pool unmaps everything when destroyed; no stack may be in use then.
#ifndef RILL_CORE_TASKS_STACK_POOL_H_
#define RILL_CORE_TASKS_STACK_POOL_H_

#include <cstddef>
#include <mutex>
#include <vector>

namespace rill::core {

struct Stack {
  void* base = nullptr;  // lowest usable address
  size_t size = 0;       // usable bytes; the stack grows down from base + size
};

class StackPool {
 public:
  explicit StackPool(size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  Stack Allocate();  // throws Error (RESOURCE_EXHAUSTED) when no memory can be mapped
  void Release(Stack stack);
  size_t stack_bytes() const { return usable_; }

 private:
  void AddSlab();  // with mu_ held

  const size_t page_;
  const size_t usable_;  // per stack, page multiple
  const size_t guarded_limit_;  // stacks that may get a guard page
  std::mutex mu_;
  std::vector<Stack> free_;
  std::vector<std::pair<void*, size_t>> slabs_;
  size_t guarded_ = 0;
  bool warned_ = false;
};

}  // namespace rill::core

#endif  // RILL_CORE_TASKS_STACK_POOL_H_
