// The `rill` binary, run as a real process: outputs, exit codes, and that every failure is
// a one-line message and a non-zero exit, never a signal.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include "core/errors.h"
#include "core/io/lod_tensor_file.h"
#include "core/io/npy.h"
#include "test_util.h"

namespace rill::test {
namespace {

const std::string kSource = RILL_SOURCE_DIR;
const std::string kFixtures = RILL_FIXTURE_DIR;
const std::string kPlugins = RILL_PLUGIN_DIR;
const std::string kProgram = kSource + "/examples/programs/sum_below.pbtxt";

void ExpectCleanFailure(const CommandResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "rill died of a signal";
  EXPECT_EQ(r.exit_code, code) << r.err;
  // "rill: error: ..." for a failed run, "rill COMMAND: error: ..." for bad usage.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("^rill( [a-z]+)?: error: "))) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted: " << needle << "\ngot: " << r.err;
}

TEST(Cli, RunsTextAndBinaryProgramsIdentically) {
  const auto text = RunRill({"run", kProgram, "--fetch", "sum", "--fetch", "i"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, "sum of i < 5 for i in 1..10: sum: int64[1] {10}\nsum int64 [1] 10\ni int64 [1] 10\n");
  const std::string bin = TempPath("cli_sum_below.pb");
  ASSERT_EQ(RunRill({"convert", kProgram, "-o", bin}).exit_code, 0);
  const auto binary = RunRill({"run", bin, "--fetch", "sum", "--fetch", "i"});
  EXPECT_EQ(binary.exit_code, 0) << binary.err;
  EXPECT_EQ(binary.out, text.out);
  const auto glibc_as_it_comes = RunRill({"run", kProgram, "--malloc", "default", "--fetch", "sum", "--fetch", "i"});
  EXPECT_EQ(glibc_as_it_comes.exit_code, 0) << glibc_as_it_comes.err;
  EXPECT_EQ(glibc_as_it_comes.out, text.out);
}

TEST(Cli, FeedsAndSavesNpy) {
  core::Tensor x;
  x.Allocate(RILL_FP32, {2, 2});
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  const std::string in = TempPath("x.npy");
  core::WriteNpy(x, in);
  const std::string prog = TempPath("double.pbtxt");
  WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "elementwise_add" inputs { parameter: "X" arguments: "x" } inputs { parameter: "Y" arguments: "x" }
          outputs { parameter: "Out" arguments: "y" } } })");
  const std::string dir = TempPath("saved");
  const auto r = RunRill({"run", prog, "--feed", "x=" + in, "--fetch", "y", "--save", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "y fp32 [2,2] 0 2 4 6\n");
  EXPECT_EQ(core::ReadNpy(dir + "/y.npy").ValuesToString(), "0 2 4 6");
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "x"}), 2, "--feed takes VAR=FILE.npy");
  // One value per --plugin (and every repeatable option): the program after it is the operand.
  std::filesystem::create_directories(TempPath("no_plugins_here"));
  const auto one_plugin = RunRill({"--plugin-path", TempPath("no_plugins_here"), "run", "--plugin",
                                   kPlugins + "/librill_math.so", prog, "--feed", "x=" + in, "--fetch", "y"});
  EXPECT_EQ(one_plugin.exit_code, 0) << one_plugin.err;
  EXPECT_EQ(one_plugin.out, "y fp32 [2,2] 0 2 4 6\n");
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "x=" + kProgram}), 1, "not a .npy file");
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "x=" + in, "--fetch", "zz"}), 1,
                     "fetch: variable 'zz' does not exist after the run");
}

// Feed and fetch columns: each list's are 0..K-1, each once; anything else is refused
// before a list is allocated (a col of 1e8 made one of 9 GB), naming the ops.
TEST(Cli, FeedFetchColumnsAreChecked) {
  const auto program = [](int64_t feed_col, int64_t fetch_col) {
    const std::string path = TempPath("columns.pbtxt");
    WriteFile(path, R"(blocks { idx: 0 parent_idx: -1
      vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
      vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
      ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "x" }
            attrs { name: "col" type: INT i: )" +
                        std::to_string(feed_col) + R"( } }
      ops { type: "scale" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "a" } }
      ops { type: "scale" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "b" }
            attrs { name: "scale" type: FLOAT f: 2 } }
      ops { type: "fetch" inputs { parameter: "X" arguments: "a" } outputs { parameter: "Out" arguments: "fetch" }
            attrs { name: "col" type: INT i: 0 } }
      ops { type: "fetch" inputs { parameter: "X" arguments: "b" } outputs { parameter: "Out" arguments: "fetch" }
            attrs { name: "col" type: INT i: )" +
                        std::to_string(fetch_col) + R"( } } })");
    return path;
  };
  core::Tensor x;
  x.Allocate(RILL_FP32, {1});
  x.data_as<float>()[0] = 3;
  const std::string npy = TempPath("columns_x.npy");
  core::WriteNpy(x, npy);
  auto r = RunRill({"run", program(0, 1), "--feed", "x=" + npy});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a fp32 [1] 3\nb fp32 [1] 6\n");
  ExpectCleanFailure(RunRill({"run", program(0, 0), "--feed", "x=" + npy}), 1,
                     "fetch op 3 ('a') and fetch op 4 ('b') both use column 0 of 'fetch'");
  ExpectCleanFailure(RunRill({"run", program(-1, 1), "--feed", "x=" + npy}), 1,
                     "feed op 0 ('x'): col -1 is not in [0, 1), one column per feed op on 'feed'");
  ExpectCleanFailure(RunRill({"run", program(100000000, 1), "--feed", "x=" + npy}), 1,
                     "col 100000000 is not in [0, 1)");
  ExpectCleanFailure(RunRill({"run", program(int64_t{INT32_MIN}, 1), "--feed", "x=" + npy}), 1,
                     "col -2147483648 is not in [0, 1)");
  ExpectCleanFailure(RunRill({"run", program(0, 2), "--feed", "x=" + npy}), 1, "col 2 is not in [0, 2)");
}

// A header giving a key twice is refused: numpy reads the last, and reading the first
// would make another array of the same bytes.
TEST(Cli, NpyHeadersWithARepeatedKeyAreRefused) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'descr': '<i4', }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + std::string(8, '\0');
  std::istringstream in(bytes);
  try {
    core::ReadNpy(in, "twice.npy");
    ADD_FAILURE() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("twice.npy: .npy header gives 'descr' twice"), std::string::npos) << e.what();
  }
}

