// Fluid's concurrency scenarios as programs, built with the CSP builder helpers, written
// to disk and run by the `rill` binary with the shipped plugins.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include "core/program/csp_builder.h"
#include "core/program/program_io.h"
#include "scenarios.h"
#include "test_util.h"

namespace rill::core {
namespace {

using examples::DaisyChain;
using test::RunRill;

const std::string kSource = RILL_SOURCE_DIR;

void Fill(BlockBuilder& b, const std::string& out, int32_t dtype, float value) {
  b.Op("fill_constant")
      .Output("Out", out)
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("dtype", dtype)
      .Attr("value", value);
}

// Writes the program and runs it, fetching `fetch`.
test::CommandResult RunProgram(const ProgramBuilder& pb, const std::string& name, const std::vector<std::string>& fetch,
                               const std::vector<std::string>& extra = {}) {
  const std::string path = test::TempPath(name + ".pbtxt");
  SaveProgram(pb.Build(), path, ProgramFormat::kText);
  std::vector<std::string> args = {"run", path};
  for (const auto& f : fetch) {
    args.push_back("--fetch");
    args.push_back(f);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return RunRill(args);
}

// Runs the program and expects success with exactly `out` on stdout.
void ExpectRunPrints(const ProgramBuilder& pb, const std::string& name, const std::vector<std::string>& fetch,
                     const std::string& out, const std::vector<std::string>& extra = {}) {
  const auto r = RunProgram(pb, name, fetch, extra);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, out);
}

TEST(CspPrograms, SeedGoExampleRuns) {
  const auto r = RunRill(
      {"run", kSource + "/tests/programs/seed_go_fragment.pbtxt", "--fetch", "return_value", "--fetch", "status_recv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "return_value int64 [1] 99\nstatus_recv bool [1] true\n");
}

TEST(CspPrograms, ExampleProgramsRun) {
  const auto fib = RunRill({"run", kSource + "/examples/csp/fibonacci.pbtxt", "--fetch", "result"});
  ASSERT_EQ(fib.exit_code, 0) << fib.err;
  EXPECT_EQ(fib.out, "result int32 [1] 34\n");
  if (std::string(RILL_TEST_SANITIZER) == "thread") return;  // 100,000 tasks: see below
  const auto chain = RunRill({"run", kSource + "/examples/csp/daisy_chain.pbtxt", "--fetch", "result"});
  ASSERT_EQ(chain.exit_code, 0) << chain.err;
  EXPECT_EQ(chain.out, "result int64 [1] 100001\n");
}

TEST(CspPrograms, DaisyChainOf100) {
  ExpectRunPrints(DaisyChain(100), "daisy100", {"result"}, "result int64 [1] 101\n");
}

TEST(CspPrograms, DaisyChainOf100000) {
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    GTEST_SKIP() << "ThreadSanitizer tracks at most 8128 threads and counts each task's fiber as "
                    "one; the chain of 100 runs under it instead";
  }
  ExpectRunPrints(DaisyChain(100000), "daisy100k", {"result"}, "result int64 [1] 100001\n");
}

TEST(CspPrograms, PingPongWithAndWithoutSelect) {
  for (bool with_select : {false, true}) {
    const auto r = RunProgram(examples::PingPong(100, with_select), "ping_pong_loop", {"echoed", "i"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "echoed int64 [1] 1\ni int64 [1] 100\n") << "select: " << with_select;
  }
}

TEST(CspPrograms, ProducerConsumerAtCapacities0And1And100) {
  for (int64_t cap : {0, 1, 100}) {
    const auto r = RunProgram(examples::ProducerConsumer(1000, cap), "prodcons", {"sum"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "sum int64 [1] 1000\n") << "capacity " << cap;
  }
}

TEST(CspPrograms, SpawnManyGoBlocks) {
  ExpectRunPrints(examples::SpawnMany(10000, 10000), "spawn", {"count"}, "count int64 [1] 10000\n");
  ExpectRunPrints(examples::SpawnMany(1000, 250), "spawn_batches", {"count"}, "count int64 [1] 1000\n");
}

TEST(CspPrograms, SelectSendCaseBeatsDefaultOnABufferedChannel) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "ch", kLodTensorType, 1);
  Fill(main, "x", RILL_INT64, 7);
  Fill(main, "result", RILL_INT64, 0);
  Select select(pb, main);
  Fill(select.Send("ch", "x"), "result", RILL_INT64, 1);
  Fill(select.Default(), "result", RILL_INT64, 2);
  ChannelRecv(main, "ch", "received");
  ExpectRunPrints(pb, "select_default", {"result", "received"}, "result int64 [1] 1\nreceived int64 [1] 7\n");
}

// Fluid's test_fibonacci: a go block receives ten numbers and then sends on quit; the main
// block's select inside while sends Fibonacci numbers until quit arrives.
TEST(CspPrograms, FibonacciViaSelectInWhile) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  Fill(main, "quit_ch_input", RILL_INT32, 0);
  Fill(main, "result", RILL_INT32, 0);
  Fill(main, "x", RILL_INT32, 0);
  Fill(main, "y", RILL_INT32, 1);
  Fill(main, "while_cond", RILL_BOOL, 1);
  Fill(main, "while_false", RILL_BOOL, 0);
  Fill(main, "x_tmp", RILL_INT32, 0);
  MakeChannel(main, "ch1");
  MakeChannel(main, "quit_ch");
  BlockBuilder& printer = Go(pb, main, {"ch1", "quit_ch", "result", "quit_ch_input"});
  for (int i = 0; i < 10; ++i) ChannelRecv(printer, "ch1", "result");
  ChannelSend(printer, "quit_ch", "quit_ch_input");
  BlockBuilder& loop = pb.NewBlock(0);
  main.Op("while").Input("Condition", "while_cond").BlockAttr("sub_block", loop.idx());
  {
    Fill(loop, "result2", RILL_INT32, 0);
    loop.Op("assign").Input("X", "x").Output("Out", "x_copy");  // Fluid's is_copy=True
    Select select(pb, loop);
    BlockBuilder& send = select.Send("ch1", "x_copy");
    send.Op("assign").Input("X", "x").Output("Out", "x_tmp");
    send.Op("assign").Input("X", "y").Output("Out", "x");
    send.Op("elementwise_add").Input("X", "x_tmp").Input("Y", "y").Output("Out", "sum");
    send.Op("assign").Input("X", "sum").Output("Out", "y");
    BlockBuilder& quit = select.Recv("quit_ch", "result2");
    quit.Op("assign").Input("X", "while_false").Output("Out", "while_cond");
  }
  ChannelClose(main, "ch1");
  ChannelClose(main, "quit_ch");
  ExpectRunPrints(pb, "fibonacci", {"result"}, "result int32 [1] 34\n");
}

// Fluid's test_ping_pong: ping and pong over two channels of capacity 1.
TEST(CspPrograms, PingPongOverTwoBufferedChannels) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "pings", kLodTensorType, 1);
  MakeChannel(main, "pongs", kLodTensorType, 1);
  Fill(main, "msg", RILL_INT64, 9);
  main.Op("assign").Input("X", "msg").Output("Out", "message_to_send");
  ChannelSend(main, "pings", "message_to_send");             // ping
  ChannelRecv(main, "pings", "ping_result");                 // pong ...
  ChannelSend(main, "pongs", "ping_result", /*copy=*/true);  // ... sends it on
  ChannelRecv(main, "pongs", "pong_result");
  ChannelClose(main, "pings");
  ChannelClose(main, "pongs");
  ExpectRunPrints(pb, "ping_pong", {"ping_result", "pong_result"},
                  "ping_result int64 [1] 9\npong_result int64 [1] 9\n");
}

