#include "core/runtime/small_objects.h"

#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "core/runtime/scavenger.h"
#include "rill/spin_lock.hpp"

#if !RILL_SMALL_OBJECT_CACHES

namespace rill::core {

void* AllocateSmall(size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void FreeSmall(void* p, size_t) { std::free(p); }
SmallPageCounts CountSmallPages() { return {}; }
std::vector<uintptr_t> AbandonedSmallPages() { return {}; }

}  // namespace rill::core

#else

// How the pages work (the invariants every function below keeps):
//  - A page is kSmallPageBytes, aligned to its size, so a block's page is its address
//    rounded down. Its header (Page) comes first; blocks of one size class follow.
//  - A page in use belongs to one heap (a thread's, or the orphan heap): only that heap
//    touches `local`, `used`, `carved` and the list links. Other threads touch `remote`,
//    `owner` and `full` only, all atomic, and those sit on the header's first cache line,
//    away from the owner's.
//  - `used` counts the blocks handed out that the owner has not seen come back: a block
//    freed by another thread counts until the owner takes the remote list over
//    (Collect). So a page is released only when no block of it is live, and no other
//    thread can be about to touch it but to read its atomics (pages are never unmapped,
//    so a stale read sees a valid header).
//  - A block in a thread's cache (its last frees, handed out first) counts as out for its
//    page, like a live one, until the cache gives it back (ReturnToPages).
//  - A page of a heap is its class's `current` page, or on its `available` list (it has
//    local free blocks), or on its `full` list (`full` set: it had none when last
//    looked at). A remote free to a full page sets its owner's `full_freed` hint, which
//    tells the owner to look at its full pages again before taking a new one. The flag
//    and the remote list are a Dekker pair (seq_cst on both sides), so a free can never
//    land unseen on a page just marked full.
//  - A thread that exits abandons its pages that still have live blocks to the depot; the
//    next heap that needs a page of that class adopts one. Heaps are never destroyed
//    (a freeing thread may still read a heap pointer it found in a page), only reused.
namespace rill::core {
namespace {

// Size classes 32, 48, 64, 96, ..., 384, 512 bytes: each power of two and the size halfway
// between it and the next, so a block wastes at most a third of itself.
constexpr size_t kClasses = 9;

constexpr size_t ClassBytes(size_t c) {
  const size_t power = size_t{1} << (kSmallClassMinShift + (c + 1) / 2);
  return c % 2 == 1 ? power / 4 * 3 : power;
}
static_assert(ClassBytes(0) == 32 && ClassBytes(5) == 192 && ClassBytes(kClasses - 1) == kMaxSmallBytes);

static_assert(SmallClassOf(32) == 0 && SmallClassOf(33) == 1 && SmallClassOf(192) == 5 &&
              SmallClassOf(kMaxSmallBytes) == kClasses - 1);

constexpr size_t kSegmentPages = 64;           // pages reserved from the kernel at a time
constexpr size_t kResidentHeaderBytes = 4096;  // what an advised-away empty page keeps
static_assert(kSmallPageBytes % kResidentHeaderBytes == 0);

struct FreeBlock {
  FreeBlock* next;
};

struct Heap;

struct Page {
  // What other threads touch.
  // Blocks freed by other threads, a lock-free stack, and how many: the count in the high
  // half, the newest block's offset in the page (0: none) in the low half. One word, so
  // the owner learns how many came back without walking them (cold lines, all of them).
  std::atomic<uint64_t> remote{0};
  std::atomic<Heap*> owner{nullptr};  // null while empty or abandoned
  std::atomic<bool> full{false};      // on its owner's full list
  // The owner's (or the depot's, while the page is in it).
  alignas(64) FreeBlock* local = nullptr;
  uint32_t used = 0;    // blocks out, as the owner knows
  uint32_t carved = 0;  // blocks handed out at least once since the page was formatted
  uint32_t capacity = 0;
  uint32_t block_bytes = 0;
  Page* prev = nullptr;
  Page* next = nullptr;

