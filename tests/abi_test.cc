// The host's function table, called directly the way a plugin calls it: statuses, null
// arguments, attribute type checks, custom values, LoD, scope handles, slots, arguments.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/abi/host_api.h"
#include "core/abi/status.h"
#include "core/registry/registry.h"
#include "core/runtime/kernel_context.h"
#include "core/runtime/variable.h"

namespace rill::core {
namespace {

const RillHostApi& H() { return *HostApiTable(); }

// Takes a status's message and frees it.
std::string Message(RillStatus* st) {
  EXPECT_NE(st, nullptr);
  if (st == nullptr) return "";
  std::string m = H().status_message(st);
  H().status_release(st);
  return m;
}

TEST(HostApi, DeclaresItsVersionAndSize) {
  EXPECT_EQ(H().abi_version, RILL_ABI_VERSION);
  EXPECT_EQ(H().struct_size, sizeof(RillHostApi));
}

TEST(HostApi, StatusesCarryCodeAndMessage) {
  RillStatus* st = H().status_create(RILL_UNAVAILABLE, "peer gone");
  EXPECT_EQ(H().status_code(st), RILL_UNAVAILABLE);
  EXPECT_STREQ(H().status_message(st), "peer gone");
  H().status_release(st);
  EXPECT_EQ(H().status_code(nullptr), RILL_OK);
}

// A plugin's log line (and the host's own) must not land in a program's output on stdout.
TEST(HostApi, LogLinesGoToStderrWithTheirLevel) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  H().log(3, "disk nearly full");
  H().log(1, "below the default level");
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find("rill: [warning] disk nearly full"), std::string::npos) << err;
  EXPECT_EQ(err.find("below the default level"), std::string::npos) << err;
}

TEST(HostApi, NullArgumentsAreStatusesNotCrashes) {
  EXPECT_EQ(Message(H().var_tensor(nullptr, nullptr)), "var_tensor: null argument");
  EXPECT_EQ(Message(H().register_op(nullptr, nullptr)), "register_op: null argument");
  EXPECT_EQ(Message(H().ctx_run_block(nullptr, 1, nullptr)), "ctx_run_block: null argument");
  EXPECT_EQ(H().ctx_input(nullptr, 0, 0), nullptr);
  EXPECT_EQ(H().scope_find_var(nullptr, "x"), nullptr);
  RillTensorInfo info{};
  info.struct_size = sizeof(info);
  info.dtype = 7;
  H().tensor_info(nullptr, &info);
  EXPECT_EQ(info.dtype, 7) << "nothing written";
}

TEST(HostApi, AttributesAreTypeChecked) {
  OpSchemaEntry schema;
  schema.type = "op";
  schema.attrs.push_back({"n", RILL_ATTR_INT, false, ParseAttrDefault(RILL_ATTR_INT, "7"), ""});
  RillOpInfo info;
  info.type = "op";
  info.schema = &schema;
  info.attrs.push_back(&schema.attrs[0].default_value);
  int64_t n = 0;
  EXPECT_EQ(H().attr_int(&info, "n", &n), nullptr);
  EXPECT_EQ(n, 7);
  double f = 0;
  EXPECT_EQ(Message(H().attr_float(&info, "n", &f)), "attribute 'n' of op 'op' is INT, read as FLOAT");
  EXPECT_EQ(Message(H().attr_int(&info, "m", &n)), "op 'op' declares no attribute 'm'");
}