// A feed the program declares differently is refused, naming both.
TEST(Cli, FeedsAreCheckedAgainstTheirDeclarations) {
  int files = 0;
  const auto npy = [&](int32_t dtype, const std::vector<int64_t>& dims) {
    core::Tensor t;
    t.Allocate(dtype, dims);
    std::memset(t.data(), 0, t.nbytes());
    const std::string path = TempPath("feed" + std::to_string(files++) + ".npy");
    core::WriteNpy(t, path);
    return path;
  };
  const std::string prog = TempPath("declared.pbtxt");
  WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } }
           need_check_feed: true }
    vars { name: "c" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 } } } need_check_feed: true }
    vars { name: "free" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
    vars { name: "ch" type { type: CHANNEL } }
    ops { type: "scale" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } }
    ops { type: "scale" inputs { parameter: "X" arguments: "u" } outputs { parameter: "Out" arguments: "v" } } })");
  // `feed`, and good values of x, c and u unless it is one of them (a feed is given once).
  const auto fed = [&](const std::string& feed) {
    std::vector<std::string> args = {"run", prog, "--feed", feed, "--fetch", "y"};
    for (const auto& [name, dtype, dims] :
         {std::tuple{"x", RILL_FP32, std::vector<int64_t>{2, 3}}, {"c", RILL_INT64, {1}}, {"u", RILL_INT32, {4}}}) {
      if (feed.rfind(std::string(name) + "=", 0) != 0) {
        args.insert(args.end(), {"--feed", std::string(name) + "=" + npy(dtype, dims)});
      }
    }
    return RunRill(args);
  };
  const auto ok = fed("x=" + npy(RILL_FP32, {7, 3}));
  EXPECT_EQ(ok.exit_code, 0) << "-1 matches any size; an undeclared variable an op reads takes any value: " << ok.err;
  EXPECT_EQ(fed("c=" + npy(RILL_INT64, {2, 2})).exit_code, 0) << "no dims declared: the dtype only is checked";
  ExpectCleanFailure(fed("x=" + npy(RILL_INT32, {2, 3})), 1,
                     "feed 'x': the program declares fp32 [-1, 3], the value fed is int32 [2, 3]");
  ExpectCleanFailure(fed("x=" + npy(RILL_FP32, {7})), 1,
                     "feed 'x': the program declares fp32 [-1, 3], the value fed is fp32 [7] (a declared "
                     "dimension of -1 matches any size)");
  ExpectCleanFailure(fed("x=" + npy(RILL_FP32, {2, 4})), 1, "the value fed is fp32 [2, 4]");
  ExpectCleanFailure(fed("c=" + npy(RILL_FP32, {1})), 1,
                     "feed 'c': the program declares int64 [], the value fed is fp32 [1]");
  ExpectCleanFailure(fed("ch=" + npy(RILL_FP32, {1})), 1, "feed 'ch': the variable is declared as CHANNEL");
  // Without need_check_feed (Paddle's default, and every program before Paddle 1.6) the
  // declaration is not checked, as Paddle does not check it: the value is fed as it is.
  EXPECT_EQ(fed("free=" + npy(RILL_FP32, {2, 5, 7})).exit_code, 0) << "no need_check_feed: any shape";
  EXPECT_EQ(fed("free=" + npy(RILL_INT32, {2, 3})).exit_code, 0) << "no need_check_feed: any dtype";
  ExpectCleanFailure(fed("xx=" + npy(RILL_FP32, {1})), 1,
                     "feed 'xx': the program neither declares nor uses a variable of that name");
}

// A shape attribute whose byte size does not fit is an error, not a
// wrapped 0-byte buffer.
TEST(Cli, AShapeTooLargeToAllocateIsACleanFailure) {
  const std::string prog = TempPath("huge.pbtxt");
  WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
          attrs { name: "shape" type: INTS ints: 1073741824 ints: 1073741824 ints: 4 } } })");
  ExpectCleanFailure(RunRill({"run", prog, "--fetch", "x"}), 1,
                     "block 0, op 0 (fill_constant -> Out=[x]): cannot allocate a tensor of fp32: shape [1073741824, "
                     "1073741824, 4] of 4-byte elements is more bytes than memory can address");
}

// A fill_constant op's text: `out` = [value], of dtype `dtype`.
std::string FillOne(const std::string& out, int dtype, int value) {
  return "ops { type: \"fill_constant\" outputs { parameter: \"Out\" arguments: \"" + out +
         "\" } attrs { name: \"shape\" type: INTS ints: 1 } attrs { name: \"dtype\" type: INT i: " +
         std::to_string(dtype) + " } attrs { name: \"value\" type: FLOAT f: " + std::to_string(value) + " } }\n";
}

// `blocks` go blocks, each counting to `work` before it ends; main counts to `gap` between
// two of them, and to `work` after the last (when main ends, the run ends).
std::string BusyGoBlocks(int blocks, int work, int gap) {
  const auto fill = [](const std::string& out, int value) { return FillOne(out, RILL_INT64, value); };
  // n += 1; more = n < limit
  const auto step = [](const std::string& n, const std::string& limit, const std::string& more) {
    return "ops { type: \"increment\" inputs { parameter: \"X\" arguments: \"" + n +
           "\" } outputs { parameter: \"Out\" arguments: \"" + n +
           "\" } }\n"
           "ops { type: \"less_than\" inputs { parameter: \"X\" arguments: \"" +
           n +
           "\" } inputs { parameter: "
           "\"Y\" arguments: \"" +
           limit + "\" } outputs { parameter: \"Out\" arguments: \"" + more + "\" } }\n";
  };
  const auto loop = [](const std::string& more, int block) {
    return "ops { type: \"while\" inputs { parameter: \"Condition\" arguments: \"" + more +
           "\" } attrs { name: \"sub_block\" type: BLOCK block_idx: " + std::to_string(block) + " } }\n";
  };
  std::string p = "blocks { idx: 0 parent_idx: -1\n" + fill("i", -1) + fill("blocks", blocks) + fill("work", work) +
                  fill("gap", gap) + step("i", "blocks", "more") + loop("more", 1) + fill("m", -1) +
                  step("m", "work", "counting") + loop("counting", 5) + "}\n";
  p += "blocks { idx: 1 parent_idx: 0\n"
       "ops { type: \"go\" attrs { name: \"sub_block\" type: BLOCK block_idx: 2 } }\n" +
       fill("k", -1) + step("k", "gap", "waiting") + loop("waiting", 3) + step("i", "blocks", "more") + "}\n";
  p += "blocks { idx: 2 parent_idx: 1\n" + fill("j", -1) + step("j", "work", "working") + loop("working", 4) + "}\n";
  p += "blocks { idx: 3 parent_idx: 1\n" + step("k", "gap", "waiting") + "}\n";
  p += "blocks { idx: 4 parent_idx: 2\n" + step("j", "work", "working") + "}\n";
  p += "blocks { idx: 5 parent_idx: 0\n" + step("m", "work", "counting") + "}\n";
  return p;
}

// Running out of memory or threads is an error, never `terminate`. The
// runs are given a small address space (prlimit --as), which sanitizer runtimes, reserving
// terabytes of shadow memory, cannot start in.
TEST(Cli, RunningOutOfMemoryOrThreadsIsACleanFailure) {
  if (!std::string(RILL_TEST_SANITIZER).empty()) {
    GTEST_SKIP() << "built with a sanitizer (" << RILL_TEST_SANITIZER << "), whose runtime cannot start in a "
                 << "limited address space";
  }
  const std::string limited = "prlimit --as=1000000000";  // 1 GB
  // A channel of capacity 16,777,216 buffers as values arrive: one send needs one slot,
  // where the buffer built at full capacity (2.5 GB) ended the run in terminate.
  const std::string channel = TempPath("big_channel.pbtxt");
  WriteFile(channel, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "channel_create" outputs { parameter: "Out" arguments: "ch" }
          attrs { name: "data_type" type: INT i: 7 } attrs { name: "capacity" type: INT i: 16777216 } }
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" } attrs { name: "shape" type: INTS ints: 1 } }
    ops { type: "channel_send" inputs { parameter: "Channel" arguments: "ch" } inputs { parameter: "X" arguments: "x" }
          outputs { parameter: "Status" arguments: "s" } attrs { name: "is_copy" type: BOOLEAN b: true } } })");
  const auto one_send = RunRill({"run", channel, "--fetch", "s"}, limited);
  EXPECT_EQ(one_send.exit_code, 0) << one_send.err;
  EXPECT_EQ(one_send.out, "s bool [1] true\n");
  // Worker threads start as work waits for them: a program with nothing to run beside its
  // main task starts none, so it runs with 1000 allowed.
  const auto few = RunRill({"run", kProgram, "--workers", "1000", "--fetch", "sum"}, limited);
  EXPECT_EQ(few.exit_code, 0) << few.err;
  // Go blocks that keep their workers busy start one thread after another, until their
  // stacks (8 MiB each) run out of the address space part way.
  const std::string busy = TempPath("busy_go_blocks.pbtxt");
  WriteFile(busy, BusyGoBlocks(60, 100000000, 10000));
  ExpectCleanFailure(RunRill({"run", busy, "--workers", "1000"}, limited), 1, "cannot start worker thread ");
  // The bound on workers, before anything is made.
  ExpectCleanFailure(RunRill({"run", kProgram, "--workers", "100000"}), 1,
                     "--workers 100000 is more worker threads than the 1024 a run may have");
  ExpectCleanFailure(RunRill({"run", kProgram}, "RILL_WORKERS=5000"), 1,
                     "RILL_WORKERS 5000 is more worker threads than the 1024 a run may have");
}

