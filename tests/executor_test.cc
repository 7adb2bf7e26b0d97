#include "core/runtime/executor.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "core/abi/host_api.h"
#include "core/errors.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "test_util.h"

namespace rill::core {
namespace {

void Fill(BlockBuilder& b, const std::string& out, int32_t dtype, float value, std::vector<int64_t> shape = {1}) {
  b.Op("fill_constant").Output("Out", out).Attr("shape", shape).Attr("dtype", dtype).Attr("value", value);
}

int64_t Int64Of(const Scope& scope, const std::string& name) {
  const Variable* v = scope.FindVar(name);
  EXPECT_NE(v, nullptr) << name;
  return v ? *v->GetTensor()->data_as<int64_t>() : -1;
}

// i = 0; s = 0; while i < n: { i += 1; if i < 5: s += i }
std::shared_ptr<proto::ProgramDesc> LoopProgram(float n) {
  ProgramBuilder pb;
  auto& main = pb.block(0);
  auto& body = pb.NewBlock(0);
  auto& then = pb.NewBlock(body.idx());
  Fill(main, "i", RILL_INT64, 0);
  Fill(main, "n", RILL_INT64, n);
  Fill(main, "five", RILL_INT64, 5);
  Fill(main, "s", RILL_INT64, 0);
  main.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  main.Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Var("small", RILL_BOOL, {1});
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("less_than").Input("X", "i").Input("Y", "five").Output("Out", "small");
  body.Op("conditional_block")
      .Input("Cond", "small")
      .BlockAttr("sub_block", then.idx())
      .Attr("is_scalar_condition", true);
  body.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  then.Op("elementwise_add").Input("X", "s").Input("Y", "i").Output("Out", "s");
  auto p = std::make_shared<proto::ProgramDesc>(pb.Build());
  ValidateProgramOrThrow(*p, test::ShippedRegistry());
  return p;
}

TEST(Executor, RunsWhileAndConditionalBlock) {
  Executor exec(test::ShippedRegistry(), LoopProgram(10));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(Int64Of(*scope, "i"), 10);
  EXPECT_EQ(Int64Of(*scope, "s"), 1 + 2 + 3 + 4);
  EXPECT_EQ(scope->FindVar("small"), nullptr) << "a sub-block's declared variables stay in its scope";
}

TEST(Executor, PreparedOnceRunsManyTimes) {
  Executor exec(test::ShippedRegistry(), LoopProgram(3));
  auto scope = Scope::NewRoot();
  for (int run = 0; run < 50; ++run) {
    exec.Run(0, scope);
    ASSERT_EQ(Int64Of(*scope, "s"), 1 + 2 + 3);
  }
}

TEST(Executor, SameExecutorRunsConcurrentlyInSeparateScopes) {
  Executor exec(test::ShippedRegistry(), LoopProgram(20));
  std::vector<std::thread> threads;
  std::vector<int64_t> sums(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        auto scope = Scope::NewRoot();
        exec.Run(0, scope);
        sums[t] = Int64Of(*scope, "s");
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int64_t s : sums) EXPECT_EQ(s, 10);
}

void SetInt64(Variable* v, int64_t value) {
  *static_cast<int64_t*>(v->GetMutableTensor()->Allocate(RILL_INT64, {1})) = value;
}

// A block run again in the same scope reuses the names it resolved there, but never past a
// variable created on the scope chain since: one that shadows a resolved name, or one that
// a name found nowhere before now resolves to.
TEST(Executor, ARerunInTheSameScopeSeesVariablesCreatedOnTheChainSince) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  body.Op("assign").Input("X", "x").Output("Out", "y");
  auto program = std::make_shared<proto::ProgramDesc>(pb.Build());
  Executor exec(test::ShippedRegistry(), program);
  auto root = Scope::NewRoot();
  auto mid = root->NewChild();
  auto step = mid->NewChild();
  EXPECT_THROW(exec.Run(1, step), Error) << "x exists nowhere yet";
  SetInt64(root->Var("x"), 1);
  for (int run = 0; run < 3; ++run) {
    exec.Run(1, step);
    ASSERT_EQ(Int64Of(*step, "y"), 1) << "run " << run;
  }
  SetInt64(mid->Var("x"), 2);  // shadows the root's x from now on
  exec.Run(1, step);
  EXPECT_EQ(Int64Of(*step, "y"), 2);
  SetInt64(mid->Var("x"), 3);  // a new value, not a new variable: still the same one
  exec.Run(1, step);
  EXPECT_EQ(Int64Of(*step, "y"), 3);
}

// A loop keeps the names it resolved across its steps, but never past a variable created
// on the scope chain since; each run of the loop starts in a new step scope.
TEST(Executor, ALoopRunAgainSeesVariablesCreatedOnTheChainSince) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  body.Op("elementwise_add").Input("X", "total").Input("Y", "x").Output("Out", "total");
  body.Op("assign").Input("X", "x").Output("Out", "last");  // a variable of the step scope
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto root = Scope::NewRoot();
  auto mid = root->NewChild();
  SetInt64(root->Var("total"), 0);
  SetInt64(root->Var("x"), 1);
  int left = 0;
  const auto run = [&](int steps) {
    left = steps;
    exec.RunLoop(
        1, mid, [](void* n) { return (*static_cast<int*>(n))-- > 0; }, &left);
  };
  run(3);
  EXPECT_EQ(Int64Of(*root, "total"), 3);
  SetInt64(root->Var("x"), 2);  // a new value, not a new variable
  run(2);
  EXPECT_EQ(Int64Of(*root, "total"), 7);
  SetInt64(mid->Var("x"), 10);  // shadows the root's x from now on
  run(1);
  EXPECT_EQ(Int64Of(*root, "total"), 17);
  run(0);
  EXPECT_EQ(Int64Of(*root, "total"), 17) << "a loop whose condition is false at once runs no step";
  EXPECT_EQ(mid->FindVar("last"), nullptr) << "the step's variables stay in its scope";
}

