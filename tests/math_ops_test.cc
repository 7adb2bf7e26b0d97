// The math plugin's foundation ops, loaded from disk and run by the executor, against
// values worked out by hand.
#include <gtest/gtest.h>

#include <sstream>

#include "core/errors.h"
#include "core/program/builder.h"
#include "core/runtime/executor.h"
#include "test_util.h"

namespace rill::core {
namespace {

class MathOps : public ::testing::Test {
 protected:
  // Runs the program built so far in a fresh scope; returns the error message or "".
  std::string Run() {
    exec_ = std::make_unique<Executor>(test::ShippedRegistry(), std::make_shared<proto::ProgramDesc>(pb_.Build()));
    if (!scope_) scope_ = Scope::NewRoot();
    try {
      exec_->Run(0, scope_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::string Values(const std::string& name) {
    const Variable* v = scope_->FindVar(name);
    return v && v->GetTensor() ? v->GetTensor()->Describe(64) : "<missing>";
  }
  // Sets `name` in the run's scope before Run (values given as int64, cast to T).
  template <class T>
  void Set(const std::string& name, int32_t dtype, std::vector<int64_t> dims, std::vector<int64_t> values) {
    if (!scope_) scope_ = Scope::NewRoot();
    Tensor* t = scope_->Var(name)->GetMutableTensor();
    t->Allocate(dtype, dims);
    for (size_t i = 0; i < values.size(); ++i) t->data_as<T>()[i] = static_cast<T>(values[i]);
  }
  BlockBuilder& main() { return pb_.block(0); }
  void Fill(const std::string& out, int32_t dtype, float value, std::vector<int64_t> shape) {
    main().Op("fill_constant").Output("Out", out).Attr("shape", shape).Attr("dtype", dtype).Attr("value", value);
  }

  ProgramBuilder pb_;
  std::unique_ptr<Executor> exec_;
  std::shared_ptr<Scope> scope_;
};

TEST_F(MathOps, FillConstantEveryDtype) {
  Fill("f32", RILL_FP32, 1.5f, {2});
  Fill("f64", RILL_FP64, -2.25f, {1, 2});
  Fill("i32", RILL_INT32, 7, {3});
  Fill("i64", RILL_INT64, 9, {});
  Fill("b", RILL_BOOL, 1, {2});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("f32"), "fp32[2] {1.5, 1.5}");
  EXPECT_EQ(Values("f64"), "fp64[1, 2] {-2.25, -2.25}");
  EXPECT_EQ(Values("i32"), "int32[3] {7, 7, 7}");
  EXPECT_EQ(Values("i64"), "int64[] {9}");
  EXPECT_EQ(Values("b"), "bool[2] {true, true}");
}

TEST_F(MathOps, FillConstantUnsupportedDtypeNamesIt) {
  Fill("h", RILL_FP16, 1, {1});
  EXPECT_EQ(Run(), "block 0, op 0 (fill_constant -> Out=[h]): no CPU kernel for dtype fp16 (registered: " +
                       test::WithCudaKernels("CPU/fp32, CPU/fp64, CPU/int32, CPU/int64, CPU/bool") + ")");
}

TEST_F(MathOps, AssignCopiesDeeply) {
  Fill("x", RILL_INT32, 4, {2});
  main().Op("assign").Input("X", "x").Output("Out", "y");
  main().Op("increment").Input("X", "x").Output("Out", "x");  // fails: x has 2 elements
  EXPECT_NE(Run().find("X must have exactly one element, it has 2"), std::string::npos);
  EXPECT_EQ(Values("y"), "int32[2] {4, 4}");
  EXPECT_NE(scope_->FindVar("x")->GetTensor()->data(), scope_->FindVar("y")->GetTensor()->data());
}

TEST_F(MathOps, IncrementStepAndDtypes) {
  Fill("a", RILL_FP64, 0.5f, {1});
  main().Op("increment").Input("X", "a").Output("Out", "b").Attr("step", 2.0f);
  Fill("i", RILL_INT64, 5, {1});
  main().Op("increment").Input("X", "i").Output("Out", "i").Attr("step", -3.0f);
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("a"), "fp64[1] {0.5}");
  EXPECT_EQ(Values("b"), "fp64[1] {2.5}");
  EXPECT_EQ(Values("i"), "int64[1] {2}");
}

TEST_F(MathOps, ElementwiseAddBroadcastsFluidStyle) {
  Fill("x", RILL_FP32, 1, {2, 3, 2});
  Fill("row", RILL_FP32, 10, {3});
  Fill("s", RILL_FP32, 100, {1});
  main().Op("elementwise_add").Input("X", "x").Input("Y", "row").Output("Out", "mid").Attr("axis", int32_t{1});
  main().Op("elementwise_add").Input("X", "x").Input("Y", "s").Output("Out", "scalar");
  main().Op("elementwise_add").Input("X", "x").Input("Y", "x").Output("Out", "x");  // in place
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("mid"), "fp32[2, 3, 2] {11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11}");
  EXPECT_EQ(Values("scalar"), "fp32[2, 3, 2] {101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101, 101}");
  EXPECT_EQ(Values("x"), "fp32[2, 3, 2] {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}");
}

TEST_F(MathOps, ElementwiseAddBroadcastUsesTheRightYElement) {
  Set<int64_t>("x", RILL_INT64, {2, 3}, {0, 1, 2, 3, 4, 5});
  Set<int64_t>("col", RILL_INT64, {2}, {10, 20});
  Set<int64_t>("row", RILL_INT64, {3}, {100, 200, 300});
  main().Op("elementwise_add").Input("X", "x").Input("Y", "col").Output("Out", "by_row").Attr("axis", int32_t{0});
  main().Op("elementwise_add").Input("X", "x").Input("Y", "row").Output("Out", "by_col");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("by_row"), "int64[2, 3] {10, 11, 12, 23, 24, 25}");
  EXPECT_EQ(Values("by_col"), "int64[2, 3] {100, 201, 302, 103, 204, 305}");
}

TEST_F(MathOps, ElementwiseAddRejectsMismatchedDtypes) {
  Fill("x", RILL_FP32, 1, {2});
  Fill("y", RILL_FP64, 1, {2});
  main().Op("elementwise_add").Input("X", "x").Input("Y", "y").Output("Out", "z");
  EXPECT_EQ(Run(), "block 0, op 2 (elementwise_add X=[x] Y=[y] -> Out=[z]): tensor holds fp64, kernel expected fp32");
}

TEST_F(MathOps, ComparisonsGiveBool) {
  Set<float>("a", RILL_FP32, {4}, {1, 2, 3, 4});
  Set<float>("b", RILL_FP32, {1}, {3});
  Set<float>("c", RILL_FP32, {4}, {4, 2, 0, 4});
  main().Op("less_than").Input("X", "a").Input("Y", "b").Output("Out", "lt");
  main().Op("equal").Input("X", "a").Input("Y", "c").Output("Out", "eq");
  main().Op("equal").Input("X", "lt").Input("Y", "eq").Output("Out", "eqb");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("lt"), "bool[4] {true, true, false, false}");
  EXPECT_EQ(Values("eq"), "bool[4] {false, true, false, true}");
  EXPECT_EQ(Values("eqb"), "bool[4] {false, true, true, false}");
}