TEST(HostApi, TensorsAndLod) {
  Variable var;
  auto* v = reinterpret_cast<RillVariable*>(&var);
  RillTensor* t = nullptr;
  ASSERT_EQ(H().var_tensor(v, &t), nullptr);
  RillTensorInfo info{};
  info.struct_size = sizeof(info);
  H().tensor_info(t, &info);
  EXPECT_EQ(info.dtype, -1);
  EXPECT_EQ(info.data, nullptr);
  const int64_t dims[] = {2, 2};
  void* data = nullptr;
  ASSERT_EQ(H().tensor_allocate(t, RILL_FP64, dims, 2, RILL_CPU, 0, &data), nullptr);
  H().tensor_info(t, &info);
  EXPECT_EQ(data, info.data);
  EXPECT_EQ(info.dtype, RILL_FP64);
  EXPECT_EQ(info.numel, 4);
  ASSERT_EQ(info.ndim, 2u);
  EXPECT_EQ(info.dims[1], 2);
  EXPECT_EQ(info.device_type, RILL_CPU);
  const uint64_t level0[] = {0, 1, 2}, level1[] = {0, 1, 3, 4};
  EXPECT_EQ(Message(H().tensor_set_lod_level(t, 1, level1, 4)), "LoD level 1 set before level 0");
  ASSERT_EQ(H().tensor_set_lod_level(t, 0, level0, 3), nullptr);
  ASSERT_EQ(H().tensor_set_lod_level(t, 1, level1, 4), nullptr);
  size_t count = 0;
  const uint64_t* got = H().tensor_lod_level(t, 1, &count);
  ASSERT_EQ(count, 4u);
  EXPECT_EQ(got[2], 3u);
  EXPECT_EQ(H().tensor_lod_levels(t), 2u);
  ASSERT_EQ(H().tensor_truncate_lod(t, 3), nullptr) << "no more levels to drop";
  EXPECT_EQ(H().tensor_lod_levels(t), 2u);
  ASSERT_EQ(H().tensor_truncate_lod(t, 1), nullptr);
  EXPECT_EQ(H().tensor_lod_levels(t), 1u);
  EXPECT_EQ(H().tensor_lod_level(t, 0, &count)[2], 2u) << "the kept level unchanged";
  ASSERT_EQ(H().tensor_truncate_lod(t, 0), nullptr);
  EXPECT_EQ(H().tensor_lod_levels(t), 0u);
  EXPECT_EQ(Message(H().tensor_truncate_lod(nullptr, 0)), "tensor_truncate_lod: null argument");
  EXPECT_EQ(Message(H().tensor_allocate(t, RILL_FP32, dims, 2, RILL_CUDA, 0, &data)).find("cannot allocate on CUDA:0"),
            0u);
}

// tensor_share: the destination views the source's memory in a shape of the same count,
// keeping its own LoD, until either is allocated again: that one then gets new memory and
// the other keeps its values (memory two tensors share is rewritten in place by neither).
TEST(HostApi, SharedMemoryIsRewrittenByNeither) {
  Variable a, b;
  RillTensor *src = nullptr, *dst = nullptr;
  ASSERT_EQ(H().var_tensor(reinterpret_cast<RillVariable*>(&a), &src), nullptr);
  ASSERT_EQ(H().var_tensor(reinterpret_cast<RillVariable*>(&b), &dst), nullptr);
  EXPECT_EQ(Message(H().tensor_share(dst, src, nullptr, 0)), "cannot share the memory of a tensor that holds no value");
  const int64_t two_by_three[] = {2, 3}, three_by_two[] = {3, 2}, four[] = {4};
  void* data = nullptr;
  ASSERT_EQ(H().tensor_allocate(src, RILL_FP32, two_by_three, 2, RILL_CPU, 0, &data), nullptr);
  float* values = static_cast<float*>(data);
  for (int i = 0; i < 6; ++i) values[i] = static_cast<float>(i);
  const uint64_t level[] = {0, 1, 3};
  ASSERT_EQ(H().tensor_set_lod_level(dst, 0, level, 3), nullptr);

  ASSERT_EQ(H().tensor_share(dst, src, three_by_two, 2), nullptr);
  EXPECT_EQ(b.GetTensor()->Describe(), "fp32[3, 2] {0, 1, 2, 3, 4, 5}");
  EXPECT_EQ(b.GetTensor()->data(), data) << "a view, not a copy";
  EXPECT_EQ(H().tensor_lod_levels(dst), 1u) << "its own LoD kept";
  EXPECT_EQ(a.GetTensor()->lod().size(), 0u);
  void* again = nullptr;
  ASSERT_EQ(H().tensor_allocate(dst, RILL_FP32, three_by_two, 2, RILL_CPU, 0, &again), nullptr);
  EXPECT_NE(again, data) << "shared memory is not handed out for writing";
  static_cast<float*>(again)[0] = 100;
  EXPECT_EQ(a.GetTensor()->Describe(), "fp32[2, 3] {0, 1, 2, 3, 4, 5}");
  ASSERT_EQ(H().tensor_allocate(src, RILL_FP32, two_by_three, 2, RILL_CPU, 0, &again), nullptr);
  EXPECT_EQ(again, data) << "no longer shared: written in place";

  ASSERT_EQ(H().tensor_share(dst, src, nullptr, 0), nullptr);  // src's own shape
  EXPECT_EQ(b.GetTensor()->Describe(), "fp32[2, 3] {0, 1, 2, 3, 4, 5}");
  ASSERT_EQ(H().tensor_allocate(src, RILL_FP32, two_by_three, 2, RILL_CPU, 0, &again), nullptr);
  EXPECT_NE(again, data) << "the source, too, gets new memory while shared";
  static_cast<float*>(again)[5] = -1;
  EXPECT_EQ(b.GetTensor()->Describe(), "fp32[2, 3] {0, 1, 2, 3, 4, 5}");

  ASSERT_EQ(H().tensor_share(dst, dst, three_by_two, 2), nullptr) << "a tensor viewing itself: a new shape";
  EXPECT_EQ(b.GetTensor()->Describe(), "fp32[3, 2] {0, 1, 2, 3, 4, 5}");
  EXPECT_EQ(Message(H().tensor_share(dst, src, four, 1)), "cannot view a tensor of 6 elements as shape [4] of 4");
  EXPECT_EQ(Message(H().tensor_share(nullptr, src, nullptr, 0)), "tensor_share: null argument");
}