  char* base() { return reinterpret_cast<char*>(this) + kSmallPageHeaderBytes; }
};
static_assert(sizeof(Page) <= kSmallPageHeaderBytes);

Page* PageOf(void* block) {
  return reinterpret_cast<Page*>(reinterpret_cast<uintptr_t>(block) & ~uintptr_t{kSmallPageBytes - 1});
}

// An intrusive doubly linked list of pages.
struct PageList {
  Page* head = nullptr;
  size_t size = 0;

  void Push(Page* p) {
    p->prev = nullptr;
    p->next = head;
    if (head != nullptr) head->prev = p;
    head = p;
    ++size;
  }
  void Remove(Page* p) {
    if (p->prev != nullptr) p->prev->next = p->next;
    else head = p->next;
    if (p->next != nullptr) p->next->prev = p->prev;
    p->prev = p->next = nullptr;
    --size;
  }
  Page* Pop() {
    Page* p = head;
    if (p != nullptr) Remove(p);
    return p;
  }
  // Keeps the first n pages and returns the rest, in order.
  PageList SplitAfter(size_t n) {
    PageList rest;
    if (size <= n) return rest;
    Page* last_kept = nullptr;
    Page* first_cut = head;
    for (size_t i = 0; i < n; ++i) last_kept = first_cut, first_cut = first_cut->next;
    if (last_kept != nullptr) last_kept->next = nullptr;
    else head = nullptr;
    first_cut->prev = nullptr;
    rest.head = first_cut;
    rest.size = size - n;
    size = n;
    return rest;
  }
};

struct ClassPages {
  Page* current = nullptr;
  PageList available;
  PageList full;
};

struct Heap {
  ClassPages classes[kClasses];
  std::atomic<bool> full_freed[kClasses] = {};
  Heap* next_unused = nullptr;  // in the depot's list of heaps no thread uses
};

// Empty pages, abandoned pages and unused heaps, shared by all threads. Empty pages past
// the first kSmallResidentEmptyPages go back to the kernel only once the pool has taken
// and put none for kReleaseAfter, from the scavenger's thread: a run that empties a few
// thousand pages and the next run that takes them again (a benchmark's repetitions) then
// make no madvise call (one a page, each flushing the TLB of every core the process runs
// on).
struct Depot final : Scavengeable {
  static constexpr Clock::duration kReleaseAfter = std::chrono::seconds(1);

  SpinLock mu;
  PageList empty;              // resident, the most recently emptied first
  PageList released;           // all but their first kResidentHeaderBytes given back (MADV_FREE)
  Clock::time_point last_use;  // of `empty`, while it holds more than the kept pages
  bool watched = false;        // by the scavenger, which will release what is past them
  PageList abandoned[kClasses];
  Heap* unused_heaps = nullptr;
  char* fresh = nullptr;  // the rest of the newest segment: pages never touched
  char* fresh_end = nullptr;

