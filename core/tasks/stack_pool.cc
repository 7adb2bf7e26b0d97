#include "core/tasks/stack_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/errors.h"
#include "core/log.h"
#include "core/runtime/prefetch.h"

namespace rill::core {
namespace {

// How many guarded stacks the map budget allows: each costs two mappings, and the rest of
// the process (libraries, heap, CUDA) keeps a generous share.
size_t GuardedLimit() {
  size_t max_maps = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  in >> max_maps;
  constexpr size_t kReserve = 16384;
  return max_maps > 2 * kReserve ? (max_maps - kReserve) / 2 : 0;
}

constexpr size_t kFiberTopBytes = 512;  // a fiber's record and its task's first frames

}  // namespace

StackPool::StackPool(size_t stack_bytes, size_t kept_slabs, Clock::duration release_after)
    : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
      usable_((stack_bytes + page_ - 1) / page_ * page_),
      guarded_limit_(GuardedLimit()),
      kept_slabs_(kept_slabs),
      release_after_(release_after) {
  if (usable_ > UINT32_MAX) {
    throw Error("a task stack of " + std::to_string(stack_bytes) + " bytes is past the 4 GiB a stack may have",
                RILL_INVALID_ARGUMENT);
  }
}

StackPool::~StackPool() {
  Scavenger::Get().Forget(this);
  for (const Slab& s : slabs_) munmap(s.base, s.bytes);
}

StackPool& StackPool::Shared(size_t stack_bytes) {
  static std::mutex mu;
  static auto* pools = new std::map<size_t, std::unique_ptr<StackPool>>;  // lives through exit
  std::lock_guard lock(mu);
  auto& pool = (*pools)[stack_bytes];
  if (!pool) pool = std::make_unique<StackPool>(stack_bytes);
  return *pool;
}

StackPool& StackPool::Lease() {
  std::lock_guard lock(mu_);
  ++lessees_;
  return *this;
}

void StackPool::Unlease() {
  {
    std::lock_guard lock(mu_);
    if (--lessees_ > 0) return;
    idle_since_ = Clock::now();
  }
  Scavenger::Get().Watch(this);
}

StackPool::Clock::time_point StackPool::ReleaseIfIdle(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (lessees_ > 0) return Clock::time_point::max();  // its last Unlease watches it again
  if (now - idle_since_ < release_after_) return idle_since_ + release_after_;
  // Nobody runs on these stacks now. Past the first slabs, let the kernel take their pages
  // back when it needs memory: until it does, a later run reuses them without faulting them
  // in again, and the mappings (and guard pages) stay, so no mmap or mprotect is repeated.
  for (size_t i = kept_slabs_; i < slabs_.size(); ++i) {
    if (!slabs_[i].used) continue;  // advised already, and untouched since
    madvise(slabs_[i].base, slabs_[i].bytes, MADV_FREE);
    slabs_[i].used = false;
  }
  return Clock::time_point::max();
}

size_t StackPool::warm_slabs() {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::count_if(slabs_.begin(), slabs_.end(), [](const Slab& s) { return s.used; }));
}

void StackPool::AddSlab() {
  const size_t slot = usable_ + page_;  // guard page + stack
  const size_t bytes = slot * kStacksPerSlab;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw Error("cannot map " + std::to_string(bytes >> 20) + " MiB for task stacks (" +
                    std::to_string(slabs_.size() * kStacksPerSlab) + " stacks exist)",
                RILL_RESOURCE_EXHAUSTED);
  }
  slabs_.push_back(Slab{p, bytes, false});
  auto* base = static_cast<char*>(p);
  for (size_t i = 0; i < kStacksPerSlab; ++i) {
    char* slot_base = base + i * slot;
    if (guarded_ < guarded_limit_ && mprotect(slot_base, page_, PROT_NONE) == 0) {
      ++guarded_;
    } else if (!logged_) {
      logged_ = true;
      Logger().info("task stacks past the {}th have no guard page (vm.max_map_count budget)", guarded_);
    }
    free_.push_back(Stack{slot_base + page_, static_cast<uint32_t>(usable_), static_cast<uint32_t>(slabs_.size() - 1)});
  }
}

Stack StackPool::Allocate() {
  std::lock_guard lock(mu_);
  if (free_.empty()) AddSlab();
  Stack s = free_.back();
  free_.pop_back();
  slabs_[s.slab].used = true;
  if (!free_.empty()) {
    // The next stack's top, where its task's fiber is made: untouched since an earlier
    // run (a chain of 100,000 blocks takes 100,000 in a row), each was a miss at the
    // spawn; asked for now, it arrives before the next one.
    PrefetchLines(free_.back().top() - kFiberTopBytes, kFiberTopBytes);
  }
  return s;
}

void StackPool::Release(Stack stack) {
  std::lock_guard lock(mu_);
  free_.push_back(stack);
}

}  // namespace rill::core
