#include "core/loader/plugin_loader.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "core/abi/host_api.h"
#include "core/abi/status.h"
#include "core/errors.h"
#include "core/program/builder.h"
#include "core/runtime/executor.h"
#include "test_util.h"

namespace rill::core {
namespace {

const std::string kFixtures = RILL_FIXTURE_DIR;
const std::string kPlugins = RILL_PLUGIN_DIR;

// Loads `dirs` into a fresh registry and returns the error message ("" if it loaded).
std::string LoadError(std::vector<std::string> dirs, std::vector<std::string> enable = {}) {
  Registry registry;
  try {
    LoadPlugins(registry, LoadOptions{std::move(dirs), {}, std::move(enable)});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void ExpectContains(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "wanted: " << needle << "\ngot: " << text;
}

TEST(Loader, LoadsShippedPluginsAndBuiltins) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins}, {}, {}});
  std::string names;
  for (const auto& p : plugins) {
    names += (names.empty() ? "" : ", ") + p.name;
    EXPECT_EQ(p.abi_version, RILL_ABI_VERSION) << p.name;
  }
  EXPECT_EQ(names, test::LoadedPlugins());
  EXPECT_EQ(registry.FindOp("select")->plugin, "csp");
  EXPECT_EQ(registry.FindOp("while")->plugin, "core");
  EXPECT_EQ(registry.FindOp("increment")->plugin, "math");
}

TEST(Loader, FileThatIsNotASharedLibrary) {
  const auto err = LoadError({kFixtures + "/not_a_library"});
  ExpectContains(err, "plugin '" + kFixtures + "/not_a_library/librill_garbage.so' is not a loadable shared library");
}

TEST(Loader, LibraryWithoutEntryPoint) {
  const auto err = LoadError({kFixtures + "/no_entry"});
  ExpectContains(err, "has no Rill entry point 'RillGetPlugin' (not a Rill plugin, or built without RILL_PLUGIN)");
}

TEST(Loader, NewerAbiIsRefused) {
  const auto err = LoadError({kFixtures + "/future_abi"});
  ExpectContains(err, "plugin 'from_the_future' (");
  ExpectContains(err, "needs Rill ABI version " + std::to_string(RILL_ABI_VERSION + 1) +
                          "; this host serves versions 1 to " + std::to_string(RILL_ABI_VERSION));
}

TEST(Loader, InitFailureCarriesThePluginsMessage) {
  const auto err = LoadError({kFixtures + "/init_fails"});
  ExpectContains(err, "plugin 'init_fails' (");
  ExpectContains(err, "failed to initialize: device not present (deliberate failure)");
}

TEST(Loader, DuplicateOpNamesBothPlugins) {
  const auto err = LoadError({kPlugins, kFixtures + "/duplicate_op"});
  EXPECT_EQ(err, "op 'increment' is registered by both plugin 'math' and plugin 'duplicate_op'");
}

TEST(Loader, MissingDirectoryIsAnError) {
  ExpectContains(LoadError({"/nonexistent/plugins"}), "plugin directory '/nonexistent/plugins' does not exist");
}

TEST(Loader, FrozenAbiV1PluginKeepsLoadingAndRuns) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v1"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v1");
  EXPECT_EQ(plugins.back().abi_version, 1u);

  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{3}).Attr("value", 1.5f);
  pb.block(0).Op("v1_scale").Input("X", "x").Output("Out", "y");  // factor defaults to 2
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "fp32[3] {3, 3, 3}");
}

// A root scope holding these scalars (name, dtype, value).
struct ScalarVar {
  const char* name;
  int32_t dtype;
  uint64_t value;
};
std::shared_ptr<Scope> ScopeWith(std::initializer_list<ScalarVar> vars) {
  auto scope = Scope::NewRoot();
  for (const ScalarVar& v : vars) scope->Var(v.name)->SetScalar(v.dtype, v.value);
  return scope;
}

// The counted loop `while (i < 95) { increment(i); i < 95 }` with a third party's
// increment that adds 10 (own_small_ops), loaded without the math plugin: the host runs
// the plugin's kernels as they are, so the loop ends at 100, not at 95.
TEST(Loader, APluginsOwnIncrementRunsAsItsKernelSays) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kFixtures + "/own_small_ops"}, {}, {}});
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = ScopeWith({{"i", RILL_INT64, 0}, {"n", RILL_INT64, 95}, {"c", RILL_BOOL, 1}});
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {100}");
}

