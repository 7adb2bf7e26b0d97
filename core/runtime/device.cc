#include "core/runtime/device.h"

#include <atomic>
#include <cctype>
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
  Device device{d.device_type, d.name ? d.name : "device", plugin, d.device_count, d.allocate, d.free, d.copy};
  if (d.struct_size >= offsetof(RillDeviceDef, free_host) + sizeof(d.free_host)) {
    if (!d.allocate_host != !d.free_host) {
      throw Error("plugin '" + plugin + "' registers device " + device.name +
                  " with only one of allocate_host, free_host");
    }
    device.allocate_host = d.allocate_host;
    device.free_host = d.free_host;
  }
  return device;
}

void InstallDevice(const Device& device) {
  std::lock_guard lock(g_install_mu);
  auto& slot = g_devices[device.device_type];
  if (const Device* existing = slot.load()) {
    if (existing->plugin == device.plugin) return;
    throw Error("device " + device.name + " is registered by both plugin '" + existing->plugin + "' and plugin '" +
                    device.plugin + "'",
                RILL_ALREADY_EXISTS);
  }
  slot.store(new Device(device));  // never freed: tensors anywhere may hold its memory
  g_any.store(true);
}

const Device* FindDevice(int32_t device_type) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) return nullptr;
  return g_devices[device_type].load(std::memory_order_acquire);
}

const Device* FindDeviceByName(const std::string& name) {
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (int t = RILL_CPU + 1; t < kMaxDeviceTypes; ++t) {
    const Device* d = FindDevice(t);
    if (d != nullptr && lower(d->name) == lower(name)) return d;
  }
  return nullptr;
}

bool AnyDeviceInstalled() { return g_any.load(std::memory_order_relaxed); }

// Read relaxed (DeviceMemoryInUse): a kernel that can see a device tensor saw its
// allocation happen (the program ordered them), so the count it reads includes that
// buffer, which is alive.
std::atomic<int64_t> g_device_buffers{0};
void CountDeviceBuffers(int delta) { g_device_buffers.fetch_add(delta, std::memory_order_relaxed); }

std::string DeviceName(int32_t device_type) {
  if (device_type == RILL_CPU) return "CPU";
  if (const Device* d = FindDevice(device_type)) return d->name;
  return device_type == RILL_CUDA ? "CUDA" : "device(" + std::to_string(device_type) + ")";
}

}  // namespace rill::core
