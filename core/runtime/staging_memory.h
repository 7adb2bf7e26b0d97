// core/runtime/staging_memory.h — a device's page-locked host memory, cached by size.
//
// Contract: a device whose plugin offers page-locked host memory (RillDeviceDef
// allocate_host/free_host, ABI v5) copies to and from it at full speed, but getting it maps
// and locks every page, and CUDA's cudaFreeHost waits for the device. So a block given back
// is kept, by size, and handed out again: a training step that stages the same tensors
// every step locks their memory once. At most kStagingCacheBytes per device type sit
// unused in the cache; a block given back beyond that is freed at once. Thread-safe.
// Cached blocks are not freed at exit, when the device's runtime may already be gone.
#ifndef RILL_CORE_RUNTIME_STAGING_MEMORY_H_
#define RILL_CORE_RUNTIME_STAGING_MEMORY_H_

#include <cstddef>

namespace rill::core {

struct Device;

constexpr size_t kStagingCacheBytes = size_t{1} << 30;

// A 64-byte-aligned block of `bytes` (> 0) of `device`'s page-locked host memory, or
// nullptr when the device has none or cannot give it now: the caller then uses ordinary
// memory, since staging only makes copies faster.
void* TakeStagingMemory(const Device& device, size_t bytes);

// Gives back a block TakeStagingMemory returned for the same device and `bytes`.
void GiveBackStagingMemory(const Device& device, void* block, size_t bytes);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_STAGING_MEMORY_H_
