// plugins/math/cuda/cuda_check.h — CUDA and cuBLAS failures as rill::Error, and launch
// geometry for the elementwise kernels.
#ifndef RILL_PLUGINS_MATH_CUDA_CUDA_CHECK_H_
#define RILL_PLUGINS_MATH_CUDA_CUDA_CHECK_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::math::cuda {

inline void CudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(std::string(what) + ": " + cudaGetErrorString(e),
                e == cudaErrorMemoryAllocation ? RILL_RESOURCE_EXHAUSTED : RILL_INTERNAL);
  }
}

// Reports a failed kernel launch (bad configuration, no device) at the launch site.
inline void CheckLaunch(const char* kernel) { CudaCheck(cudaGetLastError(), kernel); }

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n elements.
inline int Blocks(int64_t n) { return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 4096)); }

// Makes the kernel's device current on this thread (kernels run on whichever thread runs
// the block).
inline void UseDevice(KernelContext& ctx) { CudaCheck(cudaSetDevice(ctx.device_id()), "cudaSetDevice"); }

// This thread's handle of a library (cuBLAS, cuDNN) for `device`: made by `create(&h)` on
// first use and kept for the thread's life, as such handles must not be shared by
// concurrent threads. `check(status, what)` reports a failed create.
template <class Handle, class Create, class Check>
Handle ThreadHandle(int32_t device, Create create, Check check, const char* what) {
  thread_local std::map<int32_t, Handle> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  Handle h = nullptr;
  check(create(&h), what);
  handles.emplace(device, h);
  return h;
}

// Allocates `out` on the kernel's device.
template <class T> T* AllocateOnDevice(KernelContext& ctx, Tensor& out, const std::vector<int64_t>& dims) {
  return static_cast<T*>(out.Allocate(DataTypeOf<T>::value, dims.data(), dims.size(), RILL_CUDA, ctx.device_id()));
}

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_CUDA_CHECK_H_
