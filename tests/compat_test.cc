// The ABI 1.0 compatibility kit: tests/compat/abi_1_0_plugin.c, plain C built against the
// frozen version 1 header, runs in this host with every answer checked, and in a host whose
// table has an entry appended after version 1's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/abi/host_api.h"
#include "core/abi/status.h"
#include "core/errors.h"
#include "core/loader/plugin_loader.h"
#include "core/program/builder.h"
#include "core/runtime/executor.h"

namespace rill::core {
namespace {

const std::string kCompat = std::string(RILL_FIXTURE_DIR) + "/compat_1_0";
const std::string kPlugins = RILL_PLUGIN_DIR;

// The number of checks c_check makes: one per CHECK and CHECK_OK in the plugin's source,
// and the count it writes.
int64_t ChecksInSource() {
  std::ifstream in(std::string(RILL_SOURCE_DIR) + "/tests/compat/abi_1_0_plugin.c");
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  int64_t n = 1;
  for (const char* macro : {"  CHECK(", "  CHECK_OK("}) {
    for (size_t at = source.find(macro); at != std::string::npos; at = source.find(macro, at + 1)) ++n;
  }
  return n;
}

// c_check X=[a, b] -> Out=[out], Rows=[rows] (i=7, blk=1, blks=[1]); block 1 holds c_add1.
std::shared_ptr<proto::ProgramDesc> CheckProgram() {
  ProgramBuilder pb;
  BlockBuilder& inner = pb.NewBlock(0);
  inner.Op("c_add1").Input("X", "n").Output("Out", "n");
  OpBuilder check = pb.block(0).Op("c_check");
  check.Input("X", {"a", "b"}).Output("Out", "out").Output("Rows", "rows");
  check.Attr("i", int64_t{7}).BlockAttr("blk", inner.idx());
  proto::OpDesc::Attr* blks = check.desc()->add_attrs();
  blks->set_name("blks");
  blks->set_type(proto::BLOCKS);
  blks->add_blocks_idx(inner.idx());
  return std::make_shared<proto::ProgramDesc>(pb.Build());
}

std::shared_ptr<Scope> CheckScope() {
  auto scope = Scope::NewRoot();
  Tensor* a = scope->Var("a")->GetMutableTensor();
  a->Allocate(RILL_FP32, {2, 3});
  a->mutable_lod() = {{0, 2}};
  scope->Var("b")->SetScalar(RILL_INT64, 41);
  return scope;
}

TEST(Compat, TheFrozenPluginMakesEveryCallAndEachAnswerHolds) {
  Registry registry;
  const auto plugins = LoadPlugins(registry, LoadOptions{{kCompat}, {}, {}});
  EXPECT_EQ(plugins.back().name, "compat_1_0");
  EXPECT_EQ(plugins.back().abi_version, 1u);
  Executor exec(registry, CheckProgram());
  auto scope = CheckScope();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("out")->GetTensor()->Describe(), "int64[1] {" + std::to_string(ChecksInSource()) + "}");
  Variable* rows = scope->FindVar("rows");
  EXPECT_EQ(rows->Describe(), "selected_rows height 10, 2 rows, value fp32[2, 1] {3, 4}");
  EXPECT_EQ(rows->GetMutableSelectedRows()->rows, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(scope->FindVar("c_check.made")->Describe(), "bool[1] {true}") << "made by name, swapped";

  scope->Var("b")->SetScalar(RILL_INT32, 41);
  try {
    exec.Run(0, scope);
    ADD_FAILURE() << "c_check passed an int32 b";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block 0, op 0 (c_check X=[a, b] -> Out=[out] Rows=[rows]): c_check: "
                                         "failed: host->var_is_initialized(vb) && host->var_scalar(vb, &dtype, "
                                         "&bits) && dtype == RILL_INT64"),
              std::string::npos)
        << e.what();
  }
}