// A plugin's own loop op runs its body through the host as `while` does (ctx_run_loop):
// own_small_ops' repeat runs it Times times, here an increment adding 10; a Times that is
// not an int64 scalar is the op's error, naming it.
TEST(Loader, APluginsOwnLoopOpRunsItsBodyThroughTheHost) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kFixtures + "/own_small_ops"}, {}, {}});
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0).Op("repeat").Input("Times", "n").BlockAttr("sub_block", body.idx());
  body.Op("increment").Input("X", "i").Output("Out", "i");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = ScopeWith({{"i", RILL_INT64, 0}, {"n", RILL_INT64, 3}});
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {30}");
  scope->Var("n")->SetScalar(RILL_FP32, 0);
  try {
    exec.Run(0, scope);
    ADD_FAILURE() << "a float Times ran";
  } catch (const Error& e) {
    ExpectContains(e.what(), "block 0, op 0 (repeat Times=[n]): Times must be an int64 scalar");
  }
}

// The host's table as a version 13 host serves it: this host's entries up to those of 13.
RillHostApi HostOfVersion13() {
  RillHostApi table = *HostApiTable();
  table.abi_version = 13;
  table.struct_size = offsetof(RillHostApi, ctx_run_loop);
  return table;
}

// The plugin at `path`, initialized with `host` into `reg` (as the loader would with this
// host's own table); the init's error message, or "".
std::string InitWith(const std::string& path, const RillHostApi* host, RillRegistrar* reg) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed, as the loader's
  if (lib == nullptr) return dlerror();
  const auto get = reinterpret_cast<RillGetPluginFn>(dlsym(lib, RILL_ENTRY_POINT_NAME));
  reg->plugin = get()->name;
  RillStatus* st = get()->init(host, reg);
  if (st == nullptr) return "";
  const std::string message = st->message;
  delete st;
  return message;
}

// A plugin states the lowest ABI version it needs, not its header's: own_small_ops_v13
// (RILL_PLUGIN_NEEDS_ABI=13) says 13 and loads here; built with the default it says this
// header's version, and a version 13 host refuses it naming both versions.
TEST(Loader, APluginStatesTheLowestAbiVersionItNeeds) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kFixtures + "/own_small_ops_v13"}, {}, {}});
  EXPECT_EQ(plugins.back().abi_version, 13u);
  const RillHostApi old_host = HostOfVersion13();
  RillRegistrar reg;
  EXPECT_EQ(InitWith(kFixtures + "/own_small_ops/librill_own_small_ops.so", &old_host, &reg),
            "plugin needs a host serving ABI version " + std::to_string(RILL_ABI_VERSION) +
                "; this host serves 13");
}

// In a version 13 host, own_small_ops_v13 registers and runs its ops; the one that calls a
// version 14 entry (repeat: ctx_run_loop) fails naming that entry instead of reading past
// the host's table.
TEST(Loader, AnEntryTheHostLacksIsAnErrorNamingIt) {
  const RillHostApi old_host = HostOfVersion13();
  RillRegistrar reg;
  ASSERT_EQ(InitWith(kFixtures + "/own_small_ops_v13/librill_own_small_ops_v13.so", &old_host, &reg), "");
  Registry registry;
  LoadPlugins(registry, LoadOptions{{}, {}, {}});  // the host's own ops (while) only
  registry.Commit({&reg});
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0).Op("increment").Input("X", "i").Output("Out", "i");
  pb.block(0).Op("repeat").Input("Times", "n").BlockAttr("sub_block", body.idx());
  body.Op("increment").Input("X", "i").Output("Out", "i");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = ScopeWith({{"i", RILL_INT64, 0}, {"n", RILL_INT64, 3}});
  try {
    exec.Run(0, scope);
    ADD_FAILURE() << "repeat ran in a host without ctx_run_loop";
  } catch (const Error& e) {
    ExpectContains(e.what(), "block 0, op 1 (repeat Times=[n]): this plugin calls the host's ctx_run_loop, which "
                             "this host (ABI version 13) does not serve: upgrade rill");
  }
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {10}") << "the increment before it ran";
}

