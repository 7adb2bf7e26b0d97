// core/runtime/small_objects.h — per-thread caches of small memory blocks in front of malloc.
//
// A go block allocates its scopes, variables and small tensors on one worker and frees
// them on another. glibc returns such a block to the allocating thread's arena under that
// arena's lock once its own small per-thread cache is full, so two workers spawning and
// ending go blocks spent a third of their time in malloc and on its locks. These caches
// hand blocks from the freeing worker back to the allocating one in batches instead, as
// the scheduler does with its tasks (and Bonwick's magazines, and Go's mcache, do).
//
// Contract:
//  - AllocateSmall(bytes) returns a block of at least `bytes` (at most kMaxSmallBytes),
//    aligned to alignof(std::max_align_t); it throws std::bad_alloc when memory runs out.
//    FreeSmall(p, bytes) takes it back with the same `bytes` (its size class), on any
//    thread.
//  - Each thread keeps at most 2 × kSmallBatch free blocks per size class; the shared depot
//    at most kSmallDepotBatches batches of kSmallBatch per class. Beyond that, blocks go
//    back to malloc, so what the caches hold is bounded however many objects were made.
//  - A thread's cache goes to the depot when the thread exits; a block freed after that
//    goes straight back to malloc.
//  - Under AddressSanitizer both are malloc and free, so a use after free is still caught.
//
// SmallObjectAllocator<T> is a standard allocator over them (for allocate_shared and node
// containers); it falls back to operator new for requests above kMaxSmallBytes.
#ifndef RILL_CORE_RUNTIME_SMALL_OBJECTS_H_
#define RILL_CORE_RUNTIME_SMALL_OBJECTS_H_

#include <cstddef>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define RILL_SMALL_OBJECT_CACHES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_SMALL_OBJECT_CACHES 0
#endif
#endif
#ifndef RILL_SMALL_OBJECT_CACHES
#define RILL_SMALL_OBJECT_CACHES 1
#endif

namespace rill::core {

inline constexpr bool kSmallObjectCaches = RILL_SMALL_OBJECT_CACHES;
inline constexpr size_t kMaxSmallBytes = 512;
inline constexpr int kSmallBatch = 32;
inline constexpr size_t kSmallDepotBatches = 128;

#if RILL_SMALL_OBJECT_CACHES
// The size class of `bytes`: 32, 48, 64, 96, ... 512 bytes, classes 0 to 8. Inline and
// constexpr, so that an operator new (a constant size) computes it at compile time.
inline constexpr size_t kSmallClassMinShift = 5;  // the smallest class is 1 << this bytes
constexpr size_t SmallClassOf(size_t bytes) {
  if (bytes <= (size_t{1} << kSmallClassMinShift)) return 0;
  const size_t shift = static_cast<size_t>(64 - __builtin_clzll(bytes - 1));  // ceil(log2(bytes))
  const bool three_quarters = bytes <= (size_t{3} << (shift - 2));
  return 2 * (shift - kSmallClassMinShift) - (three_quarters ? 1 : 0);
}
void* AllocateSmallClass(size_t size_class);
void FreeSmallClass(void* p, size_t size_class);
inline void* AllocateSmall(size_t bytes) { return AllocateSmallClass(SmallClassOf(bytes)); }
inline void FreeSmall(void* p, size_t bytes) { FreeSmallClass(p, SmallClassOf(bytes)); }
#else
void* AllocateSmall(size_t bytes);
void FreeSmall(void* p, size_t bytes);
#endif
// Free blocks of `bytes`' size class in the depot (for tests).
size_t SmallDepotBlocks(size_t bytes);

// Turns glibc's fast bins off for the process (mallopt(M_MXFAST, 0)), once; the task
// scheduler calls it when it starts. Blocks beyond the caches' bounds go back to malloc:
// a chain of 10,000 go blocks frees about 100,000 of them at once. Fast bins keep such
// frees unmerged until a larger request consolidates them all (malloc_consolidate and
// unlink_chunk were a fifth of a program daisy chain's time); without them a free merges
// at once and the chain runs in 0.84 of its time. Left alone where the user chose themselves
// (`glibc.malloc.mxfast` in GLIBC_TUNABLES) and where malloc is not glibc's.
void TuneMallocForTasks();

template <class T>
struct SmallObjectAllocator {
  using value_type = T;
  SmallObjectAllocator() = default;
  template <class U>
  SmallObjectAllocator(const SmallObjectAllocator<U>&) {}  // NOLINT: rebinding converts implicitly

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (Cached(bytes)) return static_cast<T*>(AllocateSmall(bytes));
    return static_cast<T*>(::operator new(bytes, std::align_val_t(alignof(T))));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (Cached(bytes)) {
      FreeSmall(p, bytes);
    } else {
      ::operator delete(p, bytes, std::align_val_t(alignof(T)));
    }
  }
  template <class U>
  bool operator==(const SmallObjectAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const SmallObjectAllocator<U>&) const { return false; }

 private:
  // Whether `bytes` of T come from the caches (allocate and deallocate must agree).
  static constexpr bool Cached(size_t bytes) {
    return bytes <= kMaxSmallBytes && alignof(T) <= alignof(std::max_align_t);
  }
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SMALL_OBJECTS_H_
