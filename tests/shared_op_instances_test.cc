// Op instances shared by go blocks: the SDK lets one kernel instance run on several threads
// at once, and kernels that keep state per instance (the CPU's cached oneDNN primitives,
// the CUDA conv2d's cuDNN descriptors and pool2d's windows) must still compute what one run
// alone computes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/program/csp_builder.h"
#include "core/program/program_io.h"
#include "cuda_available.h"
#include "test_util.h"

namespace rill::test {
namespace {

// A while loop starts 64 go blocks of one body, a conv2d, a pool2d and a layer_norm of
// the same x, which wait at a gate until all are started, then run together on 4 workers.
// Returns what `rill run` prints of the largest difference between a go block's result and
// the same ops run alone in the main block.
std::string WorstGoBlockDifference(const std::string& name, const std::vector<std::string>& device_args) {
  constexpr int kBlocks = 64;
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  const auto fill = [](core::BlockBuilder& b, const std::string& out, int32_t dtype, float value) {
    b.Op("fill_constant")
        .Output("Out", out)
        .Attr("shape", std::vector<int64_t>{1})
        .Attr("dtype", dtype)
        .Attr("value", value);
  };
  const auto random = [&](const std::string& out, std::vector<int64_t> shape, int32_t seed) {
    main.Op("uniform_random")
        .Output("Out", out)
        .Attr("shape", shape)
        .Attr("min", -1.0f)
        .Attr("max", 1.0f)
        .Attr("seed", seed);
  };
  const auto body = [](core::BlockBuilder& b, const std::string& out) {
    b.Op("conv2d")
        .Input("Input", "x")
        .Input("Filter", "w")
        .Output("Output", out + "_conv")
        .Attr("paddings", std::vector<int64_t>{1, 1});
    b.Op("pool2d")
        .Input("X", out + "_conv")
        .Output("Out", out + "_pool")
        .Attr("ksize", std::vector<int64_t>{2, 2})
        .Attr("strides", std::vector<int64_t>{2, 2});
    b.Op("layer_norm").Input("X", out + "_pool").Output("Y", out);
  };
  random("x", {2, 8, 12, 12}, 3);
  random("w", {8, 8, 3, 3}, 5);
  core::MakeChannel(main, "results", core::kLodTensorType, kBlocks);
  core::MakeChannel(main, "start", core::kLodTensorType, kBlocks);
  fill(main, "i", RILL_INT64, 0);
  fill(main, "n", RILL_INT64, kBlocks);
  main.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "more");
  core::BlockBuilder& step = pb.NewBlock(0);
  main.Op("while").Input("Condition", "more").BlockAttr("sub_block", step.idx());
  step.Op("increment").Input("X", "i").Output("Out", "i");
  core::BlockBuilder& worker = core::Go(pb, step, {"results", "start", "x", "w"});
  core::ChannelRecv(worker, "start", "go_ahead");
  body(worker, "normed");
  core::ChannelSend(worker, "results", "normed", /*copy=*/true);
  step.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "more");
  fill(main, "token", RILL_INT64, 0);
  for (int k = 0; k < kBlocks; ++k) core::ChannelSend(main, "start", "token", /*copy=*/true);
  body(main, "alone");
  fill(main, "worst", RILL_FP32, 0);
  for (int k = 0; k < kBlocks; ++k) {
    core::ChannelRecv(main, "results", "got");
    main.Op("elementwise_sub").Input("X", "got").Input("Y", "alone").Output("Out", "difference");
    main.Op("abs").Input("X", "difference").Output("Out", "size");
    main.Op("reduce_max").Input("X", "size").Output("Out", "largest").Attr("reduce_all", true);
    main.Op("elementwise_max").Input("X", "worst").Input("Y", "largest").Output("Out", "worst");
  }
  const std::string program = TempPath(name + ".pb");
  core::SaveProgram(pb.Build(), program, core::ProgramFormat::kBinary);
  std::vector<std::string> args = {"run", program, "--workers", "4", "--fetch", "worst"};
  args.insert(args.end(), device_args.begin(), device_args.end());
  const CommandResult r = RunRill(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(SharedOpInstances, GoBlocksOnCudaMatchTheOpsRunAlone) {
  SKIP_WITHOUT_CUDA();
  EXPECT_EQ(WorstGoBlockDifference("go_blocks_cuda", {"--device", "cuda:0"}), "worst fp32 [1] 0\n");
}

TEST(SharedOpInstances, GoBlocksOnTheCpuMatchTheOpsRunAlone) {
  EXPECT_EQ(WorstGoBlockDifference("go_blocks_cpu", {}), "worst fp32 [1] 0\n");
}

}  // namespace
}  // namespace rill::test