// A third party's kernel offering a scalar path (own_small_ops' probe: Scalar writes
// X + Y + 1 and declines X = 13, Compute writes X + 1000) gets it exactly when every value
// its op reads and writes is a scalar, first run and later ones alike, with its inputs in
// the order its schema declares them.
TEST(Loader, AThirdPartyKernelsScalarPathRunsWhenItsValuesAreScalars) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kFixtures + "/own_small_ops"}, {}, {}});
  // probe(X=x [, Y=y]) -> Out=out, run twice; x a [1] int64 of `x`, or [2] when `pair`.
  const auto probe = [&](int64_t x, bool with_y, bool pair, bool wide_out) {
    ProgramBuilder pb;
    OpBuilder op = pb.block(0).Op("probe");
    if (with_y) op.Input("Y", "y");  // listed before X: the schema's order is what counts
    op.Input("X", "x").Output("Out", "out");
    Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
    auto scope = ScopeWith({{"y", RILL_INT64, 7}});
    std::string runs;
    for (int run = 0; run < 2; ++run) {
      Tensor* tx = scope->Var("x")->GetMutableTensor();
      const int64_t n = pair ? 2 : 1;
      std::fill_n(static_cast<int64_t*>(tx->Allocate(RILL_INT64, {n})), n, x);
      if (wide_out) scope->Var("out")->GetMutableTensor()->Allocate(RILL_INT64, {3});
      exec.Run(0, scope);
      runs += (runs.empty() ? "" : " then ") + scope->FindVar("out")->GetTensor()->Describe();
    }
    return runs;
  };
  EXPECT_EQ(probe(5, false, false, false), "int64[1] {6} then int64[1] {6}");
  EXPECT_EQ(probe(5, true, false, false), "int64[1] {13} then int64[1] {13}");
  EXPECT_EQ(probe(13, false, false, false), "int64[1] {1013} then int64[1] {1013}") << "declined";
  EXPECT_EQ(probe(5, false, true, false), "int64[2] {1005, 1005} then int64[2] {1005, 1005}") << "not a scalar";
  EXPECT_EQ(probe(5, false, false, true), "int64[1] {1005} then int64[1] {1005}") << "Out holds a tensor";
}

// ABI v3: a plain-C plugin makes SelectedRows that the math plugin's sgd consumes, and
// reads them back.
TEST(Loader, FrozenAbiV3PluginMakesAndReadsSelectedRows) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v3"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v3");
  EXPECT_EQ(plugins.back().abi_version, 3u);
  auto scope = Scope::NewRoot();
  Tensor* rows = scope->Var("rows")->GetMutableTensor();
  rows->Allocate(RILL_INT64, {2});
  rows->data_as<int64_t>()[0] = 2;
  rows->data_as<int64_t>()[1] = 0;
  ProgramBuilder pb;
  auto& main = pb.block(0);
  main.Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{2, 3}).Attr("value", 2.0f);
  main.Op("fill_constant").Output("Out", "p").Attr("shape", std::vector<int64_t>{3, 3}).Attr("value", 1.0f);
  main.Op("fill_constant").Output("Out", "lr").Attr("shape", std::vector<int64_t>{1}).Attr("value", 0.25f);
  main.Op("v3_rows").Input("X", "x").Input("Rows", "rows").Output("Out", "g").Attr("height", int64_t{3});
  main.Op("sgd").Input("Param", "p").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "p");
  main.Op("v3_densify").Input("X", "g").Output("Out", "dense");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  exec.Run(0, scope);
  EXPECT_TRUE(scope->FindVar("g")->is_selected_rows());
  EXPECT_EQ(scope->FindVar("p")->GetTensor()->Describe(), "fp32[3, 3] {0.5, 0.5, 0.5, 1, 1, 1, 0.5, 0.5, 0.5}");
  EXPECT_EQ(scope->FindVar("dense")->GetTensor()->Describe(), "fp32[3, 3] {2, 2, 2, 0, 0, 0, 2, 2, 2}");
}

// ABI v6: a plain-C kernel reads its input and shapes its output in one call each.
TEST(Loader, FrozenAbiV6PluginReadsAndShapesInOneCallEach) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v6"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v6");
  EXPECT_EQ(plugins.back().abi_version, 6u);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{2, 2}).Attr("value", 0.5f);
  pb.block(0).Op("v6_triple").Input("X", "x").Output("Out", "y");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "fp32[2, 2] {1.5, 1.5, 1.5, 1.5}");
}

// ABI v8: a plain-C kernel finds its slots once and reads its arguments by index.
TEST(Loader, FrozenAbiV8PluginReadsItsArgumentsByIndex) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v8"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v8");
  EXPECT_EQ(plugins.back().abi_version, 8u);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{3}).Attr("value", 1.25f);
  pb.block(0).Op("v8_twice").Input("X", "x").Output("Out", "y");
  pb.block(0).Op("v8_twice").Input("X", "y").Output("Out", "y");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "fp32[3] {5, 5, 5}");
}