  // An empty page: pooled (resident ones first), or fresh from a segment (the kernel's
  // zero pages until written).
  Page* TakeEmpty() {
    {
      std::lock_guard lock(mu);
      if (Page* p = empty.Pop()) {
        if (empty.size >= kSmallResidentEmptyPages) last_use = Clock::now();
        return p;
      }
      if (Page* p = released.Pop()) return p;
      if (fresh != fresh_end) return NewPageLocked();
    }
    void* segment = ReserveSegment();
    std::lock_guard lock(mu);
    // Another thread may have reserved one meanwhile: the older rest is given up (never
    // touched, so it costs address space only).
    fresh = static_cast<char*>(segment);
    fresh_end = fresh + kSegmentPages * kSmallPageBytes;
    return NewPageLocked();
  }
  void PutEmpty(Page* p) {
    bool watch = false;
    {
      std::lock_guard lock(mu);
      empty.Push(p);
      if (empty.size > kSmallResidentEmptyPages) {
        last_use = Clock::now();
        watch = !watched;
        watched = true;
      }
    }
    if (watch) Scavenger::Get().Watch(this);  // after unlocking: see the scavenger's lock order
  }
  // On the scavenger's thread: gives back the pages past the kept ones once the pool has
  // been idle for kReleaseAfter. MADV_FREE, as the stack pool does: the kernel takes the
  // memory only when it needs it, so a page carved again before that costs no page faults.
  Clock::time_point ReleaseIfIdle(Clock::time_point now) override {
    PageList past;
    {
      std::lock_guard lock(mu);
      if (empty.size > kSmallResidentEmptyPages && now - last_use < kReleaseAfter) return last_use + kReleaseAfter;
      past = empty.SplitAfter(kSmallResidentEmptyPages);  // the least recently emptied
    }
    // Out of every list meanwhile, so no thread carves them while they are advised.
    for (Page* p = past.head; p != nullptr; p = p->next) {
      madvise(reinterpret_cast<char*>(p) + kResidentHeaderBytes, kSmallPageBytes - kResidentHeaderBytes, MADV_FREE);
    }
    std::lock_guard lock(mu);
    while (Page* p = past.Pop()) released.Push(p);
    watched = false;  // the next PutEmpty past the kept pages watches the pool again
    return Clock::time_point::max();
  }
  Page* TakeAbandoned(size_t c) {
    std::lock_guard lock(mu);
    return abandoned[c].Pop();
  }
  void PutAbandoned(size_t c, Page* p) {
    std::lock_guard lock(mu);
    abandoned[c].Push(p);
  }
  Heap* TakeHeap() {
    {
      std::lock_guard lock(mu);
      if (Heap* h = unused_heaps) {
        unused_heaps = h->next_unused;
        return h;
      }
    }
    return new Heap;  // never deleted: see the invariants above
  }
  void PutHeap(Heap* h) {
    std::lock_guard lock(mu);
    h->next_unused = unused_heaps;
    unused_heaps = h;
  }