// `depth` conditional blocks, each in the one before, each adding 1 to
// `n`, in a go block that sends `n` back on `done`; beside it, `parked` go blocks wait
// on a channel until main closes it.
std::string NestedInAGoBlockBesideParkedOnes(int depth, int parked) {
  const auto& fill = FillOne;
  const auto chan = [](const std::string& out) {
    return "ops { type: \"channel_create\" outputs { parameter: \"Out\" arguments: \"" + out +
           "\" } attrs { name: \"data_type\" type: INT i: 7 } attrs { name: \"capacity\" type: INT i: 0 } }\n";
  };
  const auto branch = [](int block) {
    return "ops { type: \"conditional_block\" inputs { parameter: \"Cond\" arguments: \"c\" } attrs { name: "
           "\"is_scalar_condition\" type: BOOLEAN b: true } attrs { name: \"sub_block\" type: BLOCK block_idx: " +
           std::to_string(block) + " } }\n";
  };
  const std::string less =
      "ops { type: \"less_than\" inputs { parameter: \"X\" arguments: \"i\" } inputs { parameter: "
      "\"Y\" arguments: \"limit\" } outputs { parameter: \"Out\" arguments: \"more\" } }\n";
  std::string p = "blocks { idx: 0 parent_idx: -1\n" + chan("gate") + chan("done") + fill("c", RILL_BOOL, 1) +
                  fill("n", RILL_INT64, 0) + fill("i", RILL_INT64, 0) + fill("limit", RILL_INT64, parked) + less +
                  "ops { type: \"while\" inputs { parameter: \"Condition\" arguments: \"more\" } attrs { name: "
                  "\"sub_block\" type: BLOCK block_idx: 1 } }\n"
                  "ops { type: \"go\" inputs { parameter: \"X\" arguments: \"done\" } attrs { name: \"sub_block\" "
                  "type: BLOCK block_idx: 2 } }\n"
                  "ops { type: \"channel_recv\" inputs { parameter: \"Channel\" arguments: \"done\" } outputs { "
                  "parameter: \"Out\" arguments: \"result\" } }\n"
                  "ops { type: \"channel_close\" inputs { parameter: \"Channel\" arguments: \"gate\" } } }\n";
  p += "blocks { idx: 1 parent_idx: 0\n"
       "ops { type: \"go\" inputs { parameter: \"X\" arguments: \"gate\" } attrs { name: \"sub_block\" type: "
       "BLOCK block_idx: 3 } }\n"
       "ops { type: \"increment\" inputs { parameter: \"X\" arguments: \"i\" } outputs { parameter: \"Out\" "
       "arguments: \"i\" } }\n" +
       less + "}\n";
  p += "blocks { idx: 2 parent_idx: 0\n" + branch(4) +
       "ops { type: \"channel_send\" inputs { parameter: \"Channel\" arguments: \"done\" } inputs { parameter: "
       "\"X\" arguments: \"n\" } } }\n";
  p += "blocks { idx: 3 parent_idx: 1\n"
       "ops { type: \"channel_recv\" inputs { parameter: \"Channel\" arguments: \"gate\" } outputs { parameter: "
       "\"Out\" arguments: \"got\" } } }\n";
  for (int k = 0; k < depth; ++k) {
    const int b = 4 + k;
    p += "blocks { idx: " + std::to_string(b) + " parent_idx: " + std::to_string(k == 0 ? 2 : b - 1) + "\n" +
         "ops { type: \"increment\" inputs { parameter: \"X\" arguments: \"n\" } outputs { parameter: \"Out\" "
         "arguments: \"n\" } }\n" +
         (k + 1 < depth ? branch(b + 1) : "") + "}\n";
  }
  return p;
}

// Nesting deeper than a stack holds ends with an error naming the depth, on a go block's
// stack as on the main task's; never a signal, and never exit 0 after an overflow. The
// acceptance case: 100,000 parked go blocks (past the guard-page budget, where stacks
// have no guard page) and a go block nesting 2,000 deep.
TEST(Cli, NestingDeeperThanTheStackIsACleanFailure) {
  const std::string shallow = TempPath("nest_shallow.pbtxt");
  WriteFile(shallow, NestedInAGoBlockBesideParkedOnes(50, 10));
  const auto fits = RunRill({"run", shallow, "--fetch", "result"});
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(fits.out, "result int64 [1] 50\n");

  // ThreadSanitizer tracks at most 8,128 threads and counts each task's fiber as one.
  const int parked = std::string(RILL_TEST_SANITIZER) == "thread" ? 1000 : 100000;
  const std::string deep = TempPath("nest_deep.pbtxt");
  WriteFile(deep, NestedInAGoBlockBesideParkedOnes(2000, parked));
  const auto r = RunRill({"run", deep, "--fetch", "result"});
  ExpectCleanFailure(r, 1, "go block started by block 0, op 8 (go X=[done]) failed: block 2, op 0 (conditional_block");
  EXPECT_NE(r.err.find("): … block "), std::string::npos) << "levels past the eighth go unnamed: " << r.err;
  EXPECT_NE(r.err.find("block nesting exceeds "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KiB of the task's 256 KiB stack is left for a block nested deeper"), std::string::npos)
      << r.err;
  EXPECT_LT(r.err.size(), 2000u) << "an error 2,000 blocks deep is not 2,000 names long";
}

// The same on the main task's 8 MiB stack: 30,000 levels (it segfaulted near 20,000).
TEST(Cli, NestingDeeperThanTheMainStackIsACleanFailure) {
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    GTEST_SKIP() << "ThreadSanitizer's state for a recursion this deep outgrew 24 GB (killed by the kernel); "
                    "NestingDeeperThanTheStackIsACleanFailure shows the check under it in a go block";
  }
  std::string main_deep =
      "blocks { idx: 0 parent_idx: -1\n"
      "ops { type: \"fill_constant\" outputs { parameter: \"Out\" arguments: \"c\" } attrs { "
      "name: \"shape\" type: INTS ints: 1 } attrs { name: \"dtype\" type: INT i: 0 } attrs { "
      "name: \"value\" type: FLOAT f: 1 } }\n";
  for (int b = 1; b <= 30000; ++b) {
    main_deep +=
        "ops { type: \"conditional_block\" inputs { parameter: \"Cond\" arguments: \"c\" } attrs { name: "
        "\"is_scalar_condition\" type: BOOLEAN b: true } attrs { name: \"sub_block\" type: BLOCK block_idx: " +
        std::to_string(b) + " } } }\nblocks { idx: " + std::to_string(b) + " parent_idx: " + std::to_string(b - 1) +
        "\n";
  }
  main_deep += "}\n";
  const std::string on_main = TempPath("nest_main.pbtxt");
  WriteFile(on_main, main_deep);
  const auto m = RunRill({"run", on_main});
  ExpectCleanFailure(m, 1, "block 0, op 1 (conditional_block Cond=[c]): block 1, op 0 (conditional_block");
  EXPECT_NE(m.err.find("block nesting exceeds "), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("KiB of the task's 8192 KiB stack is left"), std::string::npos) << m.err;
}

// Fluid's feed and fetch ops: --feed fills a feed op's column of the feed list;
// without --fetch, rill run prints (and --save writes) the fetch ops' variables in col
// order, a '/' in a name written as '_'.
TEST(Cli, FeedAndFetchOpsRunAsInFluid) {
  const std::string prog = TempPath("feed_fetch.pbtxt");
  WriteFile(prog, R"(blocks { idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "image" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } }
           need_check_feed: true }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "image" }
          attrs { name: "col" type: INT i: 0 } }
    ops { type: "scale" inputs { parameter: "X" arguments: "image" } outputs { parameter: "Out" arguments: "out/scale_0.tmp_0" }
          attrs { name: "scale" type: FLOAT f: 2 } attrs { name: "op_role" type: INT i: 0 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "image" } outputs { parameter: "Out" arguments: "fetch" }
          attrs { name: "col" type: INT i: 1 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "out/scale_0.tmp_0" } outputs { parameter: "Out" arguments: "fetch" }
          attrs { name: "col" type: INT i: 0 } } })");
  core::Tensor x;
  x.Allocate(RILL_FP32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = static_cast<float>(i + 1);
  const std::string image = TempPath("image.npy");
  core::WriteNpy(x, image);
  const std::string dir = TempPath("fetched");
  const auto r = RunRill({"run", prog, "--feed", "image=" + image, "--save", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "out/scale_0.tmp_0 fp32 [2,3] 2 4 6 8 10 12\nimage fp32 [2,3] 1 2 3 4 5 6\n");
  EXPECT_EQ(core::ReadNpy(dir + "/out_scale_0.tmp_0.npy").ValuesToString(), "2 4 6 8 10 12");
  EXPECT_EQ(core::ReadNpy(dir + "/image.npy").ValuesToString(), "1 2 3 4 5 6");
  const auto named = RunRill({"run", prog, "--feed", "image=" + image, "--fetch", "image"});
  EXPECT_EQ(named.out, "image fp32 [2,3] 1 2 3 4 5 6\n") << "--fetch names what is printed";
  ExpectCleanFailure(RunRill({"run", prog}), 1, "feed 'image' (fp32 [-1, 3]) is not given");
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "image=" + image, "--feed", "image=" + image}), 1,
                     "feed 'image' is given twice");
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "image=" + image, "--feed", "fetch=" + image}), 1,
                     "feed 'fetch' is not one of the program's feeds (image)");
  core::Tensor wide;
  wide.Allocate(RILL_FP32, {2, 4});
  std::memset(wide.data(), 0, wide.nbytes());
  core::WriteNpy(wide, image);
  ExpectCleanFailure(RunRill({"run", prog, "--feed", "image=" + image}), 1,
                     "feed 'image': the program declares fp32 [-1, 3], the value fed is fp32 [2, 4]");
}