// ABI v9: a plain-C kernel reads and writes scalars in one call each.
TEST(Loader, FrozenAbiV9PluginReadsAndWritesScalars) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v9"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v9");
  EXPECT_EQ(plugins.back().abi_version, 9u);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", int64_t{RILL_INT64}).Attr("value", -7.0f);
  pb.block(0).Op("v9_square").Input("X", "x").Output("Out", "y");
  pb.block(0).Op("v9_square").Input("X", "y").Output("Out", "y");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "int64[1] {2401}");

  ProgramBuilder bad;  // a float is not what the kernel takes: its own error, with the op named
  bad.block(0).Op("fill_constant").Output("Out", "f").Attr("shape", std::vector<int64_t>{1}).Attr("value", 2.0f);
  bad.block(0).Op("v9_square").Input("X", "f").Output("Out", "g");
  Executor bad_exec(registry, std::make_shared<proto::ProgramDesc>(bad.Build()));
  try {
    bad_exec.Run(0, Scope::NewRoot());
    ADD_FAILURE() << "a float X ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v9_square: X must be an int64 scalar"), std::string::npos) << e.what();
  }
}

// ABI v10: a plain-C kernel runs its sub-block in one call, and a failing block's error
// comes back through it.
TEST(Loader, FrozenAbiV10PluginRunsItsSubBlock) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v10"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v10");
  EXPECT_EQ(plugins.back().abi_version, 10u);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "i").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", int64_t{RILL_INT64}).Attr("value", 0.0f);
  auto& body = pb.NewBlock(0);
  body.Op("increment").Input("X", "i").Output("Out", "i").Attr("step", 2.0f);
  pb.block(0).Op("v10_repeat").BlockAttr("sub_block", body.idx()).Attr("times", int64_t{3});
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {6}");

  ProgramBuilder bad;  // the block's increment has no counter to read: its error, through the op
  auto& bad_body = bad.NewBlock(0);
  bad_body.Op("increment").Input("X", "missing").Output("Out", "missing");
  bad.block(0).Op("v10_repeat").BlockAttr("sub_block", bad_body.idx()).Attr("times", int64_t{1});
  Executor bad_exec(registry, std::make_shared<proto::ProgramDesc>(bad.Build()));
  try {
    bad_exec.Run(0, Scope::NewRoot());
    ADD_FAILURE() << "a block reading a missing variable ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v10_repeat"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("increment"), std::string::npos) << e.what();
  }
}

// ABI v11: a plain-C kernel reads its arguments from the frame.
TEST(Loader, FrozenAbiV11PluginReadsItsArgumentsFromTheFrame) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v11"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v11");
  EXPECT_EQ(plugins.back().abi_version, 11u);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", int64_t{RILL_INT64}).Attr("value", 21.0f);
  pb.block(0).Op("v11_double").Input("X", "x").Output("Out", "y");
  pb.block(0).Op("v11_double").Input("X", "y").Output("Out", "z");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "int64[1] {42}");
  EXPECT_EQ(scope->FindVar("z")->GetTensor()->Describe(), "int64[1] {84}");

  ProgramBuilder bad;  // a float is not what the kernel takes: its own error
  bad.block(0).Op("fill_constant").Output("Out", "f").Attr("shape", std::vector<int64_t>{1}).Attr("value", 2.0f);
  bad.block(0).Op("v11_double").Input("X", "f").Output("Out", "g");
  Executor bad_exec(registry, std::make_shared<proto::ProgramDesc>(bad.Build()));
  try {
    bad_exec.Run(0, Scope::NewRoot());
    ADD_FAILURE() << "a float X ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v11_double: X must be an int64 scalar"), std::string::npos) << e.what();
  }
}

// ABI v12: a plain-C go op loads into this host (csp_program_test runs its go blocks).
TEST(Loader, FrozenAbiV12PluginLoads) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v12"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v12");
  EXPECT_EQ(plugins.back().abi_version, 12u);
  EXPECT_NE(registry.FindOp("v12_go"), nullptr);
}

