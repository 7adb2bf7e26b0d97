// core/runtime/small_objects.h — a small-object allocator for what go blocks make and free.
//
// A go block allocates its scope, variables and small tensors on one worker and frees them
// on another, and a chain of go blocks makes a hundred thousand of them before freeing any.
// glibc spent a third of such a program's time in malloc and free (its per-thread caches
// hold 7 blocks a size; past them every free merged chunks). Here memory comes in pages of
// kSmallPageBytes, each carved into blocks of one size class and owned by one thread, as in
// mimalloc: the owner allocates from the page's own free list, or carves the part never
// used in address order (so a growing chain gets fresh, sequential memory); a block freed
// by another thread goes onto the page's remote list, lock-free, which the owner takes
// over when the page runs out. In front of the pages, each thread hands out first the
// blocks it freed last (up to 64 a class), whichever page they are on: they are still in
// its core's cache. A page none of whose blocks is live goes back to a shared pool and is
// carved afresh by whichever thread takes it next.
//
// Contract:
//  - AllocateSmall(bytes) returns a block of at least `bytes` (at most kMaxSmallBytes),
//    aligned to alignof(std::max_align_t); it throws std::bad_alloc when memory runs out.
//    FreeSmall(p, bytes) takes it back with the same `bytes` (its size class), on any
//    thread, including threads that are exiting.
//  - A page is held while any block of it is live or in a thread's cache: a freed block
//    is reused by the thread that freed it or by its page's owner. Empty pages past the
//    first kSmallResidentEmptyPages go back to the kernel (all but the first 4 KiB of
//    each, to take when it needs memory: MADV_FREE) once the pool has taken and put none
//    for a second, from the scavenger's thread (core/runtime/scavenger.h). Address space
//    is reserved in segments of 64 pages and never unmapped.
//  - An exiting thread hands its pages on: empty ones to the pool, others (their blocks
//    still live elsewhere) to the next thread that needs a page of that class.
//  - Under AddressSanitizer both are malloc and free, so a use after free is still caught.
//
// SmallObjectAllocator<T> is a standard allocator over them (for allocate_shared and node
// containers); it falls back to operator new for requests above kMaxSmallBytes.
#ifndef RILL_CORE_RUNTIME_SMALL_OBJECTS_H_
#define RILL_CORE_RUNTIME_SMALL_OBJECTS_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

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
inline constexpr size_t kSmallPageBytes = size_t{64} << 10;
inline constexpr size_t kSmallPageHeaderBytes = 128;     // a page's first block starts here
inline constexpr size_t kSmallResidentEmptyPages = 256;  // 16 MiB

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
// The shared pool's pages (for tests): empty ones and how many of those are resident.
struct SmallPageCounts {
  size_t empty = 0;
  size_t empty_resident = 0;
};
SmallPageCounts CountSmallPages();
// The pages that exiting threads left with live blocks (for tests), by address. Which
// pages, not how many: any thread's exit or first page of a class changes the count.
std::vector<uintptr_t> AbandonedSmallPages();

template <class T> struct SmallObjectAllocator {
  using value_type = T;
  SmallObjectAllocator() = default;
  template <class U> SmallObjectAllocator(const SmallObjectAllocator<U>&) {}  // NOLINT: rebinding converts implicitly

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
  template <class U> bool operator==(const SmallObjectAllocator<U>&) const { return true; }
  template <class U> bool operator!=(const SmallObjectAllocator<U>&) const { return false; }

 private:
  // Whether `bytes` of T come from the caches (allocate and deallocate must agree).
  static constexpr bool Cached(size_t bytes) {
    return bytes <= kMaxSmallBytes && alignof(T) <= alignof(std::max_align_t);
  }
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SMALL_OBJECTS_H_