// Inference models as Paddle saves them: a directory with __model__
// and a file per parameter, or __params__, or other names; PREFIX.pdmodel beside
// PREFIX.pdiparams. out = relu(image x w + b), fetched by the program's fetch op.
TEST(Cli, InferenceModelsRunInEveryLayoutPaddleSaves) {
  const std::string text = TempPath("mlp.pbtxt");
  WriteFile(text, R"(blocks { idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "image" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
    vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 3 dims: 2 } } } persistable: true }
    vars { name: "b" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 } } } persistable: true }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "image" }
          attrs { name: "col" type: INT i: 0 } }
    ops { type: "mul" inputs { parameter: "X" arguments: "image" } inputs { parameter: "Y" arguments: "w" }
          outputs { parameter: "Out" arguments: "xw" } }
    ops { type: "elementwise_add" inputs { parameter: "X" arguments: "xw" } inputs { parameter: "Y" arguments: "b" }
          outputs { parameter: "Out" arguments: "xwb" } attrs { name: "axis" type: INT i: 1 } }
    ops { type: "relu" inputs { parameter: "X" arguments: "xwb" } outputs { parameter: "Out" arguments: "out" } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "out" } outputs { parameter: "Out" arguments: "fetch" }
          attrs { name: "col" type: INT i: 0 } } })");
  const auto tensor = [](std::vector<int64_t> dims, std::vector<float> values) {
    core::Tensor t;
    t.Allocate(RILL_FP32, dims);
    std::copy(values.begin(), values.end(), t.data_as<float>());
    return t;
  };
  const auto write = [](const std::string& path, const std::vector<core::Tensor>& records) {
    std::ofstream out(path, std::ios::binary);
    for (const auto& t : records) core::WriteLodTensor(out, t, false, path);
  };
  const core::Tensor w = tensor({3, 2}, {1, -1, 2, 0, 0.5f, 1}), b = tensor({2}, {0.5f, -4});
  core::Tensor x = tensor({2, 3}, {1, 2, 3, -1, 0, 2});
  const std::string image = TempPath("mlp_image.npy");
  core::WriteNpy(x, image);
  // relu([1 2 3]·w + b) = relu([6.5 2] + [0.5 -4]) = [7 0]; relu([-1 0 2]·w + b) =
  // relu([0 3] + [0.5 -4]) = [0.5 0].
  const std::string expected = "out fp32 [2,2] 7 0 0.5 0\n";
  const auto run = [&](const std::vector<std::string>& args) {
    std::vector<std::string> all = {"run"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--feed", "image=" + image});
    return RunRill(all);
  };
  const auto model_dir = [&](const std::string& name, const std::string& model_file) {
    const std::string dir = TempPath(name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    EXPECT_EQ(RunRill({"convert", text, "-o", dir + "/" + model_file + ".pb"}).exit_code, 0);
    std::filesystem::rename(dir + "/" + model_file + ".pb", dir + "/" + model_file);
    return dir;
  };

  const std::string separate = model_dir("model_separate", "__model__");
  write(separate + "/w", {w});
  write(separate + "/b", {b});
  auto r = run({separate});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);

  const std::string combined = model_dir("model_combined", "__model__");
  write(combined + "/__params__", {b, w});  // in name order
  r = run({combined});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);

  const std::string named = model_dir("model_named", "model");
  write(named + "/params", {b, w});
  r = run({named, "--model-filename", "model", "--params-filename", "params"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);

  const std::string prefix = TempPath("mlp_infer");
  ASSERT_EQ(RunRill({"convert", text, "-o", prefix + ".pb"}).exit_code, 0);
  std::filesystem::rename(prefix + ".pb", prefix + ".pdmodel");
  write(prefix + ".pdiparams", {b, w});
  r = run({prefix + ".pdmodel"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);

  // A Paddle 2.x model folder: the directory of its one PREFIX.pdmodel (with the
  // .pdiparams.info Paddle writes beside them) runs as the .pdmodel does. Two programs and
  // no __model__ is an error naming both.
  const std::string folder = TempPath("mlp_folder");
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(prefix + ".pdmodel", folder + "/inference.pdmodel");
  std::filesystem::copy_file(prefix + ".pdiparams", folder + "/inference.pdiparams");
  WriteFile(folder + "/inference.pdiparams.info", "not read");
  r = run({folder});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  std::filesystem::copy_file(prefix + ".pdmodel", folder + "/other.pdmodel");
  ExpectCleanFailure(run({folder}), 1, "holds several programs (inference.pdmodel, other.pdmodel) and no __model__");
  const std::string empty = TempPath("no_model_here");
  std::filesystem::remove_all(empty);
  std::filesystem::create_directories(empty);
  ExpectCleanFailure(RunRill({"check", empty}), 1, "is a directory with no program in it");

  // Files the program does not name are not read, as Paddle's loader ignores them: a
  // README, a .gitkeep, a subdirectory, a stale parameter; a symlinked parameter is its file.
  WriteFile(separate + "/notes.txt", "hello");
  WriteFile(separate + "/.gitkeep", "");
  std::filesystem::create_directories(separate + "/old/sub");
  write(separate + "/stale_w", {w});
  std::filesystem::rename(separate + "/b", separate + "/b.real");
  std::filesystem::create_symlink("b.real", separate + "/b");
  r = run({separate});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);

  // Missing and surplus parameters are errors naming the file.
  std::filesystem::remove(separate + "/b");
  ExpectCleanFailure(run({separate}), 1, "cannot open the file of parameter 'b', '" + separate + "/b'");
  write(separate + "/b", {b});
  write(combined + "/__params__", {b, w, w});
  ExpectCleanFailure(run({combined}), 1, "'" + combined + "/__params__' holds more than the program's 2 parameters");
  write(combined + "/__params__", {b});
  ExpectCleanFailure(run({combined}), 1, "'" + combined + "/__params__' (parameter 'w'): the LoDTensor version");
  ExpectCleanFailure(run({text, "--params-filename", "params"}), 2,
                     "--model-filename and --params-filename name the files");

  // A parameter file must hold what the program declares, dtype and dims.
  write(separate + "/w", {tensor({2, 3}, {1, -1, 2, 0, 0.5f, 1})});
  ExpectCleanFailure(
      run({separate}), 1,
      "'" + separate + "/w' (parameter 'w'): the file holds fp32 [2, 3], the program declares fp32 [3, 2]");
  write(separate + "/w", {tensor({3, 2, 1}, {1, -1, 2, 0, 0.5f, 1})});
  ExpectCleanFailure(run({separate}), 1, "the file holds fp32 [3, 2, 1], the program declares fp32 [3, 2]");
  write(combined + "/__params__", {tensor({1}, {0.5f}), w});
  ExpectCleanFailure(run({combined}), 1, "(parameter 'b'): the file holds fp32 [1], the program declares fp32 [2]");
  write(separate + "/w", {w});
  write(combined + "/__params__", {b, w});

  // A parameter file that is a FIFO is refused, not opened (that would wait forever).
  std::filesystem::remove(separate + "/b");
  ASSERT_EQ(mkfifo((separate + "/b").c_str(), 0600), 0);
  ExpectCleanFailure(run({separate}), 1,
                     "the file of parameter 'b', '" + separate + "/b' is a FIFO, not a regular file");
  std::filesystem::remove(separate + "/b");
  write(separate + "/b", {b});
}