// ABI v7: a plain-C kernel reads the ops of a block when it is created.
TEST(Loader, FrozenAbiV7PluginReadsABlocksOps) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v7"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v7");
  EXPECT_EQ(plugins.back().abi_version, 7u);
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("assign").Input("X", "i").Output("Out", "j");
  body.Op("increment").Input("X", "j").Output("Out", "j");
  for (const char* type : {"increment", "assign", "while"}) {
    pb.block(0).Op("v7_block_ops").Output("Out", type).BlockAttr("sub_block", body.idx()).Attr("of_type", std::string(type));
  }
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("increment")->GetTensor()->Describe(), "int64[1] {2}");
  EXPECT_EQ(scope->FindVar("assign")->GetTensor()->Describe(), "int64[1] {1}");
  EXPECT_EQ(scope->FindVar("while")->GetTensor()->Describe(), "int64[1] {0}");
}

// ABI v4: a plain-C loop op runs its body in a scope from ctx_new_child_scope and keeps it
// while scope_reusable says so: one step scope for every step of a body that nothing
// captures, and the body's own variables stay in it.
TEST(Loader, FrozenAbiV4PluginReusesItsStepScope) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v4"}, {}, {}});
  EXPECT_EQ(plugins.back().name, "frozen_v4");
  EXPECT_EQ(plugins.back().abi_version, 4u);
  ProgramBuilder pb;
  auto& main = pb.block(0);
  auto& body = pb.NewBlock(0);
  main.Op("fill_constant").Output("Out", "i").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", int64_t{RILL_INT64});
  main.Op("v4_repeat").Output("Scopes", "scopes").BlockAttr("sub_block", body.idx()).Attr("times", int64_t{5});
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("assign").Input("X", "i").Output("Out", "tmp");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {5}");
  EXPECT_EQ(scope->FindVar("scopes")->GetTensor()->Describe(), "int64[1] {1}");
  EXPECT_EQ(scope->FindVar("tmp"), nullptr) << "the body's variable stays in its step scope";
}

TEST(Loader, PluginDefinedVariableTypesLiveInScopes) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v1"}, {}, {}});
  ASSERT_NE(registry.FindVarType("frozen_v1.box"), nullptr);
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{4}).Attr("value", 2.5f);
  pb.block(0).Op("v1_box").Input("X", "x").Output("Out", "box");
  pb.block(0).Op("v1_unbox").Input("X", "box").Output("Out", "sum");
  pb.block(0).Op("v1_unbox").Input("X", "x").Output("Out", "bad");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  try {
    exec.Run(0, scope);
    FAIL() << "unboxing a tensor must fail";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "block 0, op 3 (v1_unbox X=[x] -> Out=[bad]): variable holds tensor, not frozen_v1.box");
  }
  EXPECT_EQ(scope->FindVar("box")->Describe(), "frozen_v1.box(sum=10)");
  EXPECT_EQ(scope->FindVar("sum")->GetTensor()->Describe(), "fp32[1] {10}");
}

// A process may load plugins into more than one registry, and drop one: plugins' lookups
// of custom types must then go to a registry still alive, never to the one that is gone
// (they once read it: a crash on a machine whose allocator reused the memory sooner).
TEST(Loader, PluginsResolveCustomTypesInTheNewestRegistryStillAlive) {
  const RillHostApi* host = HostApiTable();
  auto older = std::make_unique<Registry>();
  LoadPlugins(*older, LoadOptions{{kFixtures + "/frozen_v1"}, {}, {}});
  EXPECT_NE(host->var_type_find("frozen_v1.box"), nullptr);
  auto newer = std::make_unique<Registry>();
  LoadPlugins(*newer, LoadOptions{{kFixtures + "/frozen_v2"}, {}, {}});
  EXPECT_EQ(host->var_type_find("frozen_v1.box"), nullptr) << "the newest registry has no frozen_v1";
  EXPECT_NE(host->var_type_find("frozen_v2.mailbox"), nullptr);
  newer.reset();
  EXPECT_NE(host->var_type_find("frozen_v1.box"), nullptr) << "back to the older registry";
  EXPECT_EQ(host->var_type_find("frozen_v2.mailbox"), nullptr);
  older.reset();
  EXPECT_EQ(host->var_type_find("frozen_v1.box"), nullptr);
}

TEST(Loader, DisabledPluginsOnlyInformErrors) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/frozen_v1"}, {}, {"math"}});
  EXPECT_EQ(registry.FindOp("v1_scale"), nullptr);
  EXPECT_EQ(registry.UnknownOpMessage("v1_scale"),
            "op 'v1_scale' is provided by plugin 'frozen_v1', which is not enabled (see --plugins)");
  ExpectContains(LoadError({kPlugins}, {"nosuch"}), "--plugins names 'nosuch', but no plugin of that name was found");
}

}  // namespace
}  // namespace rill::core