// var_is_tensor: a variable holding a tensor (with a value or without) or nothing yet, not
// one holding another kind of value.
TEST(HostApi, VariablesSayWhetherTheyHoldATensor) {
  Variable empty, tensor, rows, array;
  auto v = [](Variable& var) { return reinterpret_cast<RillVariable*>(&var); };
  EXPECT_EQ(H().var_is_tensor(v(empty)), 1);
  tensor.GetMutableTensor();
  EXPECT_EQ(H().var_is_tensor(v(tensor)), 1) << "a tensor without a value";
  const int64_t dims[] = {3};
  tensor.GetMutableTensor()->Allocate(RILL_FP32, dims, 1);
  EXPECT_EQ(H().var_is_tensor(v(tensor)), 1);
  rows.GetMutableSelectedRows();
  EXPECT_EQ(H().var_is_tensor(v(rows)), 0);
  array.GetMutableTensorArray();
  EXPECT_EQ(H().var_is_tensor(v(array)), 0);
  EXPECT_EQ(H().var_is_tensor(nullptr), 0);
}

// A custom value is set and read by its type's handle; only a registered type is found,
// and a registered one stays found after its registry is gone.
TEST(HostApi, CustomValuesAreSetAndReadByTheirTypesHandle) {
  static int destroyed = 0;
  RillRegistrar reg;
  reg.plugin = "test";
  reg.var_types.push_back(CustomType{
      VarTypeHandle("test.typed"), "test.typed", "test",
      [](void* p) {
        ++destroyed;
        delete static_cast<int*>(p);
      },
      [](const void* p, char* buf, size_t cap) { snprintf(buf, cap, "box(%d)", *static_cast<const int*>(p)); },
      nullptr});
  Variable var;
  auto* v = reinterpret_cast<RillVariable*>(&var);
  const RillVarType* typed = VarTypeHandle("test.typed");
  EXPECT_EQ(H().var_type_find("test.typed"), nullptr) << "no registry has it yet";
  {
    Registry registry;
    registry.Commit({&reg});
    ASSERT_EQ(H().var_type_find("test.typed"), typed);
    EXPECT_EQ(H().var_set_custom(v, typed, new int(5)), nullptr);
    EXPECT_EQ(*static_cast<int*>(H().var_custom(v, typed)), 5);
    EXPECT_EQ(H().var_set_custom(v, typed, new int(3)), nullptr) << "over the last value, which goes";
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(H().var_custom(v, VarTypeHandle("csp.channel")), nullptr) << "another type's handle";
    EXPECT_EQ(H().var_custom(v, nullptr), nullptr);
    EXPECT_EQ(H().var_custom(nullptr, typed), nullptr);
    char buf[32];
    H().var_describe(v, buf, sizeof(buf));
    EXPECT_STREQ(buf, "box(3)");
    H().var_describe(v, buf, 4);
    EXPECT_STREQ(buf, "box") << "truncated to the buffer";
    EXPECT_EQ(Message(H().var_set_custom(v, VarTypeHandle("test.unregistered"), nullptr)),
              "var_set_custom: the type is not registered");
    EXPECT_EQ(Message(H().var_set_custom(v, nullptr, nullptr)), "var_set_custom: null argument");
    EXPECT_EQ(Message(H().var_set_custom(nullptr, typed, nullptr)), "var_set_custom: null argument");
    var.Clear();
  }
  EXPECT_EQ(destroyed, 2);
  // A type name is one plugin's in the whole process: another plugin's is refused.
  RillRegistrar other;
  other.plugin = "other";
  other.var_types.push_back(CustomType{typed, "test.typed", "other", [](void*) {}, nullptr, nullptr});
  Registry registry;
  try {
    registry.Commit({&other});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "variable type 'test.typed' is registered by both plugin 'test' and plugin 'other'");
  }
  EXPECT_EQ(VarTypeOf(typed)->plugin, "test");
}

