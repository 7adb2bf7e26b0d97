// The host's handling of devices, on a device that needs no hardware (the fake_device
// fixture plugin): allocation through the plugin, kernels placed on the device when they
// exist there and on the CPU otherwise, and tensors moved between them by the executor.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>

#include "core/errors.h"
#include "core/loader/plugin_loader.h"
#include "core/program/builder.h"
#include "core/runtime/device.h"
#include "core/runtime/executor.h"
#include "core/runtime/staging_memory.h"
#include "core/abi/status.h"

namespace rill::core {
namespace {

constexpr int32_t kFake = 2;

Registry& FakeRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    LoadPlugins(*reg, LoadOptions{{RILL_PLUGIN_DIR, std::string(RILL_FIXTURE_DIR) + "/fake_device"}, {}, {}});
    return reg;
  }();
  return *r;
}

// The FAKE device's counters: allocations, frees, host->device, device->host copies,
// page-locked allocations and frees.
enum { kAllocs, kFrees, kToDevice, kToHost, kLockedAllocs, kLockedFrees };
std::vector<int64_t> Stats(const std::shared_ptr<Scope>& scope) {
  ProgramBuilder pb;
  pb.block(0).Op("fake_device_stats").Output("Out", "stats");
  Executor probe(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  probe.Run(0, scope);
  const Tensor* t = scope->FindVar("stats")->GetTensor();
  return std::vector<int64_t>(t->data_as<int64_t>(), t->data_as<int64_t>() + 6);
}

// One run of `pb`'s block 0 by an executor placed on FAKE: the scope it ran in and how
// much each of FAKE's counters moved during the run.
struct FakeRun {
  std::shared_ptr<Scope> scope;
  std::vector<int64_t> moved;
};
FakeRun RunOnFake(const ProgramBuilder& pb) {
  Executor exec(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  exec.set_place(Place{kFake, 0});
  FakeRun run{Scope::NewRoot(), {}};
  const auto before = Stats(run.scope);
  exec.Run(0, run.scope);
  run.moved = Stats(run.scope);
  for (size_t i = 0; i < before.size(); ++i) run.moved[i] -= before[i];
  return run;
}

TEST(Devices, KernelsRunOnTheDeviceAndTensorsMoveBetween) {
  FakeRegistry();
  ASSERT_NE(FindDevice(kFake), nullptr);
  EXPECT_EQ(DeviceName(kFake), "FAKE");
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{3}).Attr("value", 2.0f);
  pb.block(0).Op("scale").Input("X", "x").Output("Out", "y").Attr("scale", 3.0f).Attr("bias", 1.0f);
  pb.block(0).Op("elementwise_add").Input("X", "y").Input("Y", "y").Output("Out", "z");
  const FakeRun run = RunOnFake(pb);
  const auto& scope = run.scope;

  // fill_constant has no FAKE kernel: x is made on the CPU, then moved for scale.
  // scale runs on FAKE: y is made there. elementwise_add runs on the CPU: y moves back.
  EXPECT_EQ(scope->FindVar("x")->GetTensor()->place(), (Place{kFake, 0}));
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->place(), Place{});
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->place(), Place{});
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->Describe(), "fp32[3] {14, 14, 14}");
  EXPECT_EQ(run.moved[kToDevice], 1) << "one host-to-device copy (x)";
  EXPECT_EQ(run.moved[kToHost], 1) << "one device-to-host copy (y)";
  EXPECT_EQ(run.moved[kAllocs], 2) << "device allocations: x's copy and y";
  EXPECT_EQ(run.moved[kFrees], 1) << "y's device memory was freed when y moved back";
}

