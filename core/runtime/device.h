// core/runtime/device.h — devices other than the CPU, driven by plugins.
//
// Contract: a plugin registers a device type (RillDeviceDef); once its registration is
// committed the device is installed process-wide, since memory on it can be held by any
// tensor anywhere. Installing the same device type again from the same plugin (a second
// registry in one process) is a no-op; from another plugin it is an error naming both.
// Installed devices are never removed.
#ifndef RILL_CORE_RUNTIME_DEVICE_H_
#define RILL_CORE_RUNTIME_DEVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/abi.h"

namespace rill::core {

struct Device {
  int32_t device_type = RILL_CUDA;
  std::string name;
  std::string plugin;
  int32_t (*device_count)(void) = nullptr;
  RillStatus* (*allocate)(int32_t device_id, size_t bytes, void** out) = nullptr;
  void (*free)(int32_t device_id, void* ptr) = nullptr;
  RillStatus* (*copy)(int32_t device_id, void* dst, const void* src, size_t bytes, int32_t kind) = nullptr;
  // Page-locked host memory for staging transfers (v5); both null when the device has none.
  RillStatus* (*allocate_host)(size_t bytes, void** out) = nullptr;
  void (*free_host)(void* ptr) = nullptr;
};

Device DeviceFromAbi(const RillDeviceDef& def, const std::string& plugin);

// Installs `device` for the whole process; see the contract above.
void InstallDevice(const Device& device);
// The installed device of `device_type`, or nullptr.
const Device* FindDevice(int32_t device_type);
// The installed device called `name` (ASCII case ignored: "cuda" is CUDA), or nullptr.
const Device* FindDeviceByName(const std::string& name);
// Whether any device besides the CPU is installed (so tensors may live off the CPU).
bool AnyDeviceInstalled();
// Whether any device memory is allocated now: while none is, every tensor is on the CPU
// and a CPU kernel's inputs need no moving. Buffer counts its device allocations here.
// Inline: every op on a host with a device plugin asks.
extern std::atomic<int64_t> g_device_buffers;  // written only by CountDeviceBuffers
inline bool DeviceMemoryInUse() { return g_device_buffers.load(std::memory_order_relaxed) > 0; }
void CountDeviceBuffers(int delta);
// "CUDA" for an installed device, else "device(N)"; "CPU" for RILL_CPU.
std::string DeviceName(int32_t device_type);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_DEVICE_H_
