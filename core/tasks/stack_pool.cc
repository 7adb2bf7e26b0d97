#include "core/tasks/stack_pool.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

#include "core/errors.h"

namespace rill::core {
namespace {

constexpr size_t kStacksPerSlab = 64;

// How many guarded stacks the map budget allows: each costs two mappings, and the rest of
// the process (libraries, heap, CUDA) keeps a generous share.
size_t GuardedLimit() {
  size_t max_maps = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  in >> max_maps;
  constexpr size_t kReserve = 16384;
  return max_maps > 2 * kReserve ? (max_maps - kReserve) / 2 : 0;
}

}  // namespace

StackPool::StackPool(size_t stack_bytes)
    : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
      usable_((stack_bytes + page_ - 1) / page_ * page_),
      guarded_limit_(GuardedLimit()) {}

StackPool::~StackPool() {
  for (const Slab& s : slabs_) munmap(s.base, s.bytes);
}

StackPool& StackPool::Lease(size_t stack_bytes) {
  static std::mutex mu;
  static std::map<size_t, std::unique_ptr<StackPool>> pools;
  std::lock_guard lock(mu);
  auto& pool = pools[stack_bytes];
  if (!pool) pool = std::make_unique<StackPool>(stack_bytes);
  std::lock_guard pool_lock(pool->mu_);
  ++pool->lessees_;
  return *pool;
}

void StackPool::Unlease() {
  std::lock_guard lock(mu_);
  if (--lessees_ > 0) return;
  // Nobody runs on these stacks now. Past the first slabs, let the kernel take their pages
  // back when it needs memory (MADV_FREE, as Go's scavenger does): until it does, a later
  // run reuses them without faulting them in again, and the mappings (and guard pages)
  // stay, so no mmap or mprotect is repeated.
  for (size_t i = kKeptSlabs; i < slabs_.size(); ++i) {
    if (!slabs_[i].used) continue;  // advised already, and untouched since
    madvise(slabs_[i].base, slabs_[i].bytes, MADV_FREE);
    slabs_[i].used = false;
  }
}

void StackPool::AddSlab() {
  const size_t slot = usable_ + page_;  // guard page + stack
  const size_t bytes = slot * kStacksPerSlab;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    throw Error("cannot map " + std::to_string(bytes >> 20) + " MiB for task stacks (" +
                    std::to_string(slabs_.size() * kStacksPerSlab) + " stacks exist)",
                RILL_RESOURCE_EXHAUSTED);
  }
  slabs_.push_back(Slab{p, bytes, 0, false});
  auto* base = static_cast<char*>(p);
  for (size_t i = 0; i < kStacksPerSlab; ++i) {
    char* slot_base = base + i * slot;
    if (guarded_ < guarded_limit_ && mprotect(slot_base, page_, PROT_NONE) == 0) {
      ++guarded_;
      ++slabs_.back().guarded;
    } else if (!logged_) {
      logged_ = true;
      spdlog::info("task stacks past the {}th have no guard page (vm.max_map_count budget)", guarded_);
    }
    free_.push_back(Stack{slot_base + page_, usable_, slabs_.size() - 1});
  }
}

Stack StackPool::Allocate() {
  std::lock_guard lock(mu_);
  if (free_.empty()) AddSlab();
  Stack s = free_.back();
  free_.pop_back();
  slabs_[s.slab].used = true;
  return s;
}

void StackPool::Release(Stack stack) {
  std::lock_guard lock(mu_);
  free_.push_back(stack);
}

}  // namespace rill::core
