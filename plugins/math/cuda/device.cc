// The CUDA device as the host sees it: count, allocate, free, copy, and page-locked host
// memory to stage transfers in. Every call on a device selects it first, since the
// calling thread's current device is not ours to assume.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

int32_t DeviceCount() {
  int n = 0;
  // No driver or no GPU is not an error here: there are simply no devices.
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

RillStatus* Allocate(int32_t device_id, size_t bytes, void** out) {
  return Guard([&] {
    CudaCheck(cudaSetDevice(device_id), "cudaSetDevice");
    CudaCheck(cudaMalloc(out, bytes), "cudaMalloc");
  });
}

void Free(int32_t device_id, void* ptr) {
  if (cudaSetDevice(device_id) == cudaSuccess) cudaFree(ptr);
}

RillStatus* Copy(int32_t device_id, void* dst, const void* src, size_t bytes, int32_t kind) {
  return Guard([&] {
    CudaCheck(cudaSetDevice(device_id), "cudaSetDevice");
    const cudaMemcpyKind k = kind == RILL_COPY_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                             : kind == RILL_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                                : cudaMemcpyDeviceToDevice;
    CudaCheck(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy");  // synchronous: complete on return
  });
}

// Page-locked and portable, so any device's copies run at full speed from it; aligned to
// a page, which covers the host's 64 bytes.
RillStatus* AllocateHost(size_t bytes, void** out) {
  return Guard([&] { CudaCheck(cudaHostAlloc(out, bytes, cudaHostAllocPortable), "cudaHostAlloc"); });
}

void FreeHost(void* ptr) { cudaFreeHost(ptr); }

}  // namespace

void RegisterDevice(Registrar& r) {
  RillDeviceDef def{};
  def.device_type = RILL_CUDA;
  def.name = "CUDA";
  def.device_count = &DeviceCount;
  def.allocate = &Allocate;
  def.free = &Free;
  def.copy = &Copy;
  def.allocate_host = &AllocateHost;
  def.free_host = &FreeHost;
  r.Device(def);
}

}  // namespace rill::math::cuda
