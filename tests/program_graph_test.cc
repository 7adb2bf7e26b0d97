// rill graph and core/program/graph.h: what a program's picture shows.
#include "core/program/graph.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/program/render_dot.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "test_util.h"

namespace rill::core {
namespace {

using test::RunRill;

const std::string kSource = RILL_SOURCE_DIR;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Fluid's select Fibonacci: every block a cluster under the op that runs it, the select's
// cases labelled, and the sends joined to the receives of their channels.
TEST(ProgramGraph, ClustersSubBlocksAndJoinsChannels) {
  const proto::ProgramDesc program = LoadProgram(kSource + "/examples/csp/fibonacci.pbtxt");
  const std::string dot = ProgramToDot(program);
  EXPECT_TRUE(std::regex_search(dot, std::regex("^// rill graph: [0-9]+ nodes, [0-9]+ edges\ndigraph program \\{")))
      << dot.substr(0, 80);
  EXPECT_EQ(Count(dot, "subgraph cluster_"), static_cast<size_t>(program.blocks_size() - 1));
  EXPECT_NE(dot.find("label=\"block 1: go\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"block 2: while body\""), std::string::npos);
  EXPECT_NE(dot.find("label=\"block 3: select\""), std::string::npos);
  EXPECT_NE(dot.find("case 0: send x_copy on ch1"), std::string::npos);
  EXPECT_NE(dot.find("case 1: receive result2 from quit_ch"), std::string::npos);
  // The go block's ten receives from ch1 each get the select's send; its send on quit_ch
  // gets the select's receive.
  EXPECT_EQ(Count(dot, "constraint=false, label=\"ch1\""), 10u);
  EXPECT_EQ(Count(dot, "constraint=false, label=\"quit_ch\""), 1u);
  // Each sub-block is joined to its op; channels are drawn as channels, one node each.
  EXPECT_EQ(Count(dot, "lhead=cluster_"), static_cast<size_t>(program.blocks_size() - 1));
  EXPECT_EQ(Count(dot, "[label=\"ch1\", shape=hexagon"), 1u);
  EXPECT_EQ(dot.find("problems"), std::string::npos);
}

// Declared variables carry dtype and dims; parameters are styled apart; an in-place
// write does not rank; a problem at an op marks it, the others go into a note.
TEST(ProgramGraph, VariablesParametersAndProblems) {
  ProgramBuilder pb;
  BlockBuilder& b = pb.block(0);
  b.Var("x", RILL_FP32, {-1, 13}).Var("w", RILL_FP32, {13, 1}, true).Var("y", RILL_FP32, {-1, 1});
  b.Op("mul").Input("X", "x").Input("Y", "w").Output("Out", "y").Attr("x_num_col_dims", int32_t{1});
  b.Op("no_such_op").Input("X", "y").Output("Out", "w");
  GraphOptions options;
  options.problems = {"block 0, op 1 (no_such_op X=[y] -> Out=[w]): op 'no_such_op' is not provided",
                      "blocks are out of order"};
  const std::string dot = ProgramToDot(pb.Build(), options);
  EXPECT_NE(dot.find("label=\"x\\nfp32 [-1, 13]\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"w\\nfp32 [13, 1]\", style=filled, fillcolor=\"#cfe2ff\""), std::string::npos);
  EXPECT_NE(dot.find("label=\"mul\\nx_num_col_dims=1\""), std::string::npos);
  EXPECT_NE(dot.find("color=red, fillcolor=\"#ffd6d6\", tooltip=\"block 0, op 1 (no_such_op"), std::string::npos);
  EXPECT_NE(dot.find("problems [shape=note"), std::string::npos);
  EXPECT_NE(dot.find("blocks are out of order"), std::string::npos);
}

// A block index out of range and a block whose parent is itself are drawn around, noted.
TEST(ProgramGraph, DrawsWhatItCanOfAMalformedProgram) {
  ProgramBuilder pb;
  BlockBuilder& body = pb.NewBlock(0);
  body.Op("increment").Input("X", "i").Output("Out", "i");
  pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", 7);
  proto::ProgramDesc program = pb.Build();
  program.mutable_blocks(1)->set_parent_idx(1);
  const std::string dot = ProgramToDot(program);
  EXPECT_NE(dot.find("sub_block names block 7, which does not exist"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_1"), std::string::npos);
  EXPECT_NE(dot.find("label=\"increment"), std::string::npos);
}

// --block N draws that block alone; its outer variables stay outside it.
TEST(ProgramGraph, OneBlock) {
  const proto::ProgramDesc program = LoadProgram(kSource + "/examples/csp/fibonacci.pbtxt");
  GraphOptions options;
  options.block = 1;
  const std::string dot = ProgramToDot(program, options);
  EXPECT_EQ(Count(dot, "subgraph cluster_"), 1u);
  EXPECT_NE(dot.find("label=\"block 1: go\""), std::string::npos);
  EXPECT_EQ(dot.find("label=\"while\""), std::string::npos);  // block 0's ops are not drawn
  EXPECT_EQ(Count(dot, "channel_recv"), 10u);
}

TEST(ProgramGraph, CliWritesDotSvgAndRefusesBadInput) {
  const std::string dir = std::string(RILL_BINARY_DIR) + "/tests/program_graph";
  std::filesystem::create_directories(dir);
  const std::string fib = kSource + "/examples/csp/fibonacci.pbtxt";
  auto r = RunRill({"graph", fib});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\ndigraph program {"), std::string::npos);
  r = RunRill({"graph", fib, "-o", dir + "/fib.dot", "--block", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream dot_file(dir + "/fib.dot");
  std::stringstream dot;
  dot << dot_file.rdbuf();
  EXPECT_NE(dot.str().find("label=\"block 3: select\""), std::string::npos);
  r = RunRill({"graph", fib, "-o", dir + "/fib.svg"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream svg_file(dir + "/fib.svg");
  std::stringstream svg;
  svg << svg_file.rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("block 4: case 0: send x_copy on ch1"), std::string::npos);
  r = RunRill({"graph", fib, "--block", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--block 9: " + fib + " has blocks 0 to 5"), std::string::npos) << r.err;
  r = RunRill({"graph", fib, "-o", dir + "/no_extension"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no extension"), std::string::npos) << r.err;
  r = RunRill({"graph", fib, "-o", "/nonexistent/dir/fib.dot"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write '/nonexistent/dir/fib.dot'"), std::string::npos) << r.err;
}

// A program the check rejects is still drawn, with its problems marked and counted.
TEST(ProgramGraph, CliMarksTheProblemsOfAnInvalidProgram) {
  const std::string dir = std::string(RILL_BINARY_DIR) + "/tests/program_graph";
  std::filesystem::create_directories(dir);
  ProgramBuilder pb;
  pb.block(0).Op("no_such_op").Input("X", "a").Output("Out", "b");
  pb.block(0).Op("relu").Input("X", "b").Output("Out", "c");
  SaveProgram(pb.Build(), dir + "/bad.pbtxt", ProgramFormat::kText);
  const auto r = RunRill({"graph", dir + "/bad.pbtxt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tooltip=\"block 0, op 0 (no_such_op"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("label=\"relu\""), std::string::npos);
  EXPECT_NE(r.err.find("1 problem(s) marked"), std::string::npos) << r.err;
}

// A picture Graphviz would take minutes over is refused at once, and a dot that runs past
// its deadline, fails or crashes is reported as it is, with what it printed; nothing is
// left in the temporary directory either way, and .dot text has no budget.
TEST(ProgramGraph, PicturesGraphvizCannotLayOutInTimeAreRefusedAndItsFailuresNamed) {
  const std::string dir = std::string(RILL_BINARY_DIR) + "/tests/program_graph";
  std::filesystem::create_directories(dir);
  ProgramBuilder pb;
  for (size_t i = 0; i < kGraphNodeBudget; ++i) {
    pb.block(0).Op("scale").Input("X", "v" + std::to_string(i)).Output("Out", "v" + std::to_string(i + 1));
  }
  SaveProgram(pb.Build(), dir + "/long.pb", ProgramFormat::kBinary);
  auto r = RunRill({"graph", dir + "/long.pb", "-o", dir + "/long.svg"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the graph has 10001 nodes, more than Graphviz lays out in reasonable time (a picture takes "
                       "at most 5000); draw one block"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/long.svg"));
  r = RunRill({"graph", dir + "/long.pb", "-o", dir + "/long.dot"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Stand-ins for dot, first on PATH: one that hangs, one that fails, one that crashes
  // saying nothing.
  const std::string bin = dir + "/fake_dot", tmp = dir + "/tmp";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(bin);
  std::filesystem::create_directories(tmp);
  const std::string fib = kSource + "/examples/csp/fibonacci.pbtxt";
  const auto with_dot = [&](const std::string& script, const std::string& extra_env = "") {
    test::WriteFile(bin + "/dot", "#!/bin/sh\n" + script + "\n");
    std::filesystem::permissions(bin + "/dot", std::filesystem::perms::owner_all);
    return RunRill({"graph", fib, "-o", dir + "/fib_fake.svg"},
                   "TMPDIR=" + tmp + " PATH=" + bin + ":" + std::getenv("PATH") + " " + extra_env);
  };
  r = with_dot("exec sleep 600", "RILL_GRAPH_DEADLINE_S=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did not lay out '" + dir + "/fib_fake.svg' ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nodes) within 1 s (RILL_GRAPH_DEADLINE_S) and was stopped; draw one block"), std::string::npos)
      << r.err;
  r = with_dot("echo 'Error: <stdin>: syntax error in line 3' >&2; exit 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("`dot -Tsvg` failed (exit status 3) rendering '" + dir +
                       "/fib_fake.svg'; it printed: Error: <stdin>: syntax error in line 3"),
            std::string::npos)
      << r.err;
  r = with_dot("kill -SEGV $$");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("`dot -Tsvg` was killed by signal 11 (Segmentation fault) rendering '" + dir +
                       "/fib_fake.svg'; it printed nothing"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/fib_fake.svg"));
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "a temporary file was left in TMPDIR";
}

}  // namespace
}  // namespace rill::core