// A model is code that runs with the user's rights: one that writes files, or reads a
// parameter or a file from outside its directory, is refused unless --allow-model-files;
// rill check and rill describe list what it would do.
TEST(Cli, ModelsThatWriteFilesOrReachOutsideTheirDirectoryAreRefused) {
  const std::string dir = TempPath("model_file_ops");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/sub");
  const std::string victim = TempPath("model_file_ops_victim");
  std::filesystem::remove(victim);
  const auto program = [&](const std::string& param, const std::string& extra_op) {
    return R"(blocks { idx: 0 parent_idx: -1
      vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
      vars { name: ")" +
           param + R"(" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 } } } persistable: true }
      )" + extra_op +
           R"(
      ops { type: "scale" inputs { parameter: "X" arguments: ")" +
           param + R"(" } outputs { parameter: "Out" arguments: "out" } }
      ops { type: "fetch" inputs { parameter: "X" arguments: "out" } outputs { parameter: "Out" arguments: "fetch" }
            attrs { name: "col" type: INT i: 0 } } })";
  };
  const auto model = [&](const std::string& param, const std::string& extra_op) {
    WriteFile(dir + "/model.pbtxt", program(param, extra_op));
    ASSERT_EQ(RunRill({"convert", dir + "/model.pbtxt", "-o", dir + "/__model__.pb"}).exit_code, 0);
    std::filesystem::rename(dir + "/__model__.pb", dir + "/__model__");
  };
  const auto write = [](const std::string& path) {
    core::Tensor t;
    t.Allocate(RILL_FP32, {2});
    t.data_as<float>()[0] = 1;
    t.data_as<float>()[1] = 2;
    std::ofstream out(path, std::ios::binary);
    core::WriteLodTensor(out, t, false, path);
  };
  write(dir + "/sub/w");
  write(victim);

  // Parameters in a subdirectory are fine.
  model("sub/w", "");
  auto r = RunRill({"run", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "out fp32 [2] 1 2\n");

  // A save op: refused, nothing written; allowed, it writes.
  const std::string save = R"(ops { type: "save" inputs { parameter: "X" arguments: "sub/w" }
      attrs { name: "file_path" type: STRING s: ")" +
                           victim + R"(" } })";
  std::filesystem::remove(victim);
  model("sub/w", save);
  ExpectCleanFailure(
      RunRill({"run", dir}), 1,
      "op 0 of block 0 (save, file_path '" + victim + "') writes a file: an inference model may not write files");
  EXPECT_FALSE(std::filesystem::exists(victim));
  r = RunRill({"check", dir});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("file access (rill run refuses it without --allow-model-files):\n  op 0 of block 0 (save"),
            std::string::npos)
      << r.out;
  r = RunRill({"describe", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  op 0 of block 0 (save, file_path '" + victim + "') writes a file"), std::string::npos)
      << r.out;
  r = RunRill({"run", dir, "--allow-model-files"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(victim));

  // A load op reading outside the directory.
  model("sub/w", R"(ops { type: "load" outputs { parameter: "Out" arguments: "other" }
      attrs { name: "file_path" type: STRING s: ")" +
                     victim + R"(" } })");
  ExpectCleanFailure(RunRill({"run", dir}), 1, "(load, file_path '" + victim + "') reads outside the model directory");

  // Parameter names that climb out, are absolute, or are symlinks pointing out.
  const std::string up = "../" + std::filesystem::path(victim).filename().string();
  model(up, "");
  ExpectCleanFailure(RunRill({"run", dir}), 1, "parameter '" + up + "' names a file outside the model directory");
  model(victim, "");
  ExpectCleanFailure(RunRill({"run", dir}), 1, "parameter '" + victim + "' names a file outside the model directory");
  std::filesystem::create_symlink(victim, dir + "/out_link");
  model("out_link", "");
  ExpectCleanFailure(RunRill({"run", dir}), 1, "parameter 'out_link' names a file outside the model directory");
  r = RunRill({"run", dir, "--allow-model-files"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "out fp32 [2] 1 2\n");
}

// Programs Paddle 2.x writes: its framework.proto fields and enum values
// load, its wider attribute types fill the schema's (LONGS an INTS, FLOAT64 a FLOAT, a
// SCALAR the kind it holds), bookkeeping attributes are ignored, and an undeclared slot is
// accepted while empty. An undeclared slot naming a variable, a VAR attribute and a
// complex SCALAR are still errors.
TEST(Cli, ProgramsPaddle2WritesLoadAndRun) {
  const auto program = [](const std::string& scale_tensor, const std::string& bias) {
    return R"(blocks { idx: 0 parent_idx: -1
      vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 dims: 3 } } }
             need_check_feed: false is_parameter: false stop_gradient: true
             attrs { name: "dist_attr" type: INT i: 0 } }
      vars { name: "h" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BF16 dims: 2 } } } }
      vars { name: "c" type { type: LOD_TENSOR lod_tensor { tensor { data_type: COMPLEX64 dims: 2 } } } }
      ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
            attrs { name: "shape" type: LONGS longs: 2 longs: 3 }
            attrs { name: "value" type: SCALAR scalar { type: FLOAT64 r: 1.5 } }
            attrs { name: "dtype" type: INT i: 5 }
            attrs { name: "op_role" type: INT i: 0 } attrs { name: "op_device" type: STRING s: "" }
            attrs { name: "op_callstack" type: STRINGS strings: "  File \"a.py\", line 1" }
            attrs { name: "with_quant_attr" type: BOOLEAN b: false }
            attrs { name: "op_role_var" type: STRINGS } attrs { name: "op_namescope" type: STRING s: "/" } }
      ops { type: "scale" inputs { parameter: "ScaleTensor" )" +
           scale_tensor + R"( } inputs { parameter: "X" arguments: "x" }
            outputs { parameter: "Out" arguments: "y" }
            attrs { name: "scale" type: FLOAT64 float64: 2.0 }
            attrs { name: "bias" )" +
           bias + R"( }
            attrs { name: "bias_after_scale" type: SCALAR scalar { type: BOOLEAN b: true } } } }
    version { version: 2004000 }
    op_version_map { pair { op_name: "fill_constant" op_version { version: 2 } } })";
  };
  const std::string ok = TempPath("paddle2.pbtxt");
  // An empty ScaleTensor (declared) and an empty BiasTensor (a slot no schema declares).
  WriteFile(ok, program("} inputs { parameter: \"BiasTensor\"", "type: SCALAR scalar { type: LONG i: 1 }"));
  auto r = RunRill({"run", ok, "--fetch", "y"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "y fp32 [2,3] 4 4 4 4 4 4\n");  // 1.5 * 2 + 1
  // The binary form (Paddle's own) loads the same.
  const std::string bin = TempPath("paddle2.pb");
  ASSERT_EQ(RunRill({"convert", ok, "-o", bin}).exit_code, 0);
  r = RunRill({"run", bin, "--fetch", "y"});
  EXPECT_EQ(r.out, "y fp32 [2,3] 4 4 4 4 4 4\n") << r.err;

  const std::string bad = TempPath("paddle2_bad.pbtxt");
  WriteFile(
      bad, program("} inputs { parameter: \"BiasTensor\" arguments: \"s\"", "type: SCALAR scalar { type: LONG i: 1 }"));
  ExpectCleanFailure(RunRill({"run", bad}), 1,
                     "block 0, op 1 (scale): unknown input slot 'BiasTensor' (declared: X, ScaleTensor)");
  WriteFile(bad, program("", "type: VAR var_name: \"b\""));
  ExpectCleanFailure(RunRill({"run", bad}), 1,
                     "block 0, op 1 (scale): attribute 'bias' must be FLOAT, the program gives VAR (variable 'b')");
  WriteFile(bad, program("", "type: SCALAR scalar { type: COMPLEX128 c { r: 1 i: 2 } }"));
  ExpectCleanFailure(RunRill({"run", bad}), 1, "attribute 'bias' must be FLOAT, the program gives SCALAR (complex128)");
}