TEST(HostApi, OwnedScopeHandlesKeepScopesAlive) {
  auto root = Scope::NewRoot();
  std::weak_ptr<Scope> weak = root;
  RillScope borrowed{root};
  RillScope* child = nullptr;
  ASSERT_EQ(H().scope_new_child(&borrowed, &child), nullptr);
  RillScope* retained = H().scope_retain(child);
  H().scope_var(retained, "x");
  borrowed.scope.reset();
  root.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_NE(H().scope_find_var(child, "x"), nullptr);
  EXPECT_EQ(H().scope_find_var(&borrowed, "x"), nullptr) << "an emptied handle finds nothing";
  H().scope_release(child);
  EXPECT_FALSE(weak.expired());
  H().scope_release(retained);
  EXPECT_TRUE(weak.expired());
}

// An op "op" with inputs X=[x], Missing=[gone] and outputs Out=[out], Rows=[rows], over a
// frame of those variables, for the kernel-context calls.
struct KernelFixture {
  KernelFixture() {
    info.type = "op";
    info.inputs = {{"X", {0}}, {"Missing", {1}}};
    info.outputs = {{"Out", {2}}, {"Rows", {3}}};
    info.names = &names;
    vars[3].GetMutableSelectedRows();
    for (size_t i = 0; i < 4; ++i) frame[i] = &vars[i];
    frame[1] = nullptr;  // "gone" exists in no scope
    info.IndexSlots();   // as Executor::Prepare does
  }
  RillOpInfo info;
  Variable vars[4];
  Variable* frame[4];
  std::vector<std::string> names{"x", "gone", "out", "rows"};
  std::vector<uint64_t> bits{Scope::NameBits("x"), Scope::NameBits("gone"), Scope::NameBits("out"),
                             Scope::NameBits("rows")};
  RillScope scope{Scope::NewRoot()};
  RillKernelContext ctx{&info, frame, &names, bits.data(), &scope, nullptr, 0};
};

