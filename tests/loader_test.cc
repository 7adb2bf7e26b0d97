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
    // Every shipped plugin needs version 1, so it loads into every host (it traces only
    // where the host has version 2's tracing).
    EXPECT_EQ(p.abi_version, 1u) << p.name;
  }
  EXPECT_EQ(names, test::LoadedPlugins());
  EXPECT_EQ(registry.FindOp("select")->plugin, "csp");
  EXPECT_EQ(registry.FindOp("while")->plugin, "core");
  EXPECT_EQ(registry.FindOp("increment")->plugin, "math");
}

// A second LoadPlugins on a loaded registry (builtin = false) adds plugins beside those it
// has; one whose ops are there already is refused and changes nothing.
TEST(Loader, LoadingAgainAddsPlugins) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kFixtures + "/own_small_ops"}, {}, {}});
  ASSERT_EQ(registry.FindOp("select"), nullptr);
  LoadOptions more{{}, {kPlugins + "/librill_csp.so"}, {}};
  more.builtin = false;
  const auto added = LoadPlugins(registry, more);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].name, "csp");
  EXPECT_EQ(registry.FindOp("select")->plugin, "csp");
  EXPECT_EQ(registry.FindOp("while")->plugin, "core");
  EXPECT_EQ(registry.FindOp("increment")->plugin, "own_small_ops");
  EXPECT_EQ(registry.EnabledPluginList(), "core, own_small_ops, csp");
  LoadOptions again{{kFixtures + "/own_small_ops"}, {}, {}};
  again.builtin = false;
  try {
    LoadPlugins(registry, again);
    ADD_FAILURE() << "loading own_small_ops twice was accepted";
  } catch (const Error& e) {
    ExpectContains(e.what(), "is registered by both plugin");
  }
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

// A host of ABI version 1 whose table ends before `entry`, as an older host's ends before
// the entries a later version appended.
RillHostApi HostEndingBefore(size_t entry) {
  RillHostApi table = *HostApiTable();
  table.abi_version = 1;
  table.struct_size = static_cast<uint32_t>(entry);
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

// The SDK reaches every host entry through RILL_HOST_ENTRY, which checks that the host's
// table holds it: in a host whose table ends before ctx_run_loop (as an older host's would
// end before an entry a later version added), own_small_ops registers and runs its ops,
// and the one that calls ctx_run_loop fails naming that entry instead of reading past the
// table.
TEST(Loader, AnEntryTheHostLacksIsAnErrorNamingIt) {
  const RillHostApi short_host = HostEndingBefore(offsetof(RillHostApi, ctx_run_loop));
  RillRegistrar reg;
  ASSERT_EQ(InitWith(kFixtures + "/own_small_ops/librill_own_small_ops.so", &short_host, &reg), "");
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
    ExpectContains(e.what(),
                   "block 0, op 1 (repeat Times=[n]): this plugin calls the host's ctx_run_loop, which "
                   "this host (ABI version 1) does not serve: upgrade rill");
  }
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {10}") << "the increment before it ran";
  RillRegistrar again;  // back to this host's full table for the tests after
  ASSERT_EQ(InitWith(kFixtures + "/own_small_ops/librill_own_small_ops.so", HostApiTable(), &again), "");
}

// sdk.hpp's Tensor::ShareWith on a host without tensor_share (ABI version 1): a CPU output
// gets a copy of the input's values, not a view and not an error.
TEST(Loader, ASharedOutputIsACopyWhereTheHostHasNoSharedMemory) {
  const RillHostApi short_host = HostEndingBefore(offsetof(RillHostApi, tensor_share));
  RillRegistrar reg;
  ASSERT_EQ(InitWith(kPlugins + "/librill_math.so", &short_host, &reg), "");
  Registry registry;
  registry.Commit({&reg});
  ProgramBuilder pb;
  pb.block(0).Op("reshape2").Input("X", "x").Output("Out", "flat").Attr("shape", std::vector<int64_t>{4});
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  float* x = static_cast<float*>(scope->Var("x")->GetMutableTensor()->Allocate(RILL_FP32, {2, 2}));
  for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(i + 1);
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("flat")->GetTensor()->Describe(), "fp32[4] {1, 2, 3, 4}");
  EXPECT_NE(scope->FindVar("flat")->GetTensor()->data(), x) << "a copy";
  RillRegistrar again;  // back to this host's full table for the tests after
  ASSERT_EQ(InitWith(kPlugins + "/librill_math.so", HostApiTable(), &again), "");
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

// A process may load plugins into more than one registry, and drop one. Variable types
// are process-wide, as devices are: a type a registry committed resolves by name, to the
// same handle and definition, whichever registries come and go (a value made under one
// registry may outlive it).
TEST(Loader, CustomTypesAreProcessWideAcrossRegistries) {
  const RillHostApi* host = HostApiTable();
  auto older = std::make_unique<Registry>();
  LoadPlugins(*older, LoadOptions{{kFixtures + "/compat_1_0"}, {}, {}});
  const RillVarType* box = host->var_type_find("compat.box");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(VarTypeOf(box)->plugin, "compat_1_0");
  auto newer = std::make_unique<Registry>();
  LoadPlugins(*newer, LoadOptions{{kPlugins, kFixtures + "/compat_1_0"}, {}, {"csp", "compat_1_0"}});
  EXPECT_EQ(host->var_type_find("compat.box"), box) << "the same plugin in a second registry: the same type";
  const RillVarType* channel = host->var_type_find("csp.channel");
  ASSERT_NE(channel, nullptr);
  newer.reset();
  older.reset();
  EXPECT_EQ(host->var_type_find("compat.box"), box) << "no registry is left, and the type stays";
  EXPECT_EQ(host->var_type_find("csp.channel"), channel);
}

TEST(Loader, DisabledPluginsOnlyInformErrors) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kPlugins, kFixtures + "/compat_1_0"}, {}, {"math"}});
  EXPECT_EQ(registry.FindOp("c_scale"), nullptr);
  EXPECT_EQ(registry.UnknownOpMessage("c_scale"),
            "op 'c_scale' is provided by plugin 'compat_1_0', which is not enabled (see --plugins)");
  ExpectContains(LoadError({kPlugins}, {"nosuch"}), "--plugins names 'nosuch', but no plugin of that name was found");
}

}  // namespace
}  // namespace rill::core
