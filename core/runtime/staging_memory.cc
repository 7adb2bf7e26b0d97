#include "core/runtime/staging_memory.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/abi/status.h"
#include "core/log.h"
#include "core/runtime/device.h"
#include "rill/abi.h"

namespace rill::core {
namespace {

// Blocks are cached by exact size: a step stages the same shapes every time, so exact
// sizes hit, and no block is handed out larger than asked (pinned memory is scarce).
struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // guarded by mu
  size_t cached_bytes = 0;                                     // guarded by mu
};

Cache& CacheOf(const Device& device) {
  static Cache* caches = new Cache[RILL_MAX_DEVICE_TYPES];  // never freed: see the header
  return caches[device.device_type];
}

}  // namespace

void* TakeStagingMemory(const Device& device, size_t bytes) {
  if (device.allocate_host == nullptr) return nullptr;
  Cache& cache = CacheOf(device);
  {
    std::lock_guard lock(cache.mu);
    auto it = cache.free_blocks.find(bytes);
    if (it != cache.free_blocks.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      cache.cached_bytes -= bytes;
      return block;
    }
  }
  void* block = nullptr;
  if (RillStatus* st = device.allocate_host(bytes, &block)) {
    Logger().debug("{} gave no page-locked memory for {} bytes ({}): staging in ordinary memory", device.name, bytes,
                   st->message);
    delete st;
    return nullptr;
  }
  if (block != nullptr && reinterpret_cast<uintptr_t>(block) % 64 != 0) {
    device.free_host(block);  // the host promises 64-byte-aligned tensors
    return nullptr;
  }
  return block;
}

void GiveBackStagingMemory(const Device& device, void* block, size_t bytes) {
  Cache& cache = CacheOf(device);
  {
    std::lock_guard lock(cache.mu);
    if (cache.cached_bytes + bytes <= kStagingCacheBytes) {
      cache.free_blocks[bytes].push_back(block);
      cache.cached_bytes += bytes;
      return;
    }
  }
  device.free_host(block);
}

}  // namespace rill::core
