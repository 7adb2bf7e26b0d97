// The host's handling of devices, on a device that needs no hardware (the fake_device
// fixture plugin): allocation through the plugin, kernels placed on the device when they
// exist there and on the CPU otherwise, and tensors moved between them by the executor.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/loader/plugin_loader.h"
#include "core/program/builder.h"
#include "core/runtime/device.h"
#include "core/runtime/executor.h"

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

// The FAKE device's counters: allocations, frees, host->device, device->host copies.
std::vector<int64_t> Stats(const std::shared_ptr<Scope>& scope) {
  ProgramBuilder pb;
  pb.block(0).Op("fake_device_stats").Output("Out", "stats");
  Executor probe(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  probe.Run(0, scope);
  const Tensor* t = scope->FindVar("stats")->GetTensor();
  return std::vector<int64_t>(t->data_as<int64_t>(), t->data_as<int64_t>() + 4);
}

TEST(Devices, KernelsRunOnTheDeviceAndTensorsMoveBetween) {
  FakeRegistry();
  ASSERT_NE(FindDevice(kFake), nullptr);
  EXPECT_EQ(DeviceName(kFake), "FAKE");
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{3}).Attr("value", 2.0f);
  pb.block(0).Op("scale").Input("X", "x").Output("Out", "y").Attr("scale", 3.0f).Attr("bias", 1.0f);
  pb.block(0).Op("elementwise_add").Input("X", "y").Input("Y", "y").Output("Out", "z");
  Executor exec(FakeRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  exec.set_place(Place{kFake, 0});
  auto scope = Scope::NewRoot();
  const auto before = Stats(scope);
  exec.Run(0, scope);
  const auto after = Stats(scope);

  // fill_constant has no FAKE kernel: x is made on the CPU, then moved for scale.
  // scale runs on FAKE: y is made there. elementwise_add runs on the CPU: y moves back.
  EXPECT_EQ(scope->FindVar("x")->GetTensor()->place(), (Place{kFake, 0}));
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->place(), Place{});
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->place(), Place{});
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->Describe(), "fp32[3] {14, 14, 14}");
  EXPECT_EQ(after[2] - before[2], 1) << "one host-to-device copy (x)";
  EXPECT_EQ(after[3] - before[3], 1) << "one device-to-host copy (y)";
  EXPECT_EQ(after[0] - before[0], 2) << "device allocations: x's copy and y";
  EXPECT_EQ(after[1] - before[1], 1) << "y's device memory was freed when y moved back";
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

}  // namespace
}  // namespace rill::core