// Attributes convert as Paddle's loader (ExtractAttribute) converts them: Paddle
// up to 1.6 saved booleans as INT, and an int may fill a FLOAT. What Paddle refuses stays
// an error naming the op and attribute.
TEST(Cli, AttributesConvertAsPaddlesLoaderDoes) {
  const auto program = [](const std::string& is_test, const std::string& scale, const std::string& after) {
    return R"(blocks { idx: 0 parent_idx: -1
      ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
            attrs { name: "shape" type: INTS ints: 2 } attrs { name: "value" type: FLOAT f: 2 }
            attrs { name: "dtype" type: INT i: 5 } }
      ops { type: "dropout" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "d" }
            outputs { parameter: "Mask" arguments: "m" } attrs { name: "dropout_prob" type: FLOAT f: 0.25 }
            attrs { name: "is_test" )" +
           is_test + R"( } }
      ops { type: "scale" inputs { parameter: "X" arguments: "d" } outputs { parameter: "Out" arguments: "y" }
            attrs { name: "scale" )" +
           scale + R"( } attrs { name: "bias" type: FLOAT f: 1 }
            attrs { name: "bias_after_scale" )" +
           after + R"( } } })";
  };
  const std::string prog = TempPath("coerced.pbtxt");
  // is_test 1 (INT): inference, d = x * (1 - 0.25) = 1.5; scale 3 (INT) with bias first
  // (bias_after_scale 0 as a LONG): (1.5 + 1) * 3.
  WriteFile(prog, program("type: INT i: 1", "type: INT i: 3", "type: LONG l: 0"));
  auto r = RunRill({"run", prog, "--fetch", "y"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "y fp32 [2] 7.5 7.5\n");
  // A FLOAT for a BOOLEAN (non-zero is true), a FLOAT64 for a FLOAT.
  WriteFile(prog, program("type: FLOAT f: 2", "type: FLOAT64 float64: 3", "type: FLOAT f: 0"));
  r = RunRill({"run", prog, "--fetch", "y"});
  EXPECT_EQ(r.out, "y fp32 [2] 7.5 7.5\n") << r.err;
  // Paddle reads no bool from a string, nor a FLOAT from INTS.
  WriteFile(prog, program("type: STRING s: \"yes\"", "type: INT i: 3", "type: INT i: 0"));
  ExpectCleanFailure(RunRill({"run", prog}), 1,
                     "block 0, op 1 (dropout): attribute 'is_test' must be BOOLEAN, the program gives STRING");
  WriteFile(prog, program("type: INT i: 1", "type: INTS ints: 3", "type: INT i: 0"));
  ExpectCleanFailure(RunRill({"run", prog}), 1,
                     "block 0, op 2 (scale): attribute 'scale' must be FLOAT, the program gives INTS");
}

// rill check and rill describe of a model: the op types no loaded
// plugin provides come first, each with its count; describe shows feeds, fetches,
// parameters and every op type with its provider.
TEST(Cli, CheckAndDescribeSayWhatAModelNeeds) {
  const std::string dir = TempPath("model_missing_ops");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string text = TempPath("model_missing_ops.pbtxt");
  const auto deformable_conv = [](const std::string& in, const std::string& out) {
    return R"(ops { type: "deformable_conv" inputs { parameter: "Input" arguments: ")" + in +
           R"(" } inputs { parameter: "Filter" arguments: "w" } outputs { parameter: "Output" arguments: ")" + out +
           R"(" } })";
  };
  WriteFile(text, R"(blocks { idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "img" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 dims: 8 dims: 8 } } } }
    vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 3 dims: 3 dims: 1 dims: 1 } } } persistable: true }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "img" } attrs { name: "col" type: INT i: 0 } }
    )" + deformable_conv("img", "c1") +
                      deformable_conv("c1", "c2") + deformable_conv("c2", "c3") + R"(
    ops { type: "psroi_pool" inputs { parameter: "X" arguments: "c3" } outputs { parameter: "Out" arguments: "p" } }
    ops { type: "relu" inputs { parameter: "X" arguments: "p" } inputs { parameter: "Y" arguments: "p" } outputs { parameter: "Out" arguments: "r" } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "r" } outputs { parameter: "Out" arguments: "fetch" } attrs { name: "col" type: INT i: 0 } } }
    version { version: 2004000 })");
  ASSERT_EQ(RunRill({"convert", text, "-o", dir + "/__model__"}).exit_code, 0);
  {
    core::Tensor w;
    w.Allocate(RILL_FP32, {3, 3, 1, 1});
    std::ofstream out(dir + "/w", std::ios::binary);
    core::WriteLodTensor(out, w, false, dir + "/w");
  }
  auto r = RunRill({"check", dir});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "2 op type(s) no loaded plugin provides (loaded: " + test::LoadedPlugins() +
                       "):\n"
                       "  deformable_conv          3 ops\n"
                       "  psroi_pool               1 op\n"
                       "block 0, op 5 (relu): unknown input slot 'Y' (declared: X)\n");
  EXPECT_NE(r.err.find("rill: error: " + dir +
                       ": op 'deformable_conv' is not provided by any loaded plugin (loaded: " + test::LoadedPlugins() +
                       ") (3 ops), and 1 op(s) of 1 other type(s) no loaded plugin provides; "
                       "1 problem(s); first: block 0, op 5 (relu): unknown input slot 'Y'"),
            std::string::npos)
      << r.err;
  r = RunRill({"describe", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"inference model", "written by: Paddle 2.4.0", "blocks: 1, ops: 7",
                           "  0  img  fp32 [-1, 3, 8, 8]", "fetches:\n  0  r  undeclared", "parameters: 1, 36 bytes",
                           "  deformable_conv               3  MISSING: no loaded plugin provides it",
                           "  relu                          1  math"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << "wanted: " << line << "\ngot:\n" << r.out;
  }
  // The op's description still wins over a file of the same name.
  r = RunRill({"describe", "relu"});
  EXPECT_NE(r.out.find("relu  (plugin math)"), std::string::npos) << r.out;
}

