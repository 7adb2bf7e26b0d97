#include "core/registry/registry.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace rill::core {
namespace {

RillStatus* Noop(void*, RillKernelContext*) { return nullptr; }

PluginRegistration Plugin(const std::string& name, const std::string& op) {
  PluginRegistration r;
  r.plugin = name;
  OpSchemaEntry e;
  e.type = op;
  e.plugin = name;
  r.ops.push_back(e);
  KernelEntry k;
  k.op_type = op;
  k.compute = Noop;
  k.plugin = name;
  r.kernels.push_back(k);
  return r;
}

TEST(Registry, SchemaFromAbiParsesDefaults) {
  const RillSlotDef in[] = {{"X", 0, "x"}};
  const RillAttrDef attrs[] = {{"shape", RILL_ATTR_INTS, 0, "[2, 3]", nullptr},
                               {"names", RILL_ATTR_STRINGS, 0, "[\"a,b\", \"c\"]", nullptr},
                               {"scale", RILL_ATTR_FLOAT, 0, "-1.5", nullptr},
                               {"flag", RILL_ATTR_BOOLEAN, 0, nullptr, nullptr},
                               {"body", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, nullptr, nullptr}};
  RillOpSchema s{sizeof(RillOpSchema), "op", "doc", in, 1, nullptr, 0, attrs, 5, "X", nullptr, nullptr, nullptr};
  const OpSchemaEntry e = SchemaFromAbi(s, "p");
  EXPECT_EQ(e.attrs[0].default_value.ints, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(e.attrs[1].default_value.strings, (std::vector<std::string>{"a,b", "c"}));
  EXPECT_DOUBLE_EQ(e.attrs[2].default_value.f, -1.5);
  EXPECT_EQ(e.attrs[3].default_value.i, 0) << "no default: the zero value";
  EXPECT_TRUE(e.attrs[4].required);
  EXPECT_EQ(e.dtype_source, "X");
}

TEST(Registry, MalformedSchemasAreRefused) {
  const RillAttrDef bad_default[] = {{"n", RILL_ATTR_INT, 0, "three", nullptr}};
  RillOpSchema s{sizeof(RillOpSchema), "op", "",      nullptr, 0,       nullptr, 0,
                 bad_default,          1,    nullptr, nullptr, nullptr, nullptr};
  EXPECT_THROW(SchemaFromAbi(s, "p"), Error);
  RillOpSchema small = s;
  small.struct_size = 8;
  EXPECT_THROW(SchemaFromAbi(small, "p"), Error);
  RillOpSchema bad_source{sizeof(RillOpSchema), "op",    "",      nullptr, 0, nullptr, 0, nullptr, 0,
                          "attr:dtype",         nullptr, nullptr, nullptr};
  EXPECT_THROW(SchemaFromAbi(bad_source, "p"), Error);
}

TEST(Registry, DuplicateOpNamesBothPluginsAndChangesNothing) {
  Registry registry;
  const auto a = Plugin("alpha", "scale");
  const auto b = Plugin("beta", "scale");
  const auto c = Plugin("gamma", "other");
  try {
    registry.Commit({&c, &a, &b});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "op 'scale' is registered by both plugin 'alpha' and plugin 'beta'");
    EXPECT_EQ(e.code(), RILL_ALREADY_EXISTS);
  }
  EXPECT_EQ(registry.FindOp("other"), nullptr) << "a failed commit registers nothing";
  registry.Commit({&a});
  try {
    registry.Commit({&b});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "op 'scale' is registered by both plugin 'alpha' and plugin 'beta'");
  }
}

RillStatus* NoopCommand(void*, int32_t, const char* const*) { return nullptr; }

TEST(Registry, CommandsAreCheckedAndUniqueAcrossPlugins) {
  RillCommandDef def{sizeof(RillCommandDef), "status", "what it does", "HOST:PORT", nullptr, NoopCommand};
  const CommandEntry e = CommandFromAbi(def, "alpha");
  EXPECT_EQ(e.name, "status");
  EXPECT_EQ(e.usage, "HOST:PORT");
  for (const char* bad : {"", "Status", "1st", "a b", "--x"}) {
    RillCommandDef d = def;
    d.name = bad;
    EXPECT_THROW(CommandFromAbi(d, "alpha"), Error) << bad;
  }
  RillCommandDef no_run = def;
  no_run.run = nullptr;
  EXPECT_THROW(CommandFromAbi(no_run, "alpha"), Error);
  RillCommandDef small = def;
  small.struct_size = 16;
  EXPECT_THROW(CommandFromAbi(small, "alpha"), Error);

  PluginRegistration a = Plugin("alpha", "a_op"), b = Plugin("beta", "b_op");
  a.commands.push_back(e);
  b.commands.push_back(CommandFromAbi(def, "beta"));
  Registry registry;
  try {
    registry.Commit({&a, &b});
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(std::string(err.what()), "command 'status' is registered by both plugin 'alpha' and plugin 'beta'");
  }
  EXPECT_EQ(registry.FindCommand("status"), nullptr) << "a failed commit registers nothing";
  registry.Commit({&a});
  ASSERT_NE(registry.FindCommand("status"), nullptr);
  EXPECT_EQ(registry.FindCommand("status")->plugin, "alpha");
  EXPECT_EQ(registry.AllCommands().size(), 1u);
  EXPECT_THROW(registry.Commit({&b}), Error);
  Registry reserving;
  reserving.ReserveCommands({"status"});
  try {
    reserving.Commit({&a});
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(std::string(err.what()), "plugin 'alpha' registers command 'status', which is one of rill's own");
  }
}

TEST(Registry, KernelLookupFallsBackToAnyDtype) {
  Registry registry;
  auto r = Plugin("p", "op");  // an ANY kernel
  KernelEntry fp32 = r.kernels[0];
  fp32.dtype = RILL_FP32;
  r.kernels.push_back(fp32);
  registry.Commit({&r});
  EXPECT_EQ(registry.FindKernel("op", RILL_CPU, RILL_FP32)->dtype, RILL_FP32);
  EXPECT_EQ(registry.FindKernel("op", RILL_CPU, RILL_INT64)->dtype, RILL_ANY_DTYPE);
  EXPECT_EQ(registry.FindKernel("op", RILL_CUDA, RILL_FP32), nullptr);
  EXPECT_EQ(registry.KernelsOf("op").size(), 2u);
}

TEST(Registry, KernelForUndeclaredOpIsRefused) {
  Registry registry;
  PluginRegistration r;
  r.plugin = "p";
  KernelEntry k;
  k.op_type = "ghost";
  k.compute = Noop;
  r.kernels.push_back(k);
  EXPECT_THROW(registry.Commit({&r}), Error);
}

TEST(Registry, UnknownOpMessageUsesHints) {
  Registry registry;
  registry.AddHints(Plugin("dist_mpi", "send_mpi"));
  registry.set_enabled_plugins({"core", "math"});
  EXPECT_EQ(registry.UnknownOpMessage("send_mpi"),
            "op 'send_mpi' is provided by plugin 'dist_mpi', which is not enabled (see --plugins)");
  EXPECT_EQ(registry.UnknownOpMessage("zap"), "op 'zap' is not provided by any loaded plugin (loaded: core, math)");
}

}  // namespace
}  // namespace rill::core