// Go blocks use a variable of the while step that started them after that step's scope
// has ended: the scope lives as long as they do, and each step has its own, whether the
// step's block declares the variable or it is an output found nowhere up the chain, and
// whether the step ends in a counted loop's increment and less_than (which the executor
// runs natively, starting the next step in place when nothing holds the step's scope).
void ExpectEachStepsGoBlockSeesItsOwnVariable(bool declared, bool counted_tail = false) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "ch");
  MakeChannel(main, "start", kLodTensorType, 10);
  Fill(main, "i", RILL_INT64, 0);
  Fill(main, "n", RILL_INT64, 10);
  Fill(main, "sum", RILL_INT64, 0);
  main.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "cond");
  BlockBuilder& step = pb.NewBlock(0);
  main.Op("while").Input("Condition", "cond").BlockAttr("sub_block", step.idx());
  if (declared) step.Var("mine", RILL_INT64, {1});  // a variable of this step's scope
  if (!counted_tail) step.Op("increment").Input("X", "i").Output("Out", "i");
  step.Op("assign").Input("X", "i").Output("Out", "mine");
  BlockBuilder& worker = Go(pb, step, {"ch", "start", "mine"});
  ChannelRecv(worker, "start", "go_ahead");  // waits until every step has ended
  ChannelSend(worker, "ch", "mine");
  if (counted_tail) step.Op("increment").Input("X", "i").Output("Out", "i");
  step.Op("less_than").Input("X", "i").Input("Y", "n").Output("Out", "cond");
  Fill(main, "token", RILL_INT64, 0);
  for (int k = 0; k < 10; ++k) ChannelSend(main, "start", "token", /*copy=*/true);
  for (int k = 0; k < 10; ++k) {
    ChannelRecv(main, "ch", "got");
    main.Op("elementwise_add").Input("X", "sum").Input("Y", "got").Output("Out", "sum");
  }
  ExpectRunPrints(pb, "capture", {"sum"}, counted_tail ? "sum int64 [1] 45\n" : "sum int64 [1] 55\n");
}