// Paddle 2.x's broadcasting (broadcast.h): either operand may broadcast, numpy's rule with
// axis -1; pairs it cannot align are an error naming both shapes.
TEST_F(MathOps, BroadcastGoesBothWaysAsPaddles) {
  Set<int32_t>("small", RILL_INT32, {1}, {2});
  Set<int32_t>("big", RILL_INT32, {3}, {1, 2, 3});
  Set<int32_t>("col", RILL_INT32, {2, 1}, {0, 10});
  Set<int32_t>("pair", RILL_INT32, {2}, {1, 2});
  main().Op("less_than").Input("X", "small").Input("Y", "big").Output("Out", "lt");
  main().Op("elementwise_add").Input("X", "col").Input("Y", "big").Output("Out", "sum");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("lt"), "bool[3] {false, false, true}");
  EXPECT_EQ(Values("sum"), "int32[2, 3] {1, 2, 3, 11, 12, 13}");
  main().Op("elementwise_add").Input("X", "pair").Input("Y", "big").Output("Out", "bad");
  EXPECT_EQ(Run(),
            "block 0, op 2 (elementwise_add X=[pair] Y=[big] -> Out=[bad]): cannot broadcast X [2] and Y [3] "
            "(axis -1): dimension 0 is 2 in X and 3 in Y");
}

TEST_F(MathOps, PrintHonoursFirstNAndPassesThrough) {
  auto& body = pb_.NewBlock(0);
  Fill("i", RILL_INT64, 0, {1});
  Fill("three", RILL_INT64, 3, {1});
  main().Op("less_than").Input("X", "i").Input("Y", "three").Output("Out", "c");
  main().Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
  body.Op("increment").Input("X", "i").Output("Out", "i");
  body.Op("print").Input("In", "i").Output("Out", "copy").Attr("first_n", int32_t{2}).Attr("message", "step");
  body.Op("less_than").Input("X", "i").Input("Y", "three").Output("Out", "c");
  testing::internal::CaptureStdout();
  const std::string err = Run();
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(err, "");
  EXPECT_EQ(out, "step i: int64[1] {1}\nstep i: int64[1] {2}\n");
}