 private:
  Page* NewPageLocked() {
    auto* p = new (fresh) Page;
    fresh += kSmallPageBytes;
    return p;
  }
  static void* ReserveSegment() {
    // Reserve one page more and trim, so that the pages are aligned to their size.
    const size_t bytes = (kSegmentPages + 1) * kSmallPageBytes;
    void* raw = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kSmallPageBytes - 1) & ~uintptr_t{kSmallPageBytes - 1};
    if (aligned != start) munmap(raw, aligned - start);
    const uintptr_t end = aligned + kSegmentPages * kSmallPageBytes;
    if (start + bytes != end) munmap(reinterpret_cast<void*>(end), start + bytes - end);
    return reinterpret_cast<void*>(aligned);
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

constexpr uint64_t kOneRemote = uint64_t{1} << 32;

FreeBlock* RemoteHead(Page* p, uint64_t word) {
  const auto offset = static_cast<uint32_t>(word);
  return offset == 0 ? nullptr : reinterpret_cast<FreeBlock*>(reinterpret_cast<char*>(p) + offset);
}

// Takes the page's remote list over into its local one; whether that gave it any block.
bool Collect(Page* p) {
  const uint64_t word = p->remote.exchange(0, std::memory_order_seq_cst);
  if (word == 0) return false;
  FreeBlock* r = RemoteHead(p, word);
  if (p->local != nullptr) {  // only on an adopted page, which may have both
    FreeBlock* last = r;
    while (last->next != nullptr) last = last->next;
    last->next = p->local;
  }
  p->local = r;
  p->used -= static_cast<uint32_t>(word >> 32);
  return true;
}

// Counts the page's remotely freed blocks as back but leaves them on the remote list (for
// whoever adopts the page): what an exiting thread needs to tell an empty page from one
// with live blocks, without touching the blocks.
void CountRemote(Page* p) {
  uint64_t word = p->remote.load(std::memory_order_relaxed);
  while (word >= kOneRemote && !p->remote.compare_exchange_weak(word, static_cast<uint32_t>(word),
                                                                std::memory_order_seq_cst, std::memory_order_relaxed)) {
  }
  p->used -= static_cast<uint32_t>(word >> 32);
}

void Format(Page* p, Heap* h, size_t c) {
  p->remote.store(0, std::memory_order_relaxed);  // what was on it is free with the rest
  p->local = nullptr;
  p->used = 0;
  p->carved = 0;
  p->block_bytes = static_cast<uint32_t>(ClassBytes(c));
  p->capacity = static_cast<uint32_t>((kSmallPageBytes - kSmallPageHeaderBytes) / p->block_bytes);
  p->full.store(false, std::memory_order_relaxed);
  p->owner.store(h, std::memory_order_release);
}

void Release(Page* p) {
  p->owner.store(nullptr, std::memory_order_release);
  p->full.store(false, std::memory_order_relaxed);
  TheDepot().PutEmpty(p);
}

// A block of the page, which has one (local or not yet carved); counts it out.
void* TakeBlock(Page* p) {
  ++p->used;
  if (FreeBlock* b = p->local) {
    p->local = b->next;
    return b;
  }
  return p->base() + static_cast<size_t>(p->carved++) * p->block_bytes;
}

bool HasBlock(const Page* p) { return p->local != nullptr || p->carved < p->capacity; }

// Looks at the heap's full pages of class c again: those that got blocks back leave the
// full list. One that has all its blocks back is kept to be carved afresh, the others go
// to the pool: the heap is about to need a page, not many.
void SweepFull(Heap* h, size_t c) {
  ClassPages& cp = h->classes[c];
  Page* spare = nullptr;
  for (Page* p = cp.full.head; p != nullptr;) {
    Page* next = p->next;
    if (Collect(p)) {
      cp.full.Remove(p);
      p->full.store(false, std::memory_order_relaxed);
      if (p->used != 0) {
        cp.available.Push(p);
      } else if (spare == nullptr) {
        Format(p, h, c);
        spare = p;
      } else {
        Release(p);
      }
    }
    p = next;
  }
  if (spare != nullptr) cp.available.Push(spare);
}

// The allocation when the current page has no block at hand.
void* AllocateFromNewPage(Heap* h, size_t c) {
  ClassPages& cp = h->classes[c];
  if (Page* p = cp.current) {
    if (Collect(p)) return TakeBlock(p);
    // Marked full before the last look at its remote list: a free that the look misses
    // sees the mark and raises the hint (the Dekker pair in the invariants above).
    p->full.store(true, std::memory_order_seq_cst);
    if (Collect(p)) {
      p->full.store(false, std::memory_order_relaxed);
      return TakeBlock(p);
    }
    cp.full.Push(p);
    cp.current = nullptr;
  }
  if (h->full_freed[c].exchange(false, std::memory_order_relaxed)) SweepFull(h, c);
  Page* p = cp.available.Pop();
  if (p == nullptr) {
    if ((p = TheDepot().TakeAbandoned(c)) != nullptr) {
      p->owner.store(h, std::memory_order_release);
      Collect(p);
      if (p->used == 0) {
        Format(p, h, c);  // nothing of it is live: carve it in address order again
      } else if (!HasBlock(p)) {
        p->full.store(true, std::memory_order_seq_cst);
        if (!Collect(p)) {
          cp.full.Push(p);
          return AllocateFromNewPage(h, c);
        }
        p->full.store(false, std::memory_order_relaxed);
      }
    } else {
      p = TheDepot().TakeEmpty();
      Format(p, h, c);
    }
  }
  cp.current = p;
  return TakeBlock(p);
}

void FreeLocal(Heap* h, Page* p, FreeBlock* b, size_t c) {
  b->next = p->local;
  p->local = b;
  --p->used;
  ClassPages& cp = h->classes[c];
  if (p == cp.current) return;
  const bool was_full = p->full.load(std::memory_order_relaxed);
  if (p->used == 0) {
    (was_full ? cp.full : cp.available).Remove(p);
    Release(p);
  } else if (was_full) {
    cp.full.Remove(p);
    p->full.store(false, std::memory_order_relaxed);
    cp.available.Push(p);
  }
}

// Pushes the chain first..last, n blocks of page p, onto its remote list.
void FreeRemote(Page* p, FreeBlock* first, FreeBlock* last, uint32_t n, size_t c) {
  const auto offset = static_cast<uint32_t>(reinterpret_cast<char*>(first) - reinterpret_cast<char*>(p));
  uint64_t word = p->remote.load(std::memory_order_relaxed);
  do {
    last->next = RemoteHead(p, word);
  } while (!p->remote.compare_exchange_weak(word, (word >> 32 << 32) + n * kOneRemote + offset,
                                            std::memory_order_seq_cst, std::memory_order_relaxed));
  if (p->full.load(std::memory_order_seq_cst)) {
    if (Heap* owner = p->owner.load(std::memory_order_acquire))
      owner->full_freed[c].store(true, std::memory_order_relaxed);
  }
}

// Gives the list of blocks of class c back to their pages: to the page's own list when
// this thread's heap `h` owns it, else to its remote list, a run of blocks of one page with
// one push.
void ReturnToPages(Heap* h, FreeBlock* list, size_t c) {
  while (list != nullptr) {
    Page* p = PageOf(list);
    if (h != nullptr && p->owner.load(std::memory_order_relaxed) == h) {
      // Only this thread stores its own heap into a page, so an equal owner is a stable one.
      FreeBlock* next = list->next;
      FreeLocal(h, p, list, c);
      list = next;
      continue;
    }
    FreeBlock* last = list;
    uint32_t n = 1;
    for (; last->next != nullptr && PageOf(last->next) == p; ++n) last = last->next;
    FreeBlock* next = last->next;
    FreeRemote(p, list, last, n, c);
    list = next;
  }
}

// Hands every page of the heap on: released when nothing of it is live, else abandoned.
void Abandon(Heap* h) {
  for (size_t c = 0; c < kClasses; ++c) {
    ClassPages& cp = h->classes[c];
    auto hand_on = [&](Page* p) {
      CountRemote(p);
      if (p->used == 0) {
        Release(p);
        return;
      }
      p->owner.store(nullptr, std::memory_order_release);
      p->full.store(false, std::memory_order_relaxed);
      TheDepot().PutAbandoned(c, p);
    };
    if (cp.current != nullptr) hand_on(cp.current);
    cp.current = nullptr;
    while (Page* p = cp.available.Pop()) hand_on(p);
    while (Page* p = cp.full.Pop()) hand_on(p);
    h->full_freed[c].store(false, std::memory_order_relaxed);
  }
}

// The heap of threads whose own heap is gone (they are exiting), under its lock.
struct OrphanHeap {
  SpinLock mu;
  Heap heap;
};
OrphanHeap& TheOrphanHeap() {
  static OrphanHeap* orphan = [] {
    pthread_atfork([] { TheOrphanHeap().mu.lock(); }, [] { TheOrphanHeap().mu.unlock(); },
                   [] { TheOrphanHeap().mu.unlock(); });
    return new OrphanHeap;
  }();
  return *orphan;
}

// A thread's blocks freed last, kept to be handed out first (they are in its cache): up to
// kCacheBlocks a class, past which all but the newest kCacheKeep go back to their pages.
constexpr uint32_t kCacheBlocks = 64;
constexpr uint32_t kCacheKeep = 32;

// Trivially destructible, so it stays readable after its thread's Abandoner has run.
struct ThreadHeap {
  Heap* heap;
  bool gone;     // the thread is exiting: it allocates from the orphan heap and caches nothing
  bool caching;  // its Abandoner is constructed and has not run: frees go to `cached`
  FreeBlock* cached[kClasses];
  uint32_t cached_count[kClasses];
};
thread_local ThreadHeap tl;

struct Abandoner {
  ~Abandoner() {
    Heap* h = tl.heap;
    tl.gone = true;
    tl.caching = false;
    for (size_t c = 0; c < kClasses; ++c) {
      FreeBlock* list = tl.cached[c];
      tl.cached[c] = nullptr;
      tl.cached_count[c] = 0;
      ReturnToPages(h, list, c);
    }
    tl.heap = nullptr;
    if (h != nullptr) {
      Abandon(h);
      TheDepot().PutHeap(h);
    }
  }
};
thread_local Abandoner abandoner;

// Before the thread first holds a page or a cached block, so that none stays behind.
// Called only while the thread is not gone.
void Arm() {
  if (!tl.caching) {
    tl.caching = true;
    (void)&abandoner;  // constructs it, so its destructor runs at this thread's exit
  }
}

void PushCached(FreeBlock* b, size_t c) {
  b->next = tl.cached[c];
  tl.cached[c] = b;
  ++tl.cached_count[c];
}

// Out of line, as FreeSlow: inlined, it would make the fast path save registers.
[[gnu::noinline]] void* AllocateSlow(size_t c) {
  if (tl.gone) {
    OrphanHeap& o = TheOrphanHeap();
    std::lock_guard lock(o.mu);
    return AllocateFromNewPage(&o.heap, c);
  }
  if (tl.heap == nullptr) {
    Arm();
    tl.heap = TheDepot().TakeHeap();
  }
  return AllocateFromNewPage(tl.heap, c);
}

// A free that the thread's cache does not take as it is: the cache is full (or not made
// yet), or the thread is exiting.
[[gnu::noinline]] void FreeSlow(FreeBlock* b, size_t c) {
  if (tl.gone) {
    b->next = nullptr;
    ReturnToPages(nullptr, b, c);
    return;
  }
  Arm();
  FreeBlock* rest = nullptr;
  if (tl.cached_count[c] >= kCacheBlocks) {
    // Keep b and the newest kCacheKeep - 1 cached; the rest go back to their pages.
    FreeBlock* keep_last = tl.cached[c];
    for (uint32_t i = 2; i < kCacheKeep; ++i) keep_last = keep_last->next;
    rest = keep_last->next;
    keep_last->next = nullptr;
    tl.cached_count[c] = kCacheKeep - 1;
  }
  PushCached(b, c);
  ReturnToPages(tl.heap, rest, c);
}

}  // namespace

void* AllocateSmallClass(size_t c) {
  if (FreeBlock* b = tl.cached[c]) {
    tl.cached[c] = b->next;
    --tl.cached_count[c];
    return b;
  }
  if (Heap* h = tl.heap) {
    if (Page* p = h->classes[c].current; p != nullptr && HasBlock(p)) return TakeBlock(p);
  }
  return AllocateSlow(c);
}

void FreeSmallClass(void* block, size_t c) {
  if (block == nullptr) return;
  auto* b = static_cast<FreeBlock*>(block);
  if (tl.caching && tl.cached_count[c] < kCacheBlocks) {
    PushCached(b, c);
    return;
  }
  FreeSlow(b, c);
}

SmallPageCounts CountSmallPages() {
  Depot& d = TheDepot();
  std::lock_guard lock(d.mu);
  SmallPageCounts counts;
  counts.empty = d.empty.size + d.released.size;
  counts.empty_resident = d.empty.size;
  return counts;
}

std::vector<uintptr_t> AbandonedSmallPages() {
  Depot& d = TheDepot();
  std::vector<uintptr_t> pages;
  std::lock_guard lock(d.mu);
  for (const PageList& l : d.abandoned) {
    for (Page* p = l.head; p != nullptr; p = p->next) pages.push_back(reinterpret_cast<uintptr_t>(p));
  }
  return pages;
}

}  // namespace rill::core

#endif  // RILL_SMALL_OBJECT_CACHES
