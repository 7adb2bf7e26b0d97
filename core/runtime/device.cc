#include "core/runtime/device.h"

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "core/errors.h"

namespace rill::core {

namespace {

// Devices are installed once, rarely, and then read on every allocation: readers take the
// fixed-size array without locking; writers serialize on the mutex. Entries never move.
constexpr int kMaxDeviceTypes = RILL_MAX_DEVICE_TYPES;
std::mutex g_install_mu;
std::atomic<const Device*> g_devices[kMaxDeviceTypes];
std::atomic<bool> g_any{false};

}  // namespace

Device DeviceFromAbi(const RillDeviceDef& d, const std::string& plugin) {
  if (d.struct_size < offsetof(RillDeviceDef, copy) + sizeof(d.copy)) {
    throw Error("device struct too small (struct_size " + std::to_string(d.struct_size) + ")");
  }
  if (d.device_type <= RILL_CPU || d.device_type >= kMaxDeviceTypes) {
    throw Error("plugin '" + plugin + "' registers device type " + std::to_string(d.device_type) +
                ", which is the CPU or out of range");
  }
  if (!d.device_count || !d.allocate || !d.free || !d.copy) {
    throw Error("plugin '" + plugin + "' registers a device without all of device_count, allocate, free, copy");
  }
  return Device{d.device_type, d.name ? d.name : "device", plugin, d.device_count, d.allocate, d.free, d.copy};
}

void InstallDevice(const Device& device) {
  std::lock_guard lock(g_install_mu);
  auto& slot = g_devices[device.device_type];
  if (const Device* existing = slot.load()) {
    if (existing->plugin == device.plugin) return;
    throw Error("device " + device.name + " is registered by both plugin '" + existing->plugin + "' and plugin '" +
                device.plugin + "'", RILL_ALREADY_EXISTS);
  }
  slot.store(new Device(device));  // never freed: tensors anywhere may hold its memory
  g_any.store(true);
}

const Device* FindDevice(int32_t device_type) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) return nullptr;
  return g_devices[device_type].load(std::memory_order_acquire);
}

bool AnyDeviceInstalled() { return g_any.load(std::memory_order_relaxed); }

std::string DeviceName(int32_t device_type) {
  if (device_type == RILL_CPU) return "CPU";
  if (const Device* d = FindDevice(device_type)) return d->name;
  return device_type == RILL_CUDA ? "CUDA" : "device(" + std::to_string(device_type) + ")";
}

}  // namespace rill::core
