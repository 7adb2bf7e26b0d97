// The math plugin's intra-op threads (plugins/math/intra_op.h, parallel_for.h) under the
// scheduler: go blocks running large oneDNN ops or large passes of the plugin's own at
// once, on several workers, get what one op at a time gets; the budget comes from
// RILL_INTRA_OP_THREADS, and a bad one is an error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <random>

#include "core/io/npy.h"
#include "core/program/csp_builder.h"
#include "core/program/program_io.h"
#include "test_util.h"

namespace rill::test {
namespace {

// What each go block computes: its ops, appended to `b`, read the shared inputs and block
// k's own ("w" + k, ...) and write `prefix` + each result + k.
struct LargeOps {
  std::function<void(core::BlockBuilder& b, const std::string& prefix, const std::string& k)> append;
  std::vector<std::string> results;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shared_inputs, own_inputs;  // own: one per block
  std::vector<std::string> Inputs(const std::string& k) const {
    std::vector<std::string> names;
    for (const auto& [name, dims] : shared_inputs) names.push_back(name);
    for (const auto& [name, dims] : own_inputs) names.push_back(name + k);
    return names;
  }
};

// A conv2d of x (9.4 MFLOP: over the intra-op threshold) and a mul (1024 x 128 by 128 x
// 256: 67 MFLOP): oneDNN's calls on the intra-op thread.
LargeOps LibraryCalls() {
  return {[](core::BlockBuilder& b, const std::string& prefix, const std::string& k) {
            b.Op("conv2d")
                .Input("Input", "x")
                .Input("Filter", "w" + k)
                .Output("Output", prefix + "conv" + k)
                .Attr("paddings", std::vector<int64_t>{1, 1});
            b.Op("mul").Input("X", "a").Input("Y", "b" + k).Output("Out", prefix + "mul" + k);
          },
          {"conv", "mul"},
          {{"x", {2, 16, 32, 32}}, {"a", {1024, 128}}},
          {{"w", {16, 16, 3, 3}}, {"b", {128, 256}}}};
}

// batch_norm in training, relu and a residual add on [4, 16, 48, 48] (576 KiB: over
// parallel_for.h's threshold), and reductions of that sum over everything and over the
// batch: the plugin's own passes, in chunks on the pass helpers.
LargeOps OwnPasses() {
  return {
      [](core::BlockBuilder& b, const std::string& prefix, const std::string& k) {
        const std::string y = prefix + "bn" + k;
        b.Op("batch_norm")
            .Input("X", "x")
            .Input("Scale", "s" + k)
            .Input("Bias", "s" + k)
            .Input("Mean", "m")
            .Input("Variance", "v")
            .Output("Y", y)
            .Output("MeanOut", prefix + "mean" + k)
            .Output("VarianceOut", prefix + "var" + k)
            .Output("SavedMean", prefix + "saved_mean" + k)
            .Output("SavedVariance", prefix + "saved_var" + k);
        b.Op("relu").Input("X", y).Output("Out", prefix + "relu" + k);
        b.Op("elementwise_add").Input("X", prefix + "relu" + k).Input("Y", "x").Output("Out", prefix + "add" + k);
        b.Op("reduce_sum").Input("X", prefix + "add" + k).Output("Out", prefix + "total" + k).Attr("reduce_all", true);
        b.Op("reduce_max")
            .Input("X", prefix + "add" + k)
            .Output("Out", prefix + "batch_max" + k)
            .Attr("dim", std::vector<int64_t>{0});
      },
      {"bn", "saved_mean", "add", "total", "batch_max"},
      {{"x", {4, 16, 48, 48}}, {"m", {16}}, {"v", {16}}},
      {{"s", {16}}}};
}

// Seeded random sources of [256, 1024] fp32 (1 MiB each: passes on the helpers), the same
// seeds in every block: their values are a function of the seed and the element alone.
LargeOps RandomSources() {
  return {[](core::BlockBuilder& b, const std::string& prefix, const std::string& k) {
            const std::vector<int64_t> shape{256, 1024};
            for (const char* op : {"uniform_random", "gaussian_random", "truncated_gaussian_random"}) {
              b.Op(op).Output("Out", prefix + op + k).Attr("shape", shape).Attr("seed", int64_t{5});
            }
          },
          {"uniform_random", "gaussian_random", "truncated_gaussian_random"},
          {},
          {}};
}

// `blocks` go blocks doing `ops`, each sending its results on a channel of its own; the
// main block receives them, and then does the same ops alone.
core::ProgramBuilder Concurrent(const LargeOps& ops, int blocks) {
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  for (int k = 0; k < blocks; ++k) {
    const std::string n = std::to_string(k), ch = "ch" + n;
    core::MakeChannel(main, ch, core::kLodTensorType, ops.results.size());
    std::vector<std::string> captured = ops.Inputs(n);
    captured.insert(captured.begin(), ch);
    core::BlockBuilder& body = core::Go(pb, main, captured);
    ops.append(body, "go_", n);
    for (const std::string& r : ops.results) core::ChannelSend(body, ch, "go_" + r + n, true);
  }
  for (int k = 0; k < blocks; ++k) {
    const std::string n = std::to_string(k);
    for (const std::string& r : ops.results) core::ChannelRecv(main, "ch" + n, r + n);
    ops.append(main, "alone_", n);
  }
  return pb;
}

core::Tensor Random(std::vector<int64_t> dims, std::mt19937& rng) {
  core::Tensor t;
  auto* p = static_cast<float*>(t.Allocate(RILL_FP32, dims));
  std::normal_distribution<float> value(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::fabs(value(rng)) + 0.5f;  // variances too: positive
  return t;
}

// Writes the program and its inputs; returns the arguments of `rill run` fetching every
// result into `out`.
std::vector<std::string> Prepare(const std::string& name, const LargeOps& ops, int blocks, const std::string& out) {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  core::SaveProgram(Concurrent(ops, blocks).Build(), dir + "/program.pb", core::ProgramFormat::kBinary);
  std::vector<std::string> args{"run", dir + "/program.pb", "--workers", "4", "--save", out};
  std::mt19937 rng(7);
  const auto feed = [&](const std::string& var, std::vector<int64_t> dims) {
    core::WriteNpy(Random(dims, rng), dir + "/" + var + ".npy");
    args.insert(args.end(), {"--feed", var + "=" + dir + "/" + var + ".npy"});
  };
  for (const auto& [var, dims] : ops.shared_inputs) feed(var, dims);
  for (int k = 0; k < blocks; ++k) {
    for (const auto& [var, dims] : ops.own_inputs) feed(var + std::to_string(k), dims);
  }
  for (int k = 0; k < blocks; ++k) {
    for (const std::string& r : ops.results) {
      args.insert(args.end(), {"--fetch", r + std::to_string(k), "--fetch", "alone_" + r + std::to_string(k)});
    }
  }
  return args;
}

// The largest difference between each go block's results and the main block's, relative
// to max(1, |value|).
double WorstDifference(const LargeOps& ops, int blocks, const std::string& out) {
  double worst = 0;
  for (int k = 0; k < blocks; ++k) {
    for (const std::string& r : ops.results) {
      const core::Tensor together = core::ReadNpy(out + "/" + r + std::to_string(k) + ".npy");
      const core::Tensor alone = core::ReadNpy(out + "/alone_" + r + std::to_string(k) + ".npy");
      EXPECT_EQ(together.dims().ToVector(), alone.dims().ToVector()) << r << k;
      if (together.numel() != alone.numel()) return HUGE_VAL;
      const float* t = together.data_as<float>();
      const float* a = alone.data_as<float>();
      for (int64_t i = 0; i < alone.numel(); ++i) {
        worst = std::max(worst, std::fabs(double(t[i]) - a[i]) / std::max(1.0, std::fabs(double(a[i]))));
      }
    }
  }
  return worst;
}

// Runs four go blocks of `ops` at once with `threads` intra-op threads; returns the
// largest difference between their results and the main block's (HUGE_VAL if the run
// failed).
double GoBlocksAgainstTheMainBlock(const std::string& name, const LargeOps& ops, const std::string& threads) {
  constexpr int kBlocks = 4;
  const std::string out = TempPath(name + "_out");
  std::filesystem::remove_all(out);
  const CommandResult r = RunRill(Prepare(name, ops, kBlocks, out), "RILL_INTRA_OP_THREADS=" + threads);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? WorstDifference(ops, kBlocks, out) : HUGE_VAL;
}

TEST(IntraOp, GoBlocksRunningLargeOpsAtOnceGetWhatOneAtATimeGets) {
  EXPECT_LE(GoBlocksAgainstTheMainBlock("intra_op", LibraryCalls(), "2"), 1e-5);
}

// The passes' chunks depend on the sizes only, so results are the same bits whichever
// threads ran them, and however many passes ran at once.
TEST(IntraOp, GoBlocksRunningLargePassesAtOnceGetTheSameBitsAsOneAtATime) {
  EXPECT_EQ(GoBlocksAgainstTheMainBlock("intra_op_passes", OwnPasses(), "3"), 0.0);
}

TEST(IntraOp, SeededRandomSourcesGiveTheSameBitsWhicheverThreadsMadeThem) {
  EXPECT_EQ(GoBlocksAgainstTheMainBlock("intra_op_random", RandomSources(), "3"), 0.0);
}

TEST(IntraOp, ABadThreadCountIsAnErrorNamingTheVariable) {
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    GTEST_SKIP() << "ThreadSanitizer builds run every library call on one thread and read no budget for them "
                    "(libgomp is not instrumented)";
  }
  const std::string out = TempPath("intra_op_bad_out");
  const CommandResult r = RunRill(Prepare("intra_op_bad", LibraryCalls(), 1, out), "RILL_INTRA_OP_THREADS=many");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("RILL_INTRA_OP_THREADS 'many' is not a thread count from 1 to 4096"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("conv2d"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rill::test