TEST(CspPrograms, GoBlocksKeepTheScopesTheyUseAlive) {
  ExpectEachStepsGoBlockSeesItsOwnVariable(/*declared=*/true);
  ExpectEachStepsGoBlockSeesItsOwnVariable(/*declared=*/false);
  ExpectEachStepsGoBlockSeesItsOwnVariable(/*declared=*/true, /*counted_tail=*/true);
  ExpectEachStepsGoBlockSeesItsOwnVariable(/*declared=*/false, /*counted_tail=*/true);
}

TEST(CspPrograms, GoBlocksStillBlockedWhenTheMainBlockEndsAreStopped) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "never");
  MakeChannel(main, "results", kLodTensorType, 1);
  for (int k = 0; k < 3; ++k) ChannelRecv(Go(pb, main, {"never"}), "never", "x");  // blocked for good
  BlockBuilder& busy = Go(pb, main, {"results"});                                  // blocked once the buffer is full
  Fill(busy, "one", RILL_INT64, 1);
  for (int k = 0; k < 5; ++k) ChannelSend(busy, "results", "one", /*copy=*/true);
  ChannelRecv(main, "results", "first");
  const auto r = RunProgram(pb, "clean_end", {"first"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "first int64 [1] 1\n");
  EXPECT_EQ(r.err, "");
}

TEST(CspPrograms, ALoneReceiveFailsWithTheDeadlockWithinASecond) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "ch");
  ChannelRecv(main, "ch", "x");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = RunProgram(pb, "deadlock", {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "rill: error: deadlock: all 1 tasks are blocked: "
            "main: block 0, op 1 (channel_recv Channel=[ch] -> Out=[x]) receiving from channel 'ch'\n");
  EXPECT_LT(seconds, 1.0);
}

TEST(CspPrograms, MalformedSelectCasesAreClearErrors) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0,3,ch,x", "type must be 0, 1 or 2"},
      {"zero,1,ch,x", "idx and type must be integers"},
      {"0,1", "a send or receive case names a channel and a value"},
      {"0", "wrong number of fields"},
  };
  for (const auto& [text, why] : bad) {
    ProgramBuilder pb;
    MakeChannel(pb.block(0), "ch");
    Select select(pb, pb.block(0));
    select.Default();
    for (auto& op : *pb.block(0).desc()->mutable_ops()) {
      for (auto& a : *op.mutable_attrs()) {
        if (a.name() == "cases") a.add_strings(text);
      }
    }
    const auto r = RunProgram(pb, "bad_select", {});
    EXPECT_EQ(r.exit_code, 1) << text;
    EXPECT_NE(r.err.find("select: case \"" + text + "\": " + why), std::string::npos) << r.err;
  }
}