// Loop bookkeeping (counters, bounds, conditions) stays on the host: an op whose inputs
// are all one-element CPU tensors runs on the CPU even on a device executor.
TEST(Devices, OpsOnHostScalarsStayOnTheCpu) {
  FakeRegistry();
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "counter").Attr("shape", std::vector<int64_t>{1}).Attr("value", 2.0f);
  pb.block(0).Op("scale").Input("X", "counter").Output("Out", "next").Attr("scale", 3.0f);
  pb.block(0).Op("fill_constant").Output("Out", "v").Attr("shape", std::vector<int64_t>{2}).Attr("value", 2.0f);
  pb.block(0).Op("scale").Input("X", "v").Output("Out", "w").Attr("scale", 3.0f);
  const FakeRun run = RunOnFake(pb);
  const auto& scope = run.scope;
  EXPECT_EQ(scope->FindVar("counter")->GetTensor()->place(), Place{});
  EXPECT_EQ(scope->FindVar("next")->GetTensor()->place(), Place{}) << "scale of a host scalar ran on the CPU";
  EXPECT_EQ(scope->FindVar("next")->GetTensor()->Describe(), "fp32[1] {6}");
  EXPECT_EQ(scope->FindVar("w")->GetTensor()->place(), (Place{kFake, 0})) << "scale of a [2] tensor ran on FAKE";
  EXPECT_EQ(run.moved[kToDevice], 1) << "only v moved to the device";
}

TEST(Devices, DeviceTensorsPrintAndCopyThroughTheHost) {
  FakeRegistry();
  Tensor t;
  t.Allocate(RILL_FP32, {2});
  t.data_as<float>()[0] = 1.5f;
  t.data_as<float>()[1] = -2.0f;
  const Tensor on_device = t.CopyTo(Place{kFake, 0});
  EXPECT_EQ(on_device.place(), (Place{kFake, 0}));
  EXPECT_EQ(on_device.Describe(), "fp32[2] on FAKE:0 {1.5, -2}");
  EXPECT_EQ(on_device.CopyTo(Place{}).ValuesToString(), "1.5 -2");
}