// An op may write its result over an operand when the operand keeps its shape and dtype;
// when it would not, allocating Out would free memory the kernel still reads.
TEST_F(MathOps, AnOutputOverAnOperandItReshapesIsAnError) {
  Set<int64_t>("a", RILL_INT64, {2}, {1, 5});
  Set<int64_t>("b", RILL_INT64, {2}, {3, 3});
  main().Op("elementwise_add").Input("X", "a").Input("Y", "b").Output("Out", "a");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("a"), "int64[2] {4, 8}") << "in place, same shape and dtype";

  main().Op("less_than").Input("X", "a").Input("Y", "b").Output("Out", "a");
  EXPECT_NE(Run().find("op 1 (less_than X=[a] Y=[b] -> Out=[a]): Out is the same variable as X, whose "
                       "shape or dtype this op changes; write Out to another variable"),
            std::string::npos);

  pb_ = ProgramBuilder();
  scope_.reset();
  Set<int64_t>("m", RILL_INT64, {2, 2}, {1, 2, 3, 4});
  Set<int64_t>("row", RILL_INT64, {2}, {10, 20});
  main().Op("elementwise_add").Input("X", "m").Input("Y", "row").Output("Out", "row");
  EXPECT_NE(Run().find("Out is the same variable as Y, whose shape or dtype this op changes"), std::string::npos);

  pb_ = ProgramBuilder();
  scope_.reset();
  Set<int64_t>("m", RILL_INT64, {2, 2}, {1, 2, 3, 4});
  Set<int64_t>("row", RILL_INT64, {2}, {10, 20});
  main().Op("elementwise_add").Input("X", "m").Input("Y", "row").Output("Out", "m");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("m"), "int64[2, 2] {11, 22, 13, 24}") << "broadcast in place over X";
}

// Scalar operands (one-element [1] tensors without LoD) take the kernels' scalar path
// (plugins/math/scalar.h); what it leaves must be what the tensor path leaves, and where
// that path refuses, it refuses too.
TEST_F(MathOps, ScalarOperandsGiveWhatTheTensorPathGives) {
  Set<int64_t>("a", RILL_INT64, {1}, {7});
  Set<int64_t>("b", RILL_INT64, {1}, {-2});
  Set<int64_t>("wide", RILL_INT64, {3}, {0, 0, 0});
  for (const char* op : {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max",
                         "elementwise_min"}) {
    main().Op(op).Input("X", "a").Input("Y", "b").Output("Out", op);
  }
  main().Op("less_than").Input("X", "a").Input("Y", "b").Output("Out", "lt");
  main().Op("not_equal").Input("X", "a").Input("Y", "b").Output("Out", "ne");
  main().Op("elementwise_add").Input("X", "a").Input("Y", "b").Output("Out", "wide");  // was [3]
  main().Op("elementwise_add").Input("X", "a").Input("Y", "a").Output("Out", "a");     // in place
  Fill("one", RILL_FP32, 1.5f, {1});
  Fill("flag", RILL_BOOL, 1, {1});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("elementwise_add"), "int64[1] {5}");
  EXPECT_EQ(Values("elementwise_sub"), "int64[1] {9}");
  EXPECT_EQ(Values("elementwise_mul"), "int64[1] {-14}");
  EXPECT_EQ(Values("elementwise_div"), "int64[1] {-3}");
  EXPECT_EQ(Values("elementwise_max"), "int64[1] {7}");
  EXPECT_EQ(Values("elementwise_min"), "int64[1] {-2}");
  EXPECT_EQ(Values("lt"), "bool[1] {false}");
  EXPECT_EQ(Values("ne"), "bool[1] {true}");
  EXPECT_EQ(Values("wide"), "int64[1] {5}");
  EXPECT_EQ(Values("a"), "int64[1] {14}");
  EXPECT_EQ(Values("one"), "fp32[1] {1.5}");
  EXPECT_EQ(Values("flag"), "bool[1] {true}");
}

