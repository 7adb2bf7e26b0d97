// The backward pass as a program transformation: what it appends, and what it refuses.
#include "core/program/backward.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include "core/io/npy.h"
#include "core/errors.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "test_util.h"

namespace rill::core {
namespace {

std::vector<std::string> OpTypes(const proto::ProgramDesc& p) {
  std::vector<std::string> types;
  for (const auto& op : p.blocks(0).ops()) types.push_back(op.type());
  return types;
}

std::string BackwardError(proto::ProgramDesc program, const std::string& loss, std::vector<std::string> params = {}) {
  const proto::ProgramDesc before = program;
  try {
    AppendBackward(program, test::ShippedRegistry(), loss, params);
  } catch (const Error& e) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(before, program)) << "a failure changes nothing";
    return e.what();
  }
  return "";
}

TEST(Backward, AppendsGradOpsInReverseWithSeedAndAccumulation) {
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP32, {2}, true);
  pb.block(0).Op("elementwise_mul").Input("X", "w").Input("Y", "w").Output("Out", "ww");
  pb.block(0).Op("elementwise_add").Input("X", "ww").Input("Y", "w").Output("Out", "s");
  pb.block(0).Op("mean").Input("X", "s").Output("Out", "loss");
  proto::ProgramDesc p = pb.Build();
  const auto grads = AppendBackward(p, test::ShippedRegistry(), "loss");
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].param, "w");
  EXPECT_EQ(grads[0].grad, "w@GRAD");
  EXPECT_EQ(OpTypes(p), (std::vector<std::string>{"elementwise_mul", "elementwise_add", "mean", "fill_any_like",
                                                  "mean_grad", "elementwise_add_grad", "elementwise_mul_grad", "sum"}));
  // w is used three times (twice by mul, once by add): three contributions, one sum.
  const auto& sum = p.blocks(0).ops(7);
  EXPECT_EQ(sum.inputs(0).arguments_size(), 3);
  EXPECT_EQ(sum.outputs(0).arguments(0), "w@GRAD");
  // A variable with a single contribution is renamed in place, not summed.
  const auto& add_grad = p.blocks(0).ops(5);
  EXPECT_EQ(add_grad.inputs(2).arguments(0), "s@GRAD");
  EXPECT_EQ(add_grad.outputs(0).parameter(), "X@GRAD");
  EXPECT_EQ(add_grad.outputs(0).arguments(0), "ww@GRAD");
}

TEST(Backward, OnlyParametersGetGradientsAndUnusedOutputsGetZeros) {
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP32, {4}, true);
  pb.block(0).Op("elementwise_mul").Input("X", "data").Input("Y", "w").Output("Out", "xw");
  pb.block(0).Op("split").Input("X", "xw").Output("Out", {"a", "b"});
  pb.block(0).Op("mean").Input("X", "b").Output("Out", "loss");
  proto::ProgramDesc p = pb.Build();
  AppendBackward(p, test::ShippedRegistry(), "loss");
  const auto types = OpTypes(p);
  EXPECT_EQ(std::count(types.begin(), types.end(), "fill_zeros_like"), 1) << "a@GRAD is zeros";
  for (const auto& op : p.blocks(0).ops()) {
    if (op.type() != "elementwise_mul_grad") continue;
    ASSERT_EQ(op.outputs_size(), 1) << "no gradient for the data input";
    EXPECT_EQ(op.outputs(0).parameter(), "Y@GRAD");
  }
}

TEST(Backward, ListSlotsKeepPositionsWithEmptyPlaceholders) {
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP32, {2}, true);
  pb.block(0).Op("concat").Input("X", {"data", "w"}).Output("Out", "c");
  pb.block(0).Op("mean").Input("X", "c").Output("Out", "loss");
  proto::ProgramDesc p = pb.Build();
  AppendBackward(p, test::ShippedRegistry(), "loss");
  const auto& grad = p.blocks(0).ops(4);  // concat, mean, fill_any_like, mean_grad, concat_grad
  ASSERT_EQ(grad.type(), "concat_grad");
  ASSERT_EQ(grad.outputs(0).arguments_size(), 2);
  EXPECT_EQ(grad.outputs(0).arguments(0), RILL_EMPTY_VAR_NAME);
  EXPECT_EQ(grad.outputs(0).arguments(1), "w@GRAD");
}