// i = start; c = i < n; while c { steps += 1; j = increment(i, step); c = j < n; [i = j] }:
// Fluid's counted loop, whose increment and less_than run through their kernels' scalar
// paths when the values allow. Returns "i; steps; c" after the run.
struct CountedLoop {
  int32_t dtype = RILL_INT64;
  float step = 1, limit = 5;
  std::vector<int64_t> counter_shape = {1}, limit_shape = {1};
  int32_t limit_dtype = -1;    // -1: the counter's
  bool separate_next = false;  // j is its own variable, copied back to i
  // Refilled by the body before the step, so that the loop starts and the step fails.
  std::string refill;
  int32_t refill_dtype = RILL_INT64;
  std::vector<int64_t> refill_shape = {1};
};
CountedLoop Counting(int32_t dtype, float step, float limit) {
  CountedLoop loop;
  loop.dtype = dtype;
  loop.step = step;
  loop.limit = limit;
  return loop;
}
std::string RunCountedLoop(const CountedLoop& loop) {
  ProgramBuilder pb;
  auto& main = pb.block(0);
  auto& body = pb.NewBlock(0);
  Fill(main, "i", loop.dtype, 0, loop.counter_shape);
  Fill(main, "n", loop.limit_dtype < 0 ? loop.dtype : loop.limit_dtype, loop.limit, loop.limit_shape);
  Fill(main, "steps", RILL_INT64, 0);
  Fill(main, "one", RILL_INT64, 1);
  main.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "c");
  main.Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Op("elementwise_add").Input("X", "steps").Input("Y", "one").Output("Out", "steps");
  if (!loop.refill.empty()) Fill(body, loop.refill, loop.refill_dtype, 0, loop.refill_shape);
  const std::string next = loop.separate_next ? "j" : "i";
  body.Op("increment").Input("X", "i").Output("Out", next).Attr("step", loop.step);
  body.Op("less_than").Input("X", next).Input("Y", "n").Output("Out", "c");
  if (loop.separate_next) body.Op("assign").Input("X", "j").Output("Out", "i");
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  return scope->FindVar("i")->GetTensor()->Describe() + "; " + scope->FindVar("steps")->GetTensor()->Describe() + "; " +
         scope->FindVar("c")->GetTensor()->Describe();
}