// Fluid's save_combine and load_combine: a program's variables saved in
// Fluid's format load back bit-exactly; load, overwrite and the load errors.
TEST(Cli, SaveCombineThenLoadCombineRoundTripsBitExactly) {
  const std::string dir = TempPath("saved_params");
  std::filesystem::remove_all(dir);
  const std::string params = dir + "/sub/__params__";
  const auto attr_path = [](const std::string& path) {
    return "attrs { name: \"file_path\" type: STRING s: \"" + path + "\" }";
  };
  const std::string save = TempPath("save.pbtxt");
  WriteFile(save, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "w0" }
          attrs { name: "shape" type: INTS ints: 2 ints: 3 } attrs { name: "value" type: FLOAT f: 0.1 } }
    ops { type: "scale" inputs { parameter: "X" arguments: "w0" } outputs { parameter: "Out" arguments: "w" }
          attrs { name: "scale" type: FLOAT f: 3.3 } attrs { name: "bias" type: FLOAT f: -0.7 } }
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "n" } attrs { name: "shape" type: INTS ints: 4 }
          attrs { name: "dtype" type: INT i: 3 } attrs { name: "value" type: FLOAT f: -9 } }
    ops { type: "save_combine" inputs { parameter: "X" arguments: "w" arguments: "n" } )" +
                      attr_path(params) + R"( }
    ops { type: "save" inputs { parameter: "X" arguments: "n" } )" +
                      attr_path(dir + "/n") + R"( } })");
  const auto saved = RunRill({"run", save, "--fetch", "w", "--fetch", "n", "--save", dir + "/before"});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;

  const std::string load = TempPath("load.pbtxt");
  WriteFile(load, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "load_combine" outputs { parameter: "Out" arguments: "w" arguments: "n" } )" +
                      attr_path(params) + R"( }
    ops { type: "load" outputs { parameter: "Out" arguments: "n1" } )" +
                      attr_path(dir + "/n") + R"( } })");
  const auto loaded = RunRill({"run", load, "--fetch", "w", "--fetch", "n", "--save", dir + "/after"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_EQ(loaded.out, saved.out);
  EXPECT_EQ(ReadFile(dir + "/after/w.npy"), ReadFile(dir + "/before/w.npy")) << "bit-exact";
  EXPECT_EQ(ReadFile(dir + "/after/n.npy"), ReadFile(dir + "/before/n.npy"));

  const std::string partial = TempPath("load_partial.pbtxt");
  WriteFile(partial, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "load_combine" outputs { parameter: "Out" arguments: "w" } )" +
                         attr_path(params) + R"( } })");
  ExpectCleanFailure(RunRill({"run", partial}), 1, "holds more than the 1 variables load_combine names");
  const std::string missing = TempPath("load_missing.pbtxt");
  WriteFile(missing, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "load" outputs { parameter: "Out" arguments: "w" } )" +
                         attr_path(dir + "/nope") + R"( } })");
  ExpectCleanFailure(RunRill({"run", missing}), 1, "cannot open '" + dir + "/nope'");
  const std::string keep = TempPath("save_keep.pbtxt");
  WriteFile(keep, R"(blocks { idx: 0 parent_idx: -1
    ops { type: "fill_constant" outputs { parameter: "Out" arguments: "n" } attrs { name: "shape" type: INTS ints: 1 } }
    ops { type: "save" inputs { parameter: "X" arguments: "n" } )" +
                      attr_path(dir + "/n") + R"( attrs { name: "overwrite" type: BOOLEAN b: false } } })");
  ExpectCleanFailure(RunRill({"run", keep}), 1, "'" + dir + "/n' exists, and overwrite is false");
  // A truncated parameter file names the file and the variable.
  const std::string bytes = ReadFile(params);
  WriteFile(params, bytes.substr(0, bytes.size() - 3));
  ExpectCleanFailure(RunRill({"run", load}), 1, "'" + params + "' (variable 'n'): the tensor's data: 32 bytes needed");
}

TEST(Cli, EachBadPluginIsACleanFailure) {
  ExpectCleanFailure(RunRill({"--plugin-path", kFixtures + "/not_a_library", "ops"}), 1,
                     "is not a loadable shared library");
  ExpectCleanFailure(RunRill({"--plugin-path", kFixtures + "/no_entry", "ops"}), 1, "has no Rill entry point");
  ExpectCleanFailure(RunRill({"--plugin-path", kFixtures + "/future_abi", "ops"}), 1,
                     "; this host serves versions 1 to " + std::to_string(RILL_ABI_VERSION));
  ExpectCleanFailure(RunRill({"--plugin-path", kFixtures + "/init_fails", "ops"}), 1,
                     "failed to initialize: device not present");
  ExpectCleanFailure(RunRill({"--plugin-path", kPlugins, "--plugin-path", kFixtures + "/duplicate_op", "ops"}), 1,
                     "op 'increment' is registered by both plugin 'math' and plugin 'duplicate_op'");
}

TEST(Cli, BadProgramsAreCleanFailures) {
  ExpectCleanFailure(RunRill({"run", "/nonexistent.pbtxt"}), 1, "cannot open program '/nonexistent.pbtxt'");
  const std::string garbled = TempPath("garbled.pbtxt");
  WriteFile(garbled, "blocks { idx: 0 oops }");
  ExpectCleanFailure(
      RunRill({"run", garbled}), 1,
      "not a valid text program: line 1, column 22: Message type \"rill.proto.BlockDesc\" has no field named \"oops\"");
  const std::string unknown = TempPath("unknown.pbtxt");
  WriteFile(unknown,
            R"(blocks { idx: 0 parent_idx: -1 ops { type: "send_rdma" } ops { type: "listen_and_serv_rdma" } })");
  ExpectCleanFailure(RunRill({"run", unknown}), 1,
                     "block 0, op 0 (send_rdma): op 'send_rdma' is not provided by any loaded plugin");
  const auto check = RunRill({"check", unknown});
  ExpectCleanFailure(check, 1,
                     "op 'listen_and_serv_rdma' is not provided by any loaded plugin (loaded: " +
                         test::LoadedPlugins() + ") (1 op), and 1 op(s) of 1 other type(s) no loaded plugin provides");
  EXPECT_NE(check.out.find("  send_rdma                1 op\n"), std::string::npos) << check.out;
  const auto ok = RunRill({"check", kProgram});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.out.find("ok (3 blocks, 12 ops)"), std::string::npos) << ok.out;
}