TEST(Devices, MissingDevicesAreClearErrors) {
  FakeRegistry();
  Executor exec(FakeRegistry(), std::make_shared<proto::ProgramDesc>());
  try {
    exec.set_place(Place{kFake, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot run on FAKE:1: 1 FAKE device(s) present (plugin 'fake_device')");
  }
  Tensor t;
  EXPECT_THROW(t.Allocate(RILL_FP32, {1}, Place{kFake, 3}), Error);
}

// What the FAKE plugin itself says: 1 where a variable's memory is its page-locked memory.
std::vector<int32_t> PageLockedPerPlugin(const std::shared_ptr<Scope>& scope, const std::vector<std::string>& vars) {
  ProgramBuilder pb;
  pb.block(0).Op("fake_page_locked").Input("X", vars).Output("Out", "locked");
  Executor probe(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  probe.Run(0, scope);
  const Tensor* t = scope->FindVar("locked")->GetTensor();
  return std::vector<int32_t>(t->data_as<int32_t>(), t->data_as<int32_t>() + t->numel());
}

// fill_constant (CPU) -> scale (FAKE) -> elementwise_add (CPU), as in the test above: y
// comes off the device for the CPU kernel, and x is written by a CPU kernel over the copy
// of it that lives on the device. Both are staged in FAKE's page-locked memory.
TEST(Devices, TransfersAreStagedInTheDevicesPageLockedMemory) {
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{1000}).Attr("value", 2.0f);
  pb.block(0).Op("scale").Input("X", "x").Output("Out", "y").Attr("scale", 3.0f);
  pb.block(0).Op("elementwise_add").Input("X", "y").Input("Y", "y").Output("Out", "z");
  Executor exec(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  exec.set_place(Place{kFake, 0});
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  const Tensor* y = scope->FindVar("y")->GetTensor();
  EXPECT_EQ(y->place(), Place{});
  EXPECT_TRUE(y->page_locked()) << "y came off the device for elementwise_add";
  EXPECT_FALSE(scope->FindVar("z")->GetTensor()->page_locked()) << "z never was on the device";
  EXPECT_EQ(PageLockedPerPlugin(scope, {"y", "z"}), (std::vector<int32_t>{1, 0}));

  // From the second run on, x too is written on the CPU over its device copy, and staging
  // memory handed back (x's as scale moves it, y's as scale rewrites it) is taken again.
  exec.Run(0, scope);
  const auto second = Stats(scope);
  for (int run = 0; run < 3; ++run) exec.Run(0, scope);
  const auto fifth = Stats(scope);
  EXPECT_EQ(fifth[kLockedAllocs], second[kLockedAllocs]) << "page-locked memory is cached, not locked again";
  EXPECT_EQ(fifth[kLockedFrees], second[kLockedFrees]);
  EXPECT_EQ(fifth[kToHost] - second[kToHost], 3);
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->ValuesToString(2), "12 12 ...");

  // A CPU kernel writing over a tensor that lives on the device.
  Tensor* x = scope->FindVar("x")->GetMutableTensor();
  ASSERT_EQ(x->place(), (Place{kFake, 0}));
  x->Allocate(RILL_FP32, {7});
  EXPECT_TRUE(x->page_locked());
  EXPECT_EQ(PageLockedPerPlugin(scope, {"x"}), std::vector<int32_t>{1});
}

// A device without page-locked memory stages in ordinary memory.
TEST(Devices, AV4DeviceHasNoPageLockedMemory) {
  RillDeviceDef def{};
  def.struct_size = offsetof(RillDeviceDef, allocate_host);  // as a v4 plugin fills it
  def.device_type = 5;
  def.device_count = [] { return 1; };
  def.allocate = [](int32_t, size_t, void**) -> RillStatus* { return nullptr; };
  def.free = [](int32_t, void*) {};
  def.copy = [](int32_t, void*, const void*, size_t, int32_t) -> RillStatus* { return nullptr; };
  def.allocate_host = [](size_t, void**) -> RillStatus* { return nullptr; };  // past struct_size: unread
  EXPECT_EQ(DeviceFromAbi(def, "old").allocate_host, nullptr);
  EXPECT_EQ(TakeStagingMemory(DeviceFromAbi(def, "old"), 64), nullptr);

  def.struct_size = sizeof(def);  // v5, with allocate_host but no free_host
  try {
    DeviceFromAbi(def, "half");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "plugin 'half' registers device device with only one of allocate_host, free_host");
  }
}

// The cache, on a device of its own so that nothing else in the process shares it.
struct CountingHost {
  static inline int allocs = 0, frees = 0;
  static inline bool fail = false, misalign = false;
  static RillStatus* Allocate(size_t bytes, void** out) {
    if (fail) return new RillStatus{RILL_RESOURCE_EXHAUSTED, "no"};
    ++allocs;
    *out = static_cast<char*>(std::aligned_alloc(64, bytes + 64)) + (misalign ? 8 : 0);
    return nullptr;
  }
  static void Free(void* p) {
    ++frees;
    const auto addr = reinterpret_cast<uintptr_t>(p);
    std::free(reinterpret_cast<void*>(addr - addr % 64));
  }
};

TEST(Devices, PageLockedMemoryIsCachedUpToALimit) {
  Device d;
  d.device_type = 6;
  d.name = "COUNTING";
  d.allocate_host = &CountingHost::Allocate;
  d.free_host = &CountingHost::Free;
  void* big = TakeStagingMemory(d, kStagingCacheBytes - 64);  // never touched: costs no memory
  void* small = TakeStagingMemory(d, 128);
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(CountingHost::allocs, 2);
  GiveBackStagingMemory(d, big, kStagingCacheBytes - 64);
  GiveBackStagingMemory(d, small, 128);  // past the limit: freed
  EXPECT_EQ(CountingHost::frees, 1);
  EXPECT_EQ(TakeStagingMemory(d, kStagingCacheBytes - 64), big) << "taken again from the cache";
  EXPECT_EQ(CountingHost::allocs, 2);
  GiveBackStagingMemory(d, big, kStagingCacheBytes - 64);

  CountingHost::fail = true;  // no page-locked memory now: the caller uses ordinary memory
  EXPECT_EQ(TakeStagingMemory(d, 256), nullptr);
  CountingHost::fail = false;
  CountingHost::misalign = true;  // the host promises 64-byte alignment; such a block goes back
  EXPECT_EQ(TakeStagingMemory(d, 256), nullptr);
  EXPECT_EQ(CountingHost::frees, 2);
  CountingHost::misalign = false;
}

}  // namespace
}  // namespace rill::core