TEST(Executor, ACountedLoopCountsAsItsIncrementAndLessThanWould) {
  EXPECT_EQ(RunCountedLoop({}), "int64[1] {5}; int64[1] {5}; bool[1] {false}");
  // An integer counter's step is the attribute cast to the counter's type: 2.5 -> 2.
  EXPECT_EQ(RunCountedLoop(Counting(RILL_INT32, 2.5f, 7)), "int32[1] {8}; int64[1] {4}; bool[1] {false}");
  EXPECT_EQ(RunCountedLoop(Counting(RILL_FP32, 2.5f, 7)), "fp32[1] {7.5}; int64[1] {3}; bool[1] {false}");
  EXPECT_EQ(RunCountedLoop(Counting(RILL_FP64, 0.1f, 0.35f)), "fp64[1] {0.4}; int64[1] {4}; bool[1] {false}");
  CountedLoop separate;
  separate.separate_next = true;
  EXPECT_EQ(RunCountedLoop(separate), "int64[1] {5}; int64[1] {5}; bool[1] {false}");
  // Shapes the scalar paths leave to Compute: the compare broadcasts.
  CountedLoop broadcast;
  broadcast.counter_shape = {1, 1};
  broadcast.limit = 3;
  EXPECT_EQ(RunCountedLoop(broadcast), "int64[1, 1] {3}; int64[1] {3}; bool[1, 1] {false}");
}

// A loop stops on its own Condition variable: here the body's last compare writes d, while
// the loop runs on c (i < 3), so the loop must stop at 3, not at the last compare's limit 5.
TEST(Executor, ALoopTakesItsConditionFromItsConditionVariableOnly) {
  ProgramBuilder pb;
  auto& main = pb.block(0);
  auto& body = pb.NewBlock(0);
  Fill(main, "i", RILL_INT64, 0, {1});
  Fill(main, "m", RILL_INT64, 3, {1});
  Fill(main, "n", RILL_INT64, 5, {1});
  Fill(main, "d", RILL_BOOL, 0, {1});
  main.Op("less_than").Input("X", "i").Input("Y", "m").Output("Out", "c");
  main.Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("less_than").Input("X", "i").Input("Y", "m").Output("Out", "c");
  body.Op("increment").Input("X", "i").Output("Out", "i").Attr("step", 0.0f);
  body.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "d");
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(scope->FindVar("i")->GetTensor()->Describe(), "int64[1] {3}");
  EXPECT_EQ(scope->FindVar("d")->GetTensor()->Describe(), "bool[1] {true}");
}

// A counter and its compare sharing variables in every way compute what the two ops one
// after the other compute: each op's scalar path reads all its inputs before it writes.
TEST(Executor, ACounterAndItsCompareSharingVariablesCountAsTheOpsInTurn) {
  const auto run = [](const std::string& out, const std::string& limit, const std::string& cond) {
    ProgramBuilder pb;
    Fill(pb.block(0), "i", RILL_INT64, 4);
    Fill(pb.block(0), "n", RILL_INT64, 5);
    pb.block(0).Op("increment").Input("X", "i").Output("Out", out);
    pb.block(0).Op("less_than").Input("X", out).Input("Y", limit).Output("Out", cond);
    Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
    auto scope = Scope::NewRoot();
    try {
      exec.Run(0, scope);
      exec.Run(0, scope);  // the second run meets what the first left
    } catch (const Error& e) {
      return std::string(e.what());
    }
    std::string described;
    for (const std::string& name : std::vector<std::string>{"i", "n", out, cond}) {
      described += (described.empty() ? "" : "; ") + scope->FindVar(name)->GetTensor()->Describe();
    }
    return described;
  };
  EXPECT_EQ(run("i", "n", "c"), "int64[1] {5}; int64[1] {5}; int64[1] {5}; bool[1] {false}");
  EXPECT_EQ(run("j", "i", "c"), "int64[1] {4}; int64[1] {5}; int64[1] {5}; bool[1] {false}");
  EXPECT_EQ(run("i", "i", "c"), "int64[1] {5}; int64[1] {5}; int64[1] {5}; bool[1] {false}");
  // A compare writing its bool over its own operand is the kernel's error, scalars or not.
  EXPECT_NE(run("j", "n", "j").find("op 3 (less_than X=[j] Y=[n] -> Out=[j]): Out is the same variable as X"),
            std::string::npos)
      << run("j", "n", "j");
  EXPECT_NE(run("j", "n", "n").find("op 3 (less_than X=[j] Y=[n] -> Out=[n]): Out is the same variable as Y"),
            std::string::npos)
      << run("j", "n", "n");
}