TEST(Cli, EachInvalidProgramIsACleanFailure) {
  const std::string head = R"(blocks { idx: 0 parent_idx: -1 )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(ops { type: "nosuch_op" } })",
       "block 0, op 0 (nosuch_op): op 'nosuch_op' is not provided by any loaded plugin"},
      {R"(ops { type: "while" inputs { parameter: "Condition" arguments: "c" }
                attrs { name: "sub_block" type: BLOCK block_idx: 3 } } })",
       "block 0, op 0 (while): attribute 'sub_block' refers to block 3, which does not exist"},
      {R"(} blocks { idx: 1 parent_idx: 7 })", "block 1: parent block 7 does not exist"},
      {R"(ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
                attrs { name: "dtype" type: STRING s: "float32" } } })",
       "block 0, op 0 (fill_constant): attribute 'dtype' must be INT, the program gives STRING"},
      {R"(ops { type: "elementwise_add" inputs { parameter: "X" arguments: "a" }
                outputs { parameter: "Out" arguments: "c" } } })",
       "block 0, op 0 (elementwise_add): required input 'Y' is missing"},
      // Once a segfault: a branch that runs its own block recursed until the stack ended.
      {R"(ops { type: "conditional_block" inputs { parameter: "Cond" arguments: "c" }
                attrs { name: "sub_block" type: BLOCK block_idx: 1 } } }
          blocks { idx: 1 parent_idx: 0
            ops { type: "conditional_block" inputs { parameter: "Cond" arguments: "c" }
                  attrs { name: "sub_block" type: BLOCK block_idx: 1 } } })",
       "block 1, op 0 (conditional_block): attribute 'sub_block' runs block 1, the op's own block, which recurses "
       "without end: block 1, op 0 (conditional_block) -> block 1"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = TempPath("invalid" + std::to_string(i) + ".pbtxt");
    WriteFile(path, head + cases[i].first);
    ExpectCleanFailure(RunRill({"run", path}), 1, cases[i].second);
    // check lists missing op types by name and count, not by position.
    const bool missing_op = cases[i].second.find("is not provided") != std::string::npos;
    ExpectCleanFailure(RunRill({"check", path}), 1,
                       missing_op ? cases[i].second.substr(cases[i].second.find(": ") + 2) : cases[i].second);
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  ExpectCleanFailure(RunRill({"frobnicate"}), 2, "unknown command 'frobnicate'");
  ExpectCleanFailure(RunRill({"ops", "--bogus"}), 2,
                     "rill ops: error: The following argument was not expected: --bogus");
  ExpectCleanFailure(RunRill({"run"}), 2, "usage: rill run PROGRAM");
  ExpectCleanFailure(RunRill({"run", kProgram, "--device", "tpu:0"}), 2,
                     "--device tpu:0: no loaded plugin provides a device called 'tpu'");
  ExpectCleanFailure(RunRill({"run", kProgram, "--device", "cuda:x"}), 2,
                     "--device takes cpu or DEVICE[:N] (cuda, cuda:1), got 'cuda:x'");
  ExpectCleanFailure(RunRill({"run", kProgram, "--malloc", "fast"}), 2,
                     "--malloc must be tuned or default, not 'fast'");
  const auto help = RunRill({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Usage: rill [OPTIONS] [SUBCOMMAND]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("  transpile "), std::string::npos);
}

// Each subcommand has its own options: another's is an error naming the subcommand; the
// global ones go before or after it; --flag=value works; --help after a subcommand is its.
TEST(Cli, SubcommandsHaveTheirOwnOptions) {
  ExpectCleanFailure(RunRill({"run", kProgram, "--loss", "x"}), 2,
                     "rill run: error: The following argument was not expected: --loss (rill run --help lists its "
                     "options)");
  ExpectCleanFailure(RunRill({"check", kProgram, "--iterations", "3"}), 2, "rill check: error:");
  ExpectCleanFailure(RunRill({"convert", kProgram, "--", "x"}), 2, "arguments after -- are `rill launch`'s");
  const auto before = RunRill({"--plugins=math,csp", "run", kProgram, "--fetch=sum"});
  const auto after = RunRill({"run", kProgram, "--fetch", "sum", "--plugins", "math,csp"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, after.out);
  EXPECT_NE(before.out.find("sum int64 [1] 10"), std::string::npos) << before.out;
  const auto run_help = RunRill({"run", "--help"});
  EXPECT_EQ(run_help.exit_code, 0);
  EXPECT_NE(run_help.out.find("--profile FILE.json"), std::string::npos) << run_help.out;
  EXPECT_EQ(run_help.out.find("--loss"), std::string::npos);
}

// Only regular files are opened as plugins: dlopen on a FIFO named like one blocked rill
// until a writer came. And a plugin path that names no directory says so.
TEST(Cli, PluginPathsThatCannotHoldPluginsAreClearErrors) {
  const std::string dir = TempPath("fifo_plugins");
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/librill_fifo.so";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectCleanFailure(RunRill({"--plugin-path", dir, "ops"}), 1,
                     "plugin directory '" + dir + "' holds 'librill_fifo.so', which is a FIFO, not a shared library");
  ExpectCleanFailure(RunRill({"--plugin", fifo, "ops"}), 1,
                     "plugin file '" + fifo + "' is a FIFO, not a shared library");
  ExpectCleanFailure(RunRill({"ops"}, "RILL_PLUGIN_PATH=::"), 1,
                     "RILL_PLUGIN_PATH is '::', which names no directory: set it to DIR[:DIR...], or unset it");
}

TEST(Cli, OpsDescribeAndPluginPathEnvironment) {
  const auto ops = RunRill({"ops"});
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  EXPECT_NE(ops.out.find("while                    core"), std::string::npos) << ops.out;
  EXPECT_NE(ops.out.find("elementwise_add          math"), std::string::npos) << ops.out;
  const auto env = RunRill({"ops"}, "RILL_PLUGIN_PATH=" + kPlugins + ":" + kFixtures + "/compat_1_0");
  EXPECT_NE(env.out.find("c_scale                  compat_1_0"), std::string::npos) << env.out;
  const auto desc = RunRill({"describe", "increment"});
  EXPECT_EQ(desc.exit_code, 0);
  EXPECT_NE(desc.out.find("step: FLOAT = 1  the amount added"), std::string::npos) << desc.out;
  EXPECT_NE(desc.out.find("kernels: CPU/fp32 CPU/fp64 CPU/int32 CPU/int64"), std::string::npos) << desc.out;
  ExpectCleanFailure(RunRill({"describe", "nosuch"}), 1, "op 'nosuch' is not provided by any loaded plugin");
}

// A device plugin's device by the name it registers, in `--device` and in `describe`.
TEST(Cli, DevicesAreNamedByTheirPlugins) {
  const std::string fake = kFixtures + "/fake_device/librill_fake_device.so";
  const auto desc = RunRill({"--plugin", fake, "describe", "scale"});
  EXPECT_NE(desc.out.find(" FAKE/fp32\n"), std::string::npos) << desc.out << desc.err;
  const std::string program = TempPath("on_fake.pbtxt");
  WriteFile(program, R"(blocks { idx: 0 parent_idx: -1
  ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
        attrs { name: "shape" type: INTS ints: 2 } attrs { name: "value" type: FLOAT f: 2 } }
  ops { type: "scale" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" }
        attrs { name: "scale" type: FLOAT f: 3 } }
  ops { type: "fake_device_stats" outputs { parameter: "Out" arguments: "stats" } } })");
  const auto run =
      RunRill({"--plugin", fake, "run", program, "--device", "FAKE:0", "--fetch", "y", "--fetch", "stats"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "y fp32 [2] 6 6\nstats int64 [6] 2 0 1 0 0 0\n")
      << "scale ran on FAKE: x moved there, y made there";
}

}  // namespace
}  // namespace rill::test