// A select op written out by hand, as a Fluid program would hold it: `cases`, and per
// case the seed's fill_constant / equal / conditional_block in the cases block, whose
// block (a child of the cases block, as Fluid's `with select.case()` makes it) sets
// int64 `mark` to marks[i]. `swapped` puts case_to_execute first in the equals and the
// condition in Cond; `extra` appends an op to the cases block. `case_blocks` names the
// first that many case blocks in the op's case_blocks, as Rill's builders do (-1: none).
void HandWrittenSelect(ProgramBuilder& pb, BlockBuilder& b, const std::string& name,
                       const std::vector<std::string>& cases, const std::string& mark, const std::vector<float>& marks,
                       bool swapped, const std::function<void(BlockBuilder&)>& extra = nullptr, int case_blocks = -1) {
  const std::string case_var = name + ".case";
  Fill(b, case_var, RILL_INT32, -1);
  BlockBuilder& cases_block = pb.NewBlock(b.idx());
  proto::OpDesc* select = b.Op("select")
                              .Input("case_to_execute", case_var)
                              .BlockAttr("sub_block", cases_block.idx())
                              .Attr("cases", cases)
                              .desc();
  proto::OpDesc_Attr* blocks = nullptr;
  if (case_blocks >= 0) {
    blocks = select->add_attrs();
    blocks->set_name("case_blocks");
    blocks->set_type(proto::BLOCKS);
  }
  for (size_t i = 0; i < marks.size(); ++i) {
    BlockBuilder& body = pb.NewBlock(cases_block.idx());
    if (blocks != nullptr && static_cast<int>(i) < case_blocks) blocks->add_blocks_idx(body.idx());
    Fill(body, mark, RILL_INT64, marks[i]);
    const std::string idx = name + ".idx" + std::to_string(i), cond = name + ".cond" + std::to_string(i);
    Fill(cases_block, idx, RILL_INT32, static_cast<float>(i));
    cases_block.Op("equal")
        .Input("X", swapped ? case_var : idx)
        .Input("Y", swapped ? idx : case_var)
        .Output("Out", cond);
    cases_block.Op("conditional_block")
        .Input(swapped ? "Cond" : "X", cond)
        .Attr("is_scalar_condition", true)
        .BlockAttr("sub_block", body.idx());
  }
  if (extra) extra(cases_block);
}

// Whether select runs only the chosen case's block (named in case_blocks) or its whole
// sub_block (a program Fluid wrote), the chosen case's block runs once and no other does;
// with case_blocks, the cases block's own ops do not run.
TEST(CspPrograms, ASelectRunsTheChosenCaseWhateverItsCasesBlockHolds) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "ch", kLodTensorType, 1);
  Fill(main, "x", RILL_INT64, 7);
  for (const char* var : {"a", "b", "c", "d", "got", "extra_ran", "extra_d"}) Fill(main, var, RILL_INT64, 0);
  // Nothing is buffered: the default case (1) runs; the send case (0) after it.
  HandWrittenSelect(pb, main, "a", {"0,2,ch,got", "1,0"}, "a", {1, 2}, /*swapped=*/true);
  HandWrittenSelect(pb, main, "b", {"0,1,ch,x", "1,0"}, "b", {1, 2}, /*swapped=*/false);
  // The seed's layout plus an op of its own, which every run of the select runs.
  HandWrittenSelect(pb, main, "c", {"0,2,ch,got", "1,0"}, "c", {1, 2}, /*swapped=*/false, [](BlockBuilder& cases) {
    cases.Op("increment").Input("X", "extra_ran").Output("Out", "extra_ran");
  });
  // The same with case_blocks: the chosen case's block alone runs, not the cases block.
  HandWrittenSelect(
      pb, main, "d", {"0,2,ch,got", "1,0"}, "d", {1, 2}, /*swapped=*/false,
      [](BlockBuilder& cases) { cases.Op("increment").Input("X", "extra_d").Output("Out", "extra_d"); },
      /*case_blocks=*/2);
  ExpectRunPrints(pb, "select_layouts", {"a", "b", "c", "d", "got", "extra_ran", "extra_d", "a.case", "c.case"},
                  "a int64 [1] 2\nb int64 [1] 1\nc int64 [1] 1\nd int64 [1] 2\ngot int64 [1] 7\n"
                  "extra_ran int64 [1] 1\nextra_d int64 [1] 0\na.case int32 [1] 1\nc.case int32 [1] 0\n");

  ProgramBuilder short_list;
  Fill(short_list.block(0), "e", RILL_INT64, 0);
  HandWrittenSelect(short_list, short_list.block(0), "e", {"0,1,ch,e", "1,0"}, "e", {1, 2}, false, nullptr,
                    /*case_blocks=*/1);
  const auto r = RunProgram(short_list, "select_case_blocks", {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("select: case_blocks names 1 blocks for 2 cases"), std::string::npos) << r.err;
}