TEST(Executor, ACountedLoopTheKernelsRefuseFailsAsTheyDo) {
  const auto error = [](const CountedLoop& loop) -> std::string {
    try {
      RunCountedLoop(loop);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  CountedLoop mixed;
  mixed.refill = "n";
  mixed.refill_dtype = RILL_FP32;
  EXPECT_NE(error(mixed).find("block 1, op 3 (less_than X=[i] Y=[n] -> Out=[c]): "), std::string::npos) << error(mixed);
  CountedLoop wide;
  wide.refill = "i";
  wide.refill_shape = {2};
  EXPECT_NE(error(wide).find("block 1, op 2 (increment X=[i] -> Out=[i]): X must have exactly one element, it has 2"),
            std::string::npos)
      << error(wide);
}

// Out = X <op> Y on two fills of `dtype` and `shape`, Out first filled as `out_dtype` and
// `out_shape` (no fill when out_dtype < 0; Out is X itself with out = "x"), run twice so
// that the second run meets what the first left. Returns Out described, or the error.
struct Binary {
  std::string op = "elementwise_add";
  int32_t dtype = RILL_INT64;
  float x = 2, y = 3;
  std::vector<int64_t> shape = {1};
  int32_t y_dtype = -1;  // -1: dtype
  std::string out = "out";
  int32_t out_dtype = -1;
  std::vector<int64_t> out_shape = {1};
};
std::string RunBinary(const Binary& b) {
  ProgramBuilder pb;
  auto& main = pb.block(0);
  Fill(main, "x", b.dtype, b.x, b.shape);
  Fill(main, "y", b.y_dtype < 0 ? b.dtype : b.y_dtype, b.y, b.shape);
  if (b.out_dtype >= 0) Fill(main, b.out, b.out_dtype, 7, b.out_shape);
  main.Op(b.op).Input("X", "x").Input("Y", "y").Output("Out", b.out);
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  try {
    exec.Run(0, scope);
    const std::string first = scope->FindVar(b.out)->GetTensor()->Describe();
    if (b.out != "x") exec.Run(0, scope);  // X is refilled: the same result again
    const std::string second = scope->FindVar(b.out)->GetTensor()->Describe();
    return first == second || b.out == "x" ? first : first + " then " + second;
  } catch (const Error& e) {
    return e.what();
  }
}

// elementwise_add, _sub and _mul on scalars take their kernels' scalar path and write
// what their kernels write; every other case goes to the kernel.
TEST(Executor, AScalarAddSubOrMulWritesWhatItsKernelWould) {
  EXPECT_EQ(RunBinary({}), "int64[1] {5}");
  Binary b;
  b.op = "elementwise_sub";
  b.dtype = RILL_INT32;
  EXPECT_EQ(RunBinary(b), "int32[1] {-1}");
  b.op = "elementwise_mul";
  b.dtype = RILL_FP32;
  b.x = 2.5f;
  EXPECT_EQ(RunBinary(b), "fp32[1] {7.5}");
  b.op = "elementwise_add";
  b.dtype = RILL_FP64;
  EXPECT_EQ(RunBinary(b), "fp64[1] {5.5}");
  // Out is X (a running sum), or held a scalar of another dtype, or a wider tensor.
  Binary sum;
  sum.out = "x";
  EXPECT_EQ(RunBinary(sum), "int64[1] {5}");
  Binary retyped;
  retyped.out_dtype = RILL_FP32;
  EXPECT_EQ(RunBinary(retyped), "int64[1] {5}");
  Binary wide_out;
  wide_out.out_dtype = RILL_INT64;
  wide_out.out_shape = {3};
  EXPECT_EQ(RunBinary(wide_out), "int64[1] {5}");
  // Not scalars: the kernel broadcasts.
  Binary matrix;
  matrix.shape = {1, 1};
  EXPECT_EQ(RunBinary(matrix), "int64[1, 1] {5}");
  Binary pair;
  pair.shape = {2};
  EXPECT_EQ(RunBinary(pair), "int64[2] {5, 5}");
  // Operands of two dtypes: the kernel's error.
  Binary mixed;
  mixed.y_dtype = RILL_FP32;
  EXPECT_NE(RunBinary(mixed).find("block 0, op 2 (elementwise_add X=[x] Y=[y] -> Out=[out]): "), std::string::npos)
      << RunBinary(mixed);
}

// Integer division by zero declines the scalar path, so the kernel gives its error; the
// other elementwise ops compute on scalars too.
TEST(Executor, AScalarDivisionByZeroFailsAsItsKernelDoes) {
  Binary div;
  div.op = "elementwise_div";
  div.y = 0;
  EXPECT_NE(RunBinary(div).find("integer division by zero"), std::string::npos) << RunBinary(div);
  div.y = 2;
  EXPECT_EQ(RunBinary(div), "int64[1] {1}");
  Binary max;
  max.op = "elementwise_max";
  EXPECT_EQ(RunBinary(max), "int64[1] {3}");
}

// fill_constant of shape [1] takes its kernel's scalar path on a CPU executor. Fills
// `dtype` with `value` into Out, which held `before` (nothing, when absent), and returns Out
// described, with whether its memory stayed where it was.
struct FillResult {
  std::string out;
  bool same_memory = false;
};
FillResult RunFill(int32_t dtype, float value, std::optional<std::pair<int32_t, std::vector<int64_t>>> before) {
  ProgramBuilder pb;
  Fill(pb.block(0), "out", dtype, value);
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  void* memory = nullptr;
  if (before) memory = scope->Var("out")->GetMutableTensor()->Allocate(before->first, before->second);
  exec.Run(0, scope);
  const Tensor* t = scope->FindVar("out")->GetTensor();
  return {t->Describe(), t->data() == memory};
}

TEST(Executor, AScalarFillWritesWhatItsKernelWould) {
  const std::pair<int32_t, std::vector<int64_t>> wide{RILL_INT64, {3}};  // not a scalar: the kernel fills
  for (auto [dtype, expected] : std::vector<std::pair<int32_t, std::string>>{{RILL_INT32, "int32[1] {-2}"},
                                                                             {RILL_INT64, "int64[1] {-2}"},
                                                                             {RILL_FP32, "fp32[1] {-2.5}"},
                                                                             {RILL_FP64, "fp64[1] {-2.5}"}}) {
    SCOPED_TRACE(expected);
    EXPECT_EQ(RunFill(dtype, -2.5f, std::nullopt).out, expected);
    EXPECT_EQ(RunFill(dtype, -2.5f, wide).out, expected);
    // A scalar of the fill's dtype is written in place; one of another dtype is retyped.
    EXPECT_TRUE(RunFill(dtype, -2.5f, std::pair{dtype, std::vector<int64_t>{1}}).same_memory);
    EXPECT_EQ(
        RunFill(dtype, -2.5f, std::pair{dtype == RILL_FP64 ? RILL_INT32 : RILL_FP64, std::vector<int64_t>{1}}).out,
        expected);
  }
  // The value is a float attribute, widened as the kernel widens it.
  EXPECT_EQ(RunFill(RILL_FP64, 0.1f, std::nullopt).out, RunFill(RILL_FP64, 0.1f, wide).out);
}

// The scalar path writes what Compute writes (Out holding a wider tensor takes Compute).
TEST(Executor, AScalarFillOfAnyDtypeWritesWhatComputeWrites) {
  const std::pair<int32_t, std::vector<int64_t>> wide{RILL_INT64, {3}};
  EXPECT_EQ(RunFill(RILL_BOOL, 1, std::nullopt).out, "bool[1] {true}");
  EXPECT_EQ(RunFill(RILL_BOOL, 1, std::nullopt).out, RunFill(RILL_BOOL, 1, wide).out);
  EXPECT_EQ(RunFill(RILL_INT32, 7.9f, std::nullopt).out, "int32[1] {7}");
  EXPECT_EQ(RunFill(RILL_INT32, 7.9f, std::nullopt).out, RunFill(RILL_INT32, 7.9f, wide).out);
}

std::string RunAndGetError(const proto::ProgramDesc& program) {
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(program));
  try {
    exec.Run(0, Scope::NewRoot());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Executor, KernelErrorNamesBlockOpTypeAndVariables) {
  ProgramBuilder pb;
  Fill(pb.block(0), "a", RILL_FP32, 1, {2, 3});
  Fill(pb.block(0), "b", RILL_FP32, 1, {4});
  pb.block(0).Op("elementwise_add").Input("X", "a").Input("Y", "b").Output("Out", "c");
  EXPECT_EQ(RunAndGetError(pb.Build()),
            "block 0, op 2 (elementwise_add X=[a] Y=[b] -> Out=[c]): cannot broadcast X [2, 3] and Y [4] (axis -1): "
            "dimension 1 is 3 in X and 4 in Y");
}

TEST(Executor, NestedErrorsKeepTheChain) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  Fill(pb.block(0), "c", RILL_BOOL, 1);
  pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  Fill(body, "flag", RILL_BOOL, 1);
  body.Op("increment").Input("X", "flag").Output("Out", "flag");
  const std::string err = RunAndGetError(pb.Build());
  EXPECT_EQ(err.rfind("block 0, op 1 (while Condition=[c]): block 1, op 1 (increment X=[flag] -> Out=[flag]): ", 0), 0u)
      << err;
  EXPECT_NE(err.find("no CPU kernel for dtype bool (registered: CPU/fp32, CPU/fp64, CPU/int32, CPU/int64"),
            std::string::npos)
      << err;
}

TEST(Executor, MissingInputIsAClearError) {
  ProgramBuilder pb;
  pb.block(0).Op("increment").Input("X", "never_written").Output("Out", "y");
  const std::string err = RunAndGetError(pb.Build());
  EXPECT_NE(err.find("block 0, op 0 (increment X=[never_written] -> Out=[y])"), std::string::npos) << err;
  EXPECT_NE(err.find("'never_written'"), std::string::npos) << err;
}

TEST(Executor, AttributeDefaultsApply) {
  ProgramBuilder pb;
  Fill(pb.block(0), "x", RILL_INT32, 41);
  pb.block(0).Op("increment").Input("X", "x").Output("Out", "x");  // step defaults to 1
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  exec.Run(0, scope);
  EXPECT_EQ(*scope->FindVar("x")->GetTensor()->data_as<int32_t>(), 42);
}

TEST(Executor, PersistableVariablesLiveInTheRootScope) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0)
      .Op("conditional_block")
      .Input("Cond", "yes")
      .BlockAttr("sub_block", body.idx())
      .Attr("is_scalar_condition", true);
  body.Var("kept", RILL_INT64, {1}, /*persistable=*/true);
  body.Var("local", RILL_INT64, {1});
  Fill(body, "kept", RILL_INT64, 7);
  Fill(body, "local", RILL_INT64, 8);
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto scope = Scope::NewRoot();
  scope->Var("yes")->GetMutableTensor()->Allocate(RILL_BOOL, {1});
  *scope->FindVar("yes")->GetMutableTensor()->data_as<bool>() = true;
  exec.Run(0, scope);
  EXPECT_EQ(Int64Of(*scope, "kept"), 7);
  EXPECT_EQ(scope->FindVar("local"), nullptr);
}

