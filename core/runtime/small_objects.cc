#include "core/runtime/small_objects.h"

#include <malloc.h>
#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::core {
namespace {

void* MallocOrThrow(size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void TuneMallocForTasks() {
#if defined(__GLIBC__) && defined(M_MXFAST)
  static const bool once = [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables == nullptr || std::strstr(tunables, "glibc.malloc.mxfast") == nullptr) mallopt(M_MXFAST, 0);
    return true;
  }();
  (void)once;
#endif
}

}  // namespace rill::core

#if !RILL_SMALL_OBJECT_CACHES

namespace rill::core {

void* AllocateSmall(size_t bytes) { return MallocOrThrow(bytes); }
void FreeSmall(void* p, size_t) { std::free(p); }
size_t SmallDepotBlocks(size_t) { return 0; }

}  // namespace rill::core

#else

namespace rill::core {
namespace {

// Size classes 32, 48, 64, 96, ..., 384, 512 bytes: each power of two and the size halfway
// between it and the next, so a block wastes at most a third of itself (a scope's
// variable entry, 168 bytes, takes 192 instead of 256).
constexpr size_t kClasses = 9;

constexpr size_t ClassBytes(size_t c) {
  const size_t power = size_t{1} << (kSmallClassMinShift + (c + 1) / 2);
  return c % 2 == 1 ? power / 4 * 3 : power;
}
static_assert(ClassBytes(0) == 32 && ClassBytes(5) == 192 && ClassBytes(kClasses - 1) == kMaxSmallBytes);

static_assert(SmallClassOf(32) == 0 && SmallClassOf(33) == 1 && SmallClassOf(192) == 5 &&
              SmallClassOf(kMaxSmallBytes) == kClasses - 1);

// A free block holds the link to the next one: a thread's cache and each depot batch are
// singly linked lists threaded through the blocks themselves.
struct FreeBlock {
  FreeBlock* next;
};

void FreeList(FreeBlock* b) {
  while (b != nullptr) {
    FreeBlock* next = b->next;
    std::free(b);
    b = next;
  }
}

// Full batches (exactly kSmallBatch blocks each) moving between threads.
struct Depot {
  SpinLock mu;
  std::vector<FreeBlock*> batches[kClasses];

  // Keeps `batch` if there is room; else frees it.
  void Put(size_t c, FreeBlock* batch) {
    {
      std::lock_guard lock(mu);
      if (batches[c].size() < kSmallDepotBatches) {
        batches[c].push_back(batch);
        return;
      }
    }
    FreeList(batch);
  }
  size_t Blocks(size_t c) {
    std::lock_guard lock(mu);
    return batches[c].size() * kSmallBatch;
  }
  FreeBlock* Take(size_t c) {
    std::lock_guard lock(mu);
    if (batches[c].empty()) return nullptr;
    FreeBlock* batch = batches[c].back();
    batches[c].pop_back();
    return batch;
  }
};

// Never destroyed: blocks are freed while the process exits too (by other statics'
// destructors, by threads still ending), after any destructor of ours would have run.
Depot& TheDepot() {
  static Depot* depot = [] {
    // Held across fork, as glibc's malloc holds its arenas' locks: a child forked while
    // another thread held it would otherwise find it locked forever.
    pthread_atfork([] { TheDepot().mu.lock(); }, [] { TheDepot().mu.unlock(); }, [] { TheDepot().mu.unlock(); });
    return new Depot;
  }();
  return *depot;
}

// Trivially destructible, so it stays usable after its thread's flusher has run.
struct ThreadCache {
  FreeBlock* head[kClasses];
  int count[kClasses];
  bool flusher_armed;
  bool gone;  // the thread is exiting: frees go to malloc
};
thread_local ThreadCache cache;

// Detaches the first kSmallBatch blocks of the cache's list of class c.
FreeBlock* DetachBatch(ThreadCache& t, size_t c) {
  FreeBlock* first = t.head[c];
  FreeBlock* last = first;
  for (int i = 1; i < kSmallBatch; ++i) last = last->next;
  t.head[c] = last->next;
  last->next = nullptr;
  t.count[c] -= kSmallBatch;
  return first;
}

struct Flusher {
  ~Flusher() {
    ThreadCache& t = cache;
    t.gone = true;
    for (size_t c = 0; c < kClasses; ++c) {
      while (t.count[c] >= kSmallBatch) TheDepot().Put(c, DetachBatch(t, c));
      FreeList(t.head[c]);
      t.head[c] = nullptr;
      t.count[c] = 0;
    }
  }
};
thread_local Flusher flusher;

// Before a thread's cache first holds a block, so that no block stays behind in it.
inline void ArmFlusher(ThreadCache& t) {
  if (!t.flusher_armed) {
    t.flusher_armed = true;
    (void)&flusher;  // constructs it, so its destructor runs at this thread's exit
  }
}

}  // namespace

size_t SmallDepotBlocks(size_t bytes) { return TheDepot().Blocks(SmallClassOf(bytes)); }

void* AllocateSmallClass(size_t c) {
  ThreadCache& t = cache;
  if (FreeBlock* b = t.head[c]) {
    t.head[c] = b->next;
    --t.count[c];
    return b;
  }
  if (!t.gone) {
    ArmFlusher(t);
    if (FreeBlock* batch = TheDepot().Take(c)) {
      t.head[c] = batch->next;
      t.count[c] = kSmallBatch - 1;
      return batch;
    }
  }
  return MallocOrThrow(ClassBytes(c));
}

void FreeSmallClass(void* p, size_t c) {
  if (p == nullptr) return;
  ThreadCache& t = cache;
  if (t.gone) {
    std::free(p);
    return;
  }
  ArmFlusher(t);
  auto* b = static_cast<FreeBlock*>(p);
  b->next = t.head[c];
  t.head[c] = b;
  if (++t.count[c] == 2 * kSmallBatch) TheDepot().Put(c, DetachBatch(t, c));
}

}  // namespace rill::core

#endif  // RILL_SMALL_OBJECT_CACHES
