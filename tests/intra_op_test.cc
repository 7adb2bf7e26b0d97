// The math plugin's intra-op threads (plugins/math/intra_op.h) under the scheduler: go
// blocks running large oneDNN ops at once, on several workers, get what one op at a time
// gets; the budget comes from RILL_INTRA_OP_THREADS, and a bad one is an error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "core/cli/npy.h"
#include "core/program/csp_builder.h"
#include "core/program/program_io.h"
#include "test_util.h"

namespace rill::test {
namespace {

// Four go blocks, each a conv2d of x (9.4 MFLOP: over the intra-op threshold) and a mul
// (1024 x 128 by 128 x 256: 67 MFLOP), each sending its two results on a channel of its
// own; the main block receives them. Also the same ops in the main block alone.
core::ProgramBuilder ConcurrentLargeOps(int blocks) {
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  for (int k = 0; k < blocks; ++k) {
    const std::string n = std::to_string(k), ch = "ch" + n;
    core::MakeChannel(main, ch, core::kLodTensorType, 2);
    core::BlockBuilder& body = core::Go(pb, main, {ch, "x", "w" + n, "a", "b" + n});
    body.Op("conv2d").Input("Input", "x").Input("Filter", "w" + n).Output("Output", "go_conv" + n)
        .Attr("paddings", std::vector<int64_t>{1, 1});
    body.Op("mul").Input("X", "a").Input("Y", "b" + n).Output("Out", "go_mul" + n);
    core::ChannelSend(body, ch, "go_conv" + n, true);
    core::ChannelSend(body, ch, "go_mul" + n, true);
  }
  for (int k = 0; k < blocks; ++k) {
    const std::string n = std::to_string(k);
    core::ChannelRecv(main, "ch" + n, "conv" + n);
    core::ChannelRecv(main, "ch" + n, "mul" + n);
    main.Op("conv2d").Input("Input", "x").Input("Filter", "w" + n).Output("Output", "alone_conv" + n)
        .Attr("paddings", std::vector<int64_t>{1, 1});
    main.Op("mul").Input("X", "a").Input("Y", "b" + n).Output("Out", "alone_mul" + n);
  }
  return pb;
}

core::Tensor Random(std::vector<int64_t> dims, std::mt19937& rng) {
  core::Tensor t;
  auto* p = static_cast<float*>(t.Allocate(RILL_FP32, dims));
  std::normal_distribution<float> value(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value(rng);
  return t;
}

// Writes the program and its inputs; returns the arguments of `rill run` fetching every
// result into `out`.
std::vector<std::string> Prepare(const std::string& name, int blocks, const std::string& out) {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  core::SaveProgram(ConcurrentLargeOps(blocks).Build(), dir + "/program.pb", core::ProgramFormat::kBinary);
  std::vector<std::string> args{"run", dir + "/program.pb", "--workers", "4", "--save", out};
  std::mt19937 rng(7);
  const auto feed = [&](const std::string& var, std::vector<int64_t> dims) {
    core::WriteNpy(Random(dims, rng), dir + "/" + var + ".npy");
    args.insert(args.end(), {"--feed", var + "=" + dir + "/" + var + ".npy"});
  };
  feed("x", {2, 16, 32, 32});
  feed("a", {1024, 128});
  for (int k = 0; k < blocks; ++k) {
    feed("w" + std::to_string(k), {16, 16, 3, 3});
    feed("b" + std::to_string(k), {128, 256});
  }
  for (int k = 0; k < blocks; ++k) {
    for (const char* r : {"conv", "mul", "alone_conv", "alone_mul"}) {
      args.insert(args.end(), {"--fetch", r + std::to_string(k)});
    }
  }
  return args;
}

TEST(IntraOp, GoBlocksRunningLargeOpsAtOnceGetWhatOneAtATimeGets) {
  constexpr int kBlocks = 4;
  const std::string out = TempPath("intra_op_out");
  std::filesystem::remove_all(out);
  const CommandResult r = RunRill(Prepare("intra_op", kBlocks, out), "RILL_INTRA_OP_THREADS=2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int k = 0; k < kBlocks; ++k) {
    for (const std::string op : {"conv", "mul"}) {
      const core::Tensor together = core::ReadNpy(out + "/" + op + std::to_string(k) + ".npy");
      const core::Tensor alone = core::ReadNpy(out + "/alone_" + op + std::to_string(k) + ".npy");
      ASSERT_EQ(together.dims().ToVector(), alone.dims().ToVector()) << op << k;
      const float* t = together.data_as<float>();
      const float* a = alone.data_as<float>();
      double worst = 0;
      for (int64_t i = 0; i < alone.numel(); ++i) worst = std::max(worst, std::fabs(double(t[i]) - a[i]) / std::max(1.0, std::fabs(double(a[i]))));
      EXPECT_LE(worst, 1e-5) << op << k << ": the go block's result against the main block's";
    }
  }
}

TEST(IntraOp, ABadThreadCountIsAnErrorNamingTheVariable) {
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    GTEST_SKIP() << "ThreadSanitizer builds run every large op on one thread and read no budget "
                    "(libgomp is not instrumented)";
  }
  const std::string out = TempPath("intra_op_bad_out");
  const CommandResult r = RunRill(Prepare("intra_op_bad", 1, out), "RILL_INTRA_OP_THREADS=many");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("RILL_INTRA_OP_THREADS 'many' is not a thread count from 1 to 4096"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("conv2d"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rill::test