// A sub-block that would make no variable of its own runs in its op's scope (no child
// scope); one that would gets a child scope, which keeps its variables out of the op's.
TEST(Executor, ASubBlockRunsInItsOpsScopeWhenItWouldMakeNothingOfItsOwn) {
  ProgramBuilder pb;
  auto& counts = pb.NewBlock(0);  // block 1: x += 1
  counts.Op("increment").Input("X", "x").Output("Out", "x");
  auto& keeps = pb.NewBlock(0);  // block 2: tmp = x (tmp is made by the block)
  keeps.Op("assign").Input("X", "x").Output("Out", "tmp");
  Executor exec(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb.Build()));
  auto root = Scope::NewRoot();
  *static_cast<int64_t*>(root->Var("x")->GetMutableTensor()->Allocate(RILL_INT64, {1})) = 5;
  auto op_scope = root->NewChild();
  exec.RunSubBlock(1, op_scope);
  exec.RunSubBlock(1, op_scope);
  EXPECT_EQ(Int64Of(*root, "x"), 7);
  EXPECT_EQ(op_scope->version(), 0u);

  exec.RunSubBlock(2, op_scope);
  EXPECT_EQ(op_scope->FindVar("tmp"), nullptr) << "tmp stayed in the block's own scope";
  exec.RunSubBlock(2, op_scope);  // in a scope of its own again
  EXPECT_EQ(op_scope->FindVar("tmp"), nullptr);

  root->Var("tmp");  // now tmp exists above: the block would make nothing...
  exec.RunSubBlock(2, op_scope);
  EXPECT_EQ(root->FindVar("tmp")->GetTensor()->Describe(), "int64[1] {7}") << "...and writes the outer tmp";
}