// A sub-block run whose block would make nothing of its own skips making its scope
// (Executor::RunSubBlock) until a kernel asks for the scope: then it gets the block's own,
// a child of the op's scope, made once, so what it makes there stays out of the op's.
TEST(HostApi, ARunThatDeferredItsScopeMakesItWhenAKernelAsksForIt) {
  KernelFixture f;
  const std::shared_ptr<Scope> op_scope = f.scope.scope;
  std::shared_ptr<Scope> own;
  f.ctx.deferred_scope = &own;
  RillScope* s = H().ctx_scope(&f.ctx);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(s->scope.get(), own.get());
  EXPECT_EQ(own->parent(), op_scope);
  ASSERT_NE(H().scope_var(s, "made"), nullptr);
  EXPECT_EQ(op_scope->FindVar("made"), nullptr) << "made in the block's own scope, not the op's";
  EXPECT_EQ(H().ctx_scope(&f.ctx), s);
  EXPECT_EQ(H().ctx_scope(&f.ctx)->scope.get(), own.get()) << "made once";
}

// A kernel finds its slots once, by name, and reads its arguments by slot handle.
TEST(HostApi, SlotsAreFoundByNameOnceAndReadByHandle) {
  KernelFixture f;
  EXPECT_EQ(H().op_input_slot(&f.info, "X"), 0);
  EXPECT_EQ(H().op_input_slot(&f.info, "Missing"), 1);
  EXPECT_EQ(H().op_input_slot(&f.info, "Y"), -1);
  EXPECT_EQ(H().op_output_slot(&f.info, "Rows"), 1);
  EXPECT_EQ(H().op_output_slot(nullptr, "Rows"), -1);
  EXPECT_EQ(H().op_input_count(&f.info, 0), 1u);
  EXPECT_EQ(H().op_input_count(&f.info, -1), 0u) << "a slot the op does not list has no arguments";
  EXPECT_STREQ(H().op_output_name(&f.info, 1, 0), "rows");
  EXPECT_EQ(H().op_output_name(&f.info, 1, 1), nullptr);
  EXPECT_EQ(H().op_input_name(&f.info, 7, 0), nullptr);
  EXPECT_EQ(H().ctx_input(&f.ctx, 0, 0), reinterpret_cast<RillVariable*>(&f.vars[0]));
  EXPECT_EQ(H().ctx_output(&f.ctx, 1, 0), reinterpret_cast<RillVariable*>(&f.vars[3]));
  for (const auto& [slot, i] : {std::pair{-1, 0}, {2, 0}, {0, 1}, {1, 0}}) {
    EXPECT_EQ(H().ctx_input(&f.ctx, slot, static_cast<size_t>(i)), nullptr) << slot << "[" << i << "]";
  }
  Variable* made = f.scope.scope->Var("gone");  // made after the run started
  EXPECT_EQ(H().ctx_input(&f.ctx, 1, 0), reinterpret_cast<RillVariable*>(made)) << "looked up again";
}

TEST(HostApi, AnInputAndItsDescriptionComeInOneCall) {
  KernelFixture f;
  RillTensor* t = nullptr;
  RillTensorInfo info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 0, 0, &t, &info)),
            "input X ('x') holds nothing yet, not a tensor value");
  f.vars[0].GetMutableTensor();
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 0, 0, &t, &info)),
            "input X ('x') holds an empty tensor, not a tensor value");
  f.vars[3].Swap(f.vars[0]);
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 0, 0, &t, &info)),
            "input X ('x') holds selected_rows, not a tensor value");
  f.vars[3].Swap(f.vars[0]);
  const int64_t dims[] = {2, 3};
  f.vars[0].GetMutableTensor()->Allocate(RILL_FP32, dims, 2, Place{});
  ASSERT_EQ(H().ctx_input_tensor(&f.ctx, 0, 0, &t, &info), nullptr);
  EXPECT_EQ(t, reinterpret_cast<RillTensor*>(f.vars[0].GetTensor()));
  EXPECT_EQ(info.dtype, RILL_FP32);
  ASSERT_EQ(info.ndim, 2u);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[1], 3);
  EXPECT_EQ(info.numel, 6);
  EXPECT_EQ(info.data, f.vars[0].GetTensor()->data());
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, -1, 0, &t, &info)), "op 'op' has no input #-1[0]");
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 0, 1, &t, &info)), "op 'op' has no input X[1]");
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 1, 0, &t, &info)),
            "input Missing ('gone') does not exist in any scope");
  EXPECT_EQ(Message(H().ctx_input_tensor(&f.ctx, 0, 0, &t, nullptr)), "ctx_input_tensor: null argument");
  EXPECT_EQ(Message(H().ctx_input_tensor(nullptr, 0, 0, &t, &info)), "ctx_input_tensor: null argument");
}