// A kernel with state, custom values, the scalar path, loops and sub-blocks, each by what
// it leaves in the scope.
TEST(Compat, TheFrozenPluginsOpsComputeWhatTheySay) {
  Registry registry;
  LoadPlugins(registry, LoadOptions{{kPlugins, kCompat}, {}, {}});
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  main.Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{3}).Attr("value", 1.5f);
  main.Op("c_scale").Input("X", "x").Output("Out", "y");                       // factor defaults to 2
  main.Op("c_scale").Input("X", "y").Output("Out", "y").Attr("factor", 0.5f);  // in place
  main.Op("c_box").Input("X", "x").Output("Out", "box");
  main.Op("assign").Input("X", "box").Output("Out", "box_copy");  // through the type's copy
  main.Op("c_unbox").Input("X", "box_copy").Output("Out", "sum");
  main.Op("c_add1").Input("X", "scalar").Output("Out", "scalar");  // the scalar path: + 100
  main.Op("c_add1").Input("X", "pair").Output("Out", "pair");      // compute: + 1
  BlockBuilder& body = pb.NewBlock(0);
  body.Op("c_add1").Input("X", "pair").Output("Out", "pair");
  main.Op("c_loop").Input("Times", "three").BlockAttr("sub_block", body.idx());
  main.Op("c_once").BlockAttr("sub_block", body.idx());
  main.Op("c_unbox").Input("X", "x").Output("Out", "bad");
  Executor exec(registry, std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  scope->Var("scalar")->SetScalar(RILL_INT64, 5);
  scope->Var("three")->SetScalar(RILL_INT64, 3);
  int64_t* pair = static_cast<int64_t*>(scope->Var("pair")->GetMutableTensor()->Allocate(RILL_INT64, {2}));
  pair[0] = 10;
  pair[1] = 20;
  try {
    exec.Run(0, scope);
    ADD_FAILURE() << "c_unbox took a tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(c_unbox X=[x] -> Out=[bad]): c_unbox: X holds fp32[3] {1.5, 1.5, 1.5}, "
                                         "not a compat.box"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(scope->FindVar("y")->GetTensor()->Describe(), "fp32[3] {1.5, 1.5, 1.5}");
  EXPECT_EQ(scope->FindVar("box")->Describe(), "compat.box(sum=4.5)");
  EXPECT_EQ(scope->FindVar("sum")->GetTensor()->Describe(), "fp32[1] {4.5}");
  EXPECT_EQ(scope->FindVar("scalar")->GetTensor()->Describe(), "int64[1] {105}");
  EXPECT_EQ(scope->FindVar("pair")->GetTensor()->Describe(), "int64[2] {16, 26}") << "1 + 3 loop steps + 2 runs";
}

// The table of a host that serves a version after 1: version 1's entries, then one more.
struct AppendedHost {
  RillHostApi v1;
  void (*appended)(void);
};

// A plugin built against 1.0 runs in a host whose table has grown past it.
TEST(Compat, TheFrozenPluginRunsInAHostWithEntriesAppended) {
  static AppendedHost host{*HostApiTable(), [] {}};
  host.v1.abi_version = RILL_ABI_VERSION + 1;
  host.v1.struct_size = sizeof(AppendedHost);
  void* lib = dlopen((kCompat + "/librill_compat_1_0.so").c_str(), RTLD_NOW | RTLD_LOCAL);  // as the loader does
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto get = reinterpret_cast<RillGetPluginFn>(dlsym(lib, RILL_ENTRY_POINT_NAME));
  RillRegistrar reg;
  reg.plugin = get()->name;
  ASSERT_EQ(get()->init(&host.v1, &reg), nullptr);
  Registry registry;
  LoadPlugins(registry, LoadOptions{{}, {}, {}});  // the host's own ops only
  registry.Commit({&reg});
  Executor exec(registry, CheckProgram());
  auto scope = CheckScope();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("out")->GetTensor()->Describe(), "int64[1] {" + std::to_string(ChecksInSource()) + "}");
  RillRegistrar again;  // back to this host's table for the tests after
  again.plugin = get()->name;
  ASSERT_EQ(get()->init(HostApiTable(), &again), nullptr);
}

}  // namespace
}  // namespace rill::core
