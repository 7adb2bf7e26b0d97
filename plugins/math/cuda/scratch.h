// plugins/math/cuda/scratch.h — device memory a kernel needs for itself while it runs
// (partial sums, a copy of an input it overwrites), stream-ordered on the legacy default
// stream that every kernel here is launched on: freeing it does not wait for the GPU.
//
// Scratch comes from the device's default memory pool. By default that pool returns
// freed memory to the driver at every synchronization, so the next allocation maps memory
// again (this made a 16M-element mean ~3x slower); the pool is told to keep up to
// kScratchKeptBytes instead.
#ifndef RILL_PLUGINS_MATH_CUDA_SCRATCH_H_
#define RILL_PLUGINS_MATH_CUDA_SCRATCH_H_

#include <cstdint>
#include <mutex>

#include "cuda_check.h"

namespace rill::math::cuda {

constexpr uint64_t kScratchKeptBytes = uint64_t{256} << 20;
constexpr int kMaxScratchDevices = 64;

// Makes the current device's default pool keep freed scratch memory, once per device.
inline void KeepScratchMemory() {
  static std::once_flag once[kMaxScratchDevices];
  int device = 0;
  CudaCheck(cudaGetDevice(&device), "cudaGetDevice");
  if (device < 0 || device >= kMaxScratchDevices) return;
  std::call_once(once[device], [device] {
    cudaMemPool_t pool = nullptr;
    uint64_t keep = kScratchKeptBytes;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  });
}

// `count` elements of T on the current device (at least one, so the pointer is valid).
template <class T> T* ScratchAlloc(int64_t count) {
  KeepScratchMemory();
  void* p = nullptr;
  CudaCheck(cudaMallocAsync(&p, sizeof(T) * static_cast<size_t>(count > 0 ? count : 1), 0), "cudaMallocAsync");
  return static_cast<T*>(p);
}

// Frees scratch once the work already launched on the stream has used it.
inline void ScratchFree(void* p) { cudaFreeAsync(p, 0); }

// `count` elements of scratch (none: null) for the span of one call.
template <class T> class ScratchBuffer {
 public:
  explicit ScratchBuffer(int64_t count) : p_(count > 0 ? ScratchAlloc<T>(count) : nullptr) {}
  ~ScratchBuffer() {
    if (p_ != nullptr) ScratchFree(p_);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  T* get() const { return p_; }

 private:
  T* p_;
};

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_SCRATCH_H_