TEST(HostApi, AnOutputIsShapedAndDescribedInOneCall) {
  KernelFixture f;
  RillTensor* t = nullptr;
  RillTensorInfo info{};
  info.struct_size = sizeof(info);
  const int64_t dims[] = {4};
  ASSERT_EQ(H().ctx_output_allocate(&f.ctx, 0, 0, RILL_INT64, dims, 1, RILL_CPU, 0, &t, &info), nullptr);
  const Tensor* out = f.vars[2].GetTensor();
  ASSERT_NE(out, nullptr) << "the empty output variable now holds a tensor";
  EXPECT_EQ(t, reinterpret_cast<const RillTensor*>(out));
  EXPECT_EQ(out->dtype(), RILL_INT64);
  EXPECT_EQ(out->numel(), 4);
  EXPECT_EQ(info.dtype, RILL_INT64);
  EXPECT_EQ(info.numel, 4);
  EXPECT_EQ(info.data, out->data());
  void* const first = info.data;
  ASSERT_EQ(H().ctx_output_allocate(&f.ctx, 0, 0, RILL_INT64, dims, 1, RILL_CPU, 0, &t, &info), nullptr);
  EXPECT_EQ(info.data, first) << "the same shape again keeps the memory";
  EXPECT_EQ(Message(H().ctx_output_allocate(&f.ctx, 1, 0, RILL_INT64, dims, 1, RILL_CPU, 0, &t, &info)),
            "output Rows ('rows') holds selected_rows, not a tensor");
  EXPECT_EQ(Message(H().ctx_output_allocate(&f.ctx, 7, 0, RILL_INT64, dims, 1, RILL_CPU, 0, &t, &info)),
            "op 'op' has no output #7[0]");
  const int64_t negative[] = {-1};
  EXPECT_EQ(Message(H().ctx_output_allocate(&f.ctx, 0, 0, RILL_INT64, negative, 1, RILL_CPU, 0, &t, &info)),
            "cannot allocate a tensor of int64: shape [-1] has a negative dimension");
  EXPECT_EQ(Message(H().ctx_output_allocate(&f.ctx, 0, 0, RILL_INT64, nullptr, 1, RILL_CPU, 0, &t, &info)),
            "ctx_output_allocate: null argument");
}

// ctx_go refuses an argument it cannot bind before it makes or starts anything (the
// fixture has no executor to start a task with). The go blocks it starts are CspPrograms'
// subject: every go op starts its block through it.
TEST(HostApi, GoRefusesArgumentsItCannotBind) {
  KernelFixture f;
  const RillArg past[] = {{0, 1}}, missing[] = {{0, 0}, {1, 0}}, output[] = {{2, 0}};
  f.vars[0].GetMutableTensor();
  EXPECT_EQ(Message(H().ctx_go(&f.ctx, 1, past, 1)), "ctx_go: input X[1] is not an argument of op 'op'");
  EXPECT_EQ(Message(H().ctx_go(&f.ctx, 1, missing, 2)),
            "ctx_go: input Missing[0] ('gone') does not exist in any scope");
  EXPECT_EQ(Message(H().ctx_go(&f.ctx, 1, output, 1)), "ctx_go: input #2[0] is not an argument of op 'op'");
  EXPECT_EQ(Message(H().ctx_go(nullptr, 1, past, 1)), "ctx_go: null argument");
  EXPECT_EQ(Message(H().ctx_go(&f.ctx, 1, nullptr, 1)), "ctx_go: null argument");
}