TEST_F(MathOps, ScalarOperandsKeepTheTensorPathsErrors) {
  Set<int32_t>("a", RILL_INT32, {1}, {7});
  Set<int32_t>("zero", RILL_INT32, {1}, {0});
  main().Op("elementwise_div").Input("X", "a").Input("Y", "zero").Output("Out", "q");
  EXPECT_NE(Run().find("integer division by zero"), std::string::npos);

  pb_ = ProgramBuilder();
  main().Op("less_than").Input("X", "a").Input("Y", "zero").Output("Out", "a");
  EXPECT_NE(Run().find("Out is the same variable as X, whose shape or dtype this op changes"), std::string::npos);

  pb_ = ProgramBuilder();
  scope_->Var("rows")->GetMutableSelectedRows();  // holds selected rows, not a tensor
  main().Op("elementwise_add").Input("X", "a").Input("Y", "a").Output("Out", "rows");
  EXPECT_NE(Run(), "") << "a scalar result does not replace selected rows";
  EXPECT_TRUE(scope_->FindVar("rows")->is_selected_rows());

  // fill_constant into selected rows fills their value, as Paddle's does.
  pb_ = ProgramBuilder();
  Fill("rows", RILL_INT32, 1, {1});
  EXPECT_EQ(Run(), "");
  ASSERT_TRUE(scope_->FindVar("rows")->is_selected_rows());
  EXPECT_EQ(scope_->FindVar("rows")->GetMutableSelectedRows()->value.ValuesToString(), "1");
}

// An op writing SelectedRows into a variable that holds some remakes them in place: a
// pointer to the variable's SelectedRows (a Python handle's) stays valid and sees the new
// rows, in place (Out is X[0]) or not.
TEST_F(MathOps, SelectedRowsWrittenInPlaceKeepTheirObject) {
  for (const char* out : {"w1", "out"}) {
    pb_ = ProgramBuilder();
    scope_ = Scope::NewRoot();
    SelectedRows* held = nullptr;
    for (const char* name : {"w1", "w2", "out"}) {
      SelectedRows* r = scope_->Var(name)->GetMutableSelectedRows();
      if (std::string(name) == out) held = r;
      if (std::string(name) == "out") continue;
      r->rows = {0, 2};
      r->height = 4;
      float* v = static_cast<float*>(r->value.Allocate(RILL_FP32, {2, 1}));
      v[0] = 1, v[1] = 2;
    }
    main().Op("sum").Input("X", {"w1", "w2"}).Output("Out", out);
    ASSERT_EQ(Run(), "") << out;
    ASSERT_EQ(scope_->FindVar(out)->GetMutableSelectedRows(), held) << out;
    EXPECT_EQ(held->rows, (std::vector<int64_t>{0, 2})) << out;  // a repeat merged, ascending
    EXPECT_EQ(held->value.ValuesToString(), "2 4") << out;
  }
}

// A convolution over a whole number of channel blocks runs on oneDNN's JIT kernels, on
// whichever vector ISA this CPU has (a layout for another ISA's kernels leaves oneDNN only
// its reference code, several times slower, which the plugin then declines for its own).
// Seen from outside, as a user would: `rill run` with ONEDNN_VERBOSE, forward and both
// gradients.
TEST(MathOnednn, AConvolutionOfWholeChannelBlocksRunsOnOneDnnsJitKernels) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    GTEST_SKIP() << "oneDNN's JIT convolutions need AVX2 and FMA; this CPU lacks them";
  }
  const std::string prog = test::TempPath("conv16.pbtxt");
  test::WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "gaussian_random" outputs { parameter: "Out" arguments: "x" }
          attrs { name: "shape" type: INTS ints: 2 ints: 16 ints: 8 ints: 8 } }
    ops { type: "gaussian_random" outputs { parameter: "Out" arguments: "w" }
          attrs { name: "shape" type: INTS ints: 16 ints: 16 ints: 3 ints: 3 } }
    ops { type: "conv2d" inputs { parameter: "Input" arguments: "x" } inputs { parameter: "Filter" arguments: "w" }
          outputs { parameter: "Output" arguments: "y" }
          attrs { name: "paddings" type: INTS ints: 1 ints: 1 } }
    ops { type: "conv2d_grad" inputs { parameter: "Input" arguments: "x" } inputs { parameter: "Filter" arguments: "w" }
          inputs { parameter: "Output@GRAD" arguments: "y" }
          outputs { parameter: "Input@GRAD" arguments: "dx" } outputs { parameter: "Filter@GRAD" arguments: "dw" }
          attrs { name: "paddings" type: INTS ints: 1 ints: 1 } } })");
  const test::CommandResult r = test::RunRill({"run", prog, "--fetch", "dw"}, "ONEDNN_VERBOSE=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* kind : {"forward", "backward_data", "backward_weights"}) {
    bool ran = false;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("exec,cpu,convolution,") == std::string::npos || line.find(kind) == std::string::npos) continue;
      ran = true;
      EXPECT_NE(line.find(",jit"), std::string::npos) << line;
    }
    EXPECT_TRUE(ran) << kind << ": oneDNN ran no such convolution:\n" << r.out;
  }
}

}  // namespace
}  // namespace rill::core