TEST(Executor, OutOfRangeBlockIsAnError) {
  Executor exec(test::ShippedRegistry(), LoopProgram(1));
  EXPECT_THROW(exec.Run(9, Scope::NewRoot()), Error);
}

// An op reads the ops of a block of its program (select reads its cases' layout).
TEST(Executor, AnOpReadsTheOpsOfABlockThroughTheHostApi) {
  const RillHostApi& host = *HostApiTable();
  Executor exec(test::ShippedRegistry(), LoopProgram(1));
  const RillOpInfo* loop = exec.BlockOps(0).back();
  ASSERT_EQ(std::string(host.op_type(loop)), "while");
  const RillOpInfo* const* ops = nullptr;
  size_t count = 0;
  ASSERT_EQ(host.op_block_ops(loop, 1, &ops, &count), nullptr);
  std::vector<std::string> types;
  for (size_t i = 0; i < count; ++i) types.push_back(host.op_type(ops[i]));
  EXPECT_EQ(types, (std::vector<std::string>{"increment", "less_than", "conditional_block", "less_than"}));
  EXPECT_STREQ(host.op_input_name(ops[1], host.op_input_slot(ops[1], "Y"), 0), "five");
  int32_t then = 0;
  ASSERT_EQ(host.attr_block(ops[2], "sub_block", &then), nullptr);
  EXPECT_EQ(then, 2);

  RillStatus* st = host.op_block_ops(loop, 9, &ops, &count);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(host.status_code(st), RILL_OUT_OF_RANGE);
  EXPECT_NE(std::string(host.status_message(st)).find("block 9 does not exist"), std::string::npos);
  host.status_release(st);

  auto bad = std::make_shared<proto::ProgramDesc>(*LoopProgram(1));
  bad->mutable_blocks(1)->mutable_ops(0)->set_type("no_such_op");
  Executor bad_exec(test::ShippedRegistry(), bad);
  st = host.op_block_ops(bad_exec.BlockOps(0).back(), 1, &ops, &count);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(host.status_code(st), RILL_NOT_FOUND);
  EXPECT_NE(std::string(host.status_message(st)).find("no_such_op"), std::string::npos) << host.status_message(st);
  host.status_release(st);
}

}  // namespace
}  // namespace rill::core