// A scalar read and written in one call each. Only a one-element CPU tensor of
// shape [1] without LoD reads as a scalar; setting one replaces whatever the variable held,
// in place when its tensor is not shared.
TEST(HostApi, ScalarsAreReadAndWrittenInOneCall) {
  auto h = [](Variable& v) { return reinterpret_cast<RillVariable*>(&v); };
  int32_t dtype = -2;
  uint64_t bits = 0;
  Variable v;
  EXPECT_EQ(H().var_scalar(h(v), &dtype, &bits), 0) << "empty";
  EXPECT_EQ(dtype, -2) << "nothing written when it is not a scalar";
  const int64_t one[] = {1}, three[] = {3}, one_by_one[] = {1, 1};
  *static_cast<int16_t*>(v.GetMutableTensor()->Allocate(RILL_INT16, one, 1)) = -3;
  ASSERT_EQ(H().var_scalar(h(v), &dtype, &bits), 1);
  EXPECT_EQ(dtype, RILL_INT16);
  int16_t back = 0;
  std::memcpy(&back, &bits, sizeof(back));
  EXPECT_EQ(back, -3);
  EXPECT_EQ(bits >> 16, 0u) << "the bytes past the value are zero";
  for (const auto* dims : {three, one_by_one}) {
    Variable w;
    w.GetMutableTensor()->Allocate(RILL_FP32, dims, dims == three ? 1 : 2);
    EXPECT_EQ(H().var_scalar(h(w), &dtype, &bits), 0) << w.Describe();
  }
  Variable with_lod;
  with_lod.GetMutableTensor()->Allocate(RILL_INT64, one, 1);
  with_lod.GetMutableTensor()->mutable_lod() = {{0, 1}};
  EXPECT_EQ(H().var_scalar(h(with_lod), &dtype, &bits), 0) << "a tensor with LoD is not a scalar";

  const double x = 0.75;
  std::memcpy(&bits, &x, sizeof(x));
  const void* memory = nullptr;
  {
    Variable d;
    memory = d.GetMutableTensor()->Allocate(RILL_INT64, one, 1);
    ASSERT_EQ(H().var_set_scalar(h(d), RILL_FP64, bits), nullptr);
    EXPECT_EQ(d.GetTensor()->Describe(), "fp64[1] {0.75}");
    EXPECT_EQ(d.GetTensor()->data(), memory) << "same byte size, not shared: written in place";
    const Tensor alias = *d.GetTensor();
    ASSERT_EQ(H().var_set_scalar(h(d), RILL_FP64, 0), nullptr);
    EXPECT_EQ(alias.Describe(), "fp64[1] {0.75}") << "memory another tensor shares is not written";
    EXPECT_EQ(d.GetTensor()->Describe(), "fp64[1] {0}");
  }
  ASSERT_EQ(H().var_set_scalar(h(with_lod), RILL_BOOL, 1), nullptr);
  EXPECT_EQ(with_lod.GetTensor()->Describe(), "bool[1] {true}");
  EXPECT_TRUE(with_lod.GetTensor()->lod().empty());
  Variable rows;
  rows.GetMutableSelectedRows();
  ASSERT_EQ(H().var_set_scalar(h(rows), RILL_INT8, 0xff), nullptr);
  EXPECT_EQ(rows.Describe(), "int8[1] {-1}");
  EXPECT_EQ(Message(H().var_set_scalar(h(rows), RILL_FP16 + 100, 0)),
            "var_set_scalar: data type 104 is not a tensor element type of at most 8 bytes");
  // A number past 255 that agrees with the int8 scalar's in its low byte is no dtype of it.
  EXPECT_EQ(Message(H().var_set_scalar(h(rows), 0x100 | RILL_INT8, 0)),
            "var_set_scalar: data type 277 is not a tensor element type of at most 8 bytes");
  EXPECT_EQ(rows.Describe(), "int8[1] {-1}");
  EXPECT_EQ(Message(H().var_set_scalar(nullptr, RILL_INT8, 0)), "var_set_scalar: null argument");
  EXPECT_EQ(H().var_scalar(nullptr, &dtype, &bits), 0);
}

}  // namespace
}  // namespace rill::core