TEST(Backward, RefusesWhatItCannotDifferentiate) {
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP32, {1}, true);
  pb.block(0).Op("scale").Input("X", "w").Output("Out", "y");
  pb.block(0).Op("mean").Input("X", "y").Output("Out", "loss");
  pb.block(0).Op("less_than").Input("X", "w").Input("Y", "w").Output("Out", "flag");
  const proto::ProgramDesc p = pb.Build();
  EXPECT_EQ(BackwardError(p, "nope"), "loss variable 'nope' is not produced by any op of block 0");
  EXPECT_EQ(BackwardError(p, "flag"), "loss 'flag' does not depend on any parameter (w) through differentiable ops");
  ProgramBuilder no_params;
  no_params.block(0).Op("mean").Input("X", "x").Output("Out", "loss");
  EXPECT_EQ(BackwardError(no_params.Build(), "loss"),
            "no parameters: declare the trainable variables of block 0 persistable, or name them");
  ProgramBuilder in_place;
  in_place.block(0).Var("w", RILL_FP32, {1}, true);
  in_place.block(0).Op("scale").Input("X", "w").Output("Out", "h");
  in_place.block(0).Op("scale").Input("X", "h").Output("Out", "h");
  in_place.block(0).Op("mean").Input("X", "h").Output("Out", "loss");
  EXPECT_EQ(BackwardError(in_place.Build(), "loss"),
            "block 0, op 1 (scale) reads and writes 'h': in-place ops on the gradient path are not supported; write "
            "to a new variable");
}

TEST(Backward, AnOpWhoseGradientReachesNoInputGetsNoGradOp) {
  // The index a gather reads depends on w, but gather's gradient flows to X alone: a gather_grad
  // here would have no output. The other path from w to the loss still gets its gradient.
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP32, {1}, true);
  pb.block(0)
      .Op("cast")
      .Input("X", "w")
      .Output("Out", "index")
      .Attr("in_dtype", int64_t{RILL_FP32})
      .Attr("out_dtype", int64_t{RILL_INT64});
  pb.block(0).Op("gather").Input("X", "table").Input("Index", "index").Output("Out", "rows");
  pb.block(0).Op("elementwise_mul").Input("X", "rows").Input("Y", "w").Output("Out", "scaled");
  pb.block(0).Op("mean").Input("X", "scaled").Output("Out", "loss");
  proto::ProgramDesc p = pb.Build();
  AppendBackward(p, test::ShippedRegistry(), "loss");
  const auto types = OpTypes(p);
  EXPECT_EQ(std::count(types.begin(), types.end(), "gather_grad"), 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "elementwise_mul_grad"), 1);
  for (const auto& op : p.blocks(0).ops()) EXPECT_TRUE(op.outputs_size() > 0) << op.type() << " has no output";
}

TEST(Backward, NamedParametersOverridePersistable) {
  ProgramBuilder pb;
  pb.block(0).Op("elementwise_mul").Input("X", "a").Input("Y", "b").Output("Out", "ab");
  pb.block(0).Op("mean").Input("X", "ab").Output("Out", "loss");
  proto::ProgramDesc p = pb.Build();
  const auto grads = AppendBackward(p, test::ShippedRegistry(), "loss", {"b"});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].grad, "b@GRAD");
}

TEST(Backward, SgdUsesTheParametersDtype) {
  ProgramBuilder pb;
  pb.block(0).Var("w", RILL_FP64, {1}, true);
  proto::ProgramDesc p = pb.Build();
  AppendSgd(p, {{"w", "w@GRAD"}}, 0.5f);
  ASSERT_EQ(OpTypes(p), (std::vector<std::string>{"fill_constant", "sgd"}));
  EXPECT_EQ(p.blocks(0).ops(0).outputs(0).arguments(0), "learning_rate@6");
}

TEST(Backward, CliWritesAProgramThatRuns) {
  const std::string prog = test::TempPath("lin.pbtxt");
  test::WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    vars { name: "w" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 1 } } } }
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
          attrs { name: "shape" type: INTS ints: 1 } attrs { name: "value" type: FLOAT f: 3 } }
    ops { type: "elementwise_mul" inputs { parameter: "X" arguments: "x" } inputs { parameter: "Y" arguments: "w" }
          outputs { parameter: "Out" arguments: "y" } }
    ops { type: "mean" inputs { parameter: "X" arguments: "y" } outputs { parameter: "Out" arguments: "loss" } } })");
  const std::string out = test::TempPath("lin_train.pbtxt");
  const auto r = test::RunRill({"backward", prog, "--loss", "loss", "--sgd", "0.1", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "w w@GRAD\n");
  // w = 1: d loss / d w = x = 3; sgd: w = 1 - 0.1 * 3 = 0.7.
  Tensor w;
  w.Allocate(RILL_FP32, {1});
  *w.data_as<float>() = 1;
  const std::string w_npy = test::TempPath("w.npy");
  WriteNpy(w, w_npy);
  const auto run =
      test::RunRill({"run", out, "--feed", "w=" + w_npy, "--fetch", "loss", "--fetch", "w@GRAD", "--fetch", "w"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "loss fp32 [1] 3\nw@GRAD fp32 [1] 3\nw fp32 [1] 0.7\n");
  const auto bad = test::RunRill({"backward", prog, "--loss", "loss", "--sgd", "fast", "-o", out});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--sgd takes a learning rate, got 'fast'"), std::string::npos);
}

}  // namespace
}  // namespace rill::core