// The ABI 1.0 compatibility plugin (plain C, tests/compat) parks its task while it waits
// (a mailbox), inside the same scheduler as the csp plugin's go blocks.
const std::vector<std::string> kCompatPlugin = {"--plugin",
                                                std::string(RILL_FIXTURE_DIR) + "/compat_1_0/librill_compat_1_0.so"};
TEST(CspPrograms, TheCompatPluginParksItsTask) {
  const std::vector<std::string>& plugin = kCompatPlugin;
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  main.Op("c_mailbox").Output("Out", "box");
  main.Op("assign").Input("X", "box").Output("Out", "shared");  // a copy shares the mailbox
  BlockBuilder& producer = Go(pb, main, {"shared"});
  Fill(producer, "v", RILL_FP32, 7);
  producer.Op("c_put").Input("Box", "shared").Input("X", "v");
  main.Op("c_take").Input("Box", "box").Output("Out", "got");
  ExpectRunPrints(pb, "compat_mailbox", {"got"}, "got fp32 [1] 7\n", plugin);

  ProgramBuilder alone;
  alone.block(0).Op("c_mailbox").Output("Out", "box");
  alone.block(0).Op("c_take").Input("Box", "box").Output("Out", "got");
  const auto d = RunProgram(alone, "compat_deadlock", {}, plugin);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(d.err,
            "rill: error: deadlock: all 1 tasks are blocked: main: block 0, op 1 (c_take Box=[box] -> "
            "Out=[got]) waiting for the mailbox\n");
}

// The compatibility plugin starts go blocks with ctx_go: the channel it binds is the
// block's own copy (the outer variable changes after), and the rest is seen through the
// op's scope.
TEST(CspPrograms, TheCompatPluginStartsGoBlocks) {
  const std::vector<std::string>& plugin = kCompatPlugin;
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  MakeChannel(main, "ch");
  main.Op("assign").Input("X", "ch").Output("Out", "first");
  Fill(main, "x", RILL_INT64, 21);
  BlockBuilder& sender = pb.NewBlock(0);
  main.Op("c_go").Input("X", "ch").BlockAttr("sub_block", sender.idx());
  sender.Op("elementwise_add").Input("X", "x").Input("Y", "x").Output("Out", "twice");
  ChannelSend(sender, "ch", "twice");
  MakeChannel(main, "ch");  // a new channel in the outer variable: the block keeps its own
  ChannelRecv(main, "first", "got");
  ExpectRunPrints(pb, "compat_go", {"got"}, "got int64 [1] 42\n", plugin);
}

TEST(CspPrograms, ChannelMisuseIsAClearError) {
  ProgramBuilder never;
  ChannelRecv(never.block(0), "nochan", "x");
  auto r = RunProgram(never, "never_created", {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("channel 'nochan' was never created"), std::string::npos) << r.err;

  ProgramBuilder twice;
  MakeChannel(twice.block(0), "ch");
  MakeChannel(twice.block(0), "never_sent");
  BlockBuilder& closer = Go(twice, twice.block(0), {"ch"});
  ChannelClose(closer, "ch");
  ChannelClose(closer, "ch");
  ChannelRecv(twice.block(0), "never_sent", "x");  // the go block's failure ends this wait
  r = RunProgram(twice, "close_twice", {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("go block started by block 0, op 2 (go X=[ch]) failed: block 1, op 1 (channel_close "
                       "Channel=[ch]): close of a closed channel"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace rill::core
