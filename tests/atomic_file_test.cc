// Every writer of files the user keeps replaces them whole or not at all
// (core/io/atomic_file.h): a failure mid-way, injected by a file-size limit (RLIMIT_FSIZE,
// SIGXFSZ ignored: the write then fails with EFBIG) or by a variable with nothing to
// save, leaves the old file as it was and no temporary behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/lod_tensor_file.h"
#include "op_fixture.h"
#include "test_util.h"

namespace rill {
namespace {

using test::ReadFile;
using test::RunRill;
using test::TempPath;
using test::WriteFile;

// A fresh directory holding `name` with the contents "old"; returns the file's path.
std::string OldFile(const std::string& dir_name, const std::string& name) {
  const std::string dir = TempPath(dir_name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/" + name, "old");
  return dir + "/" + name;
}

// The file holds "old" and is the only thing in its directory: no temporary left.
void ExpectOldAndAlone(const std::string& path) {
  EXPECT_EQ(ReadFile(path), "old") << path;
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    ++entries;
    EXPECT_EQ(e.path(), path) << "left behind";
  }
  EXPECT_EQ(entries, 1);
}

// While alive, this process and the processes it starts may write files of at most
// `bytes`; a write past that fails (EFBIG) instead of raising SIGXFSZ.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_ = SIG_DFL;
};

constexpr rlim_t kLimit = 64 << 10;

TEST(AtomicFile, ReplacesTheFileWhenComplete) {
  const std::string path = OldFile("atomic_complete", "f");
  core::WriteFileAtomically(path, [](std::ostream& out) { out << "new"; });
  EXPECT_EQ(ReadFile(path), "new");
  const std::string fresh = std::filesystem::path(path).parent_path() / "g";
  core::WriteFileAtomically(fresh, [](std::ostream& out) { out << "made"; });
  EXPECT_EQ(ReadFile(fresh), "made");
}

TEST(AtomicFile, AFillThatThrowsMidWayLeavesTheOldFile) {
  const std::string path = OldFile("atomic_throw", "f");
  EXPECT_THROW(core::WriteFileAtomically(path,
                                         [](std::ostream& out) {
                                           out << std::string(1 << 20, 'x');
                                           throw core::Error("the second variable holds nothing");
                                         }),
               core::Error);
  ExpectOldAndAlone(path);
}

TEST(AtomicFile, AWriteThatFailsMidWayLeavesTheOldFile) {
  const std::string path = OldFile("atomic_efbig", "f");
  FileSizeLimit limit(kLimit);
  try {
    core::WriteFileAtomically(path, [](std::ostream& out) { out << std::string(4 * kLimit, 'x'); });
    ADD_FAILURE() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("writing '" + path + "': File too large"), std::string::npos) << e.what();
  }
  ExpectOldAndAlone(path);
}

// The save ops: a variable with nothing to save is found before a byte is written; a
// write failing mid-way leaves the old file.
class SaveOps : public test::OpFixture {};

TEST_F(SaveOps, AFailedSaveLeavesTheLastGoodFile) {
  const std::string path = OldFile("atomic_save_op", "ckpt");
  Set<float>("big", {4 * static_cast<int64_t>(kLimit) / 4}, std::vector<double>(kLimit, 1.0));
  scope()->Var("empty");
  Op("save_combine").Input("X", std::vector<std::string>{"big", "empty"}).Attr("file_path", path);
  EXPECT_NE(Run().find("(variable 'empty'): the variable holds no tensor (nothing written)"), std::string::npos);
  ExpectOldAndAlone(path);

  pb_ = core::ProgramBuilder();
  Op("save").Input("X", "big").Attr("file_path", path);
  {
    FileSizeLimit limit(kLimit);
    const std::string error = Run();
    EXPECT_NE(error.find("(variable 'big'): writing failed"), std::string::npos) << error;
  }
  ExpectOldAndAlone(path);
  ASSERT_EQ(Run(), "");
  EXPECT_GT(std::filesystem::file_size(path), kLimit);
}

// rill's own writers: -o of convert, transpile and backward; run's --save and --profile.
TEST(AtomicFile, RillsWritersLeaveTheOldFileWhenAWriteFails) {
  const std::string dir = TempPath("atomic_cli_in");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // A program larger than the limit: many ops over one large fill.
  std::ostringstream text;
  text << "blocks { idx: 0 parent_idx: -1\n"
          "  vars { name: \"x\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 1 } } } "
          "persistable: true }\n"
          "  ops { type: \"fill_constant\" outputs { parameter: \"Out\" arguments: \"x\" }\n"
          "        attrs { name: \"shape\" type: INTS ints: 1 } attrs { name: \"value\" type: FLOAT f: 1 }\n"
          "        attrs { name: \"dtype\" type: INT i: 5 } }\n"
          "  ops { type: \"fill_constant\" outputs { parameter: \"Out\" arguments: \"big\" }\n"
          "        attrs { name: \"shape\" type: INTS ints: "
       << kLimit
       << " } attrs { name: \"value\" type: FLOAT f: 1 }\n"
          "        attrs { name: \"dtype\" type: INT i: 5 } }\n";
  for (int i = 0; i < 2000; ++i) {
    text << "  ops { type: \"scale\" inputs { parameter: \"X\" arguments: \"x\" } outputs { parameter: \"Out\" "
            "arguments: \"x\" } attrs { name: \"scale\" type: FLOAT f: 1 } }\n";
  }
  text << "}\n";
  const std::string program = dir + "/prog.pbtxt";
  WriteFile(program, text.str());

  const std::string converted = OldFile("atomic_cli_convert", "prog.pb");
  const std::string saved = OldFile("atomic_cli_save", "big.npy");
  const std::string trace = OldFile("atomic_cli_profile", "trace.json");
  {
    FileSizeLimit limit(kLimit);
    const auto convert = RunRill({"convert", program, "-o", converted});
    EXPECT_EQ(convert.signal, 0);
    EXPECT_NE(convert.exit_code, 0);
    EXPECT_NE(convert.err.find("File too large"), std::string::npos) << convert.err;
    const auto save = RunRill({"run", program, "--fetch", "big", "--save", std::filesystem::path(saved).parent_path()});
    EXPECT_EQ(save.signal, 0);
    EXPECT_NE(save.exit_code, 0);
    EXPECT_NE(save.err.find("File too large"), std::string::npos) << save.err;
    const auto profile = RunRill({"run", program, "--profile", trace});
    EXPECT_EQ(profile.signal, 0);
    EXPECT_NE(profile.exit_code, 0);
    EXPECT_NE(profile.err.find("File too large"), std::string::npos) << profile.err;
  }
  ExpectOldAndAlone(converted);
  ExpectOldAndAlone(saved);
  ExpectOldAndAlone(trace);

  // backward -o and transpile -o, whose programs are a few KiB: a 1 KiB limit.
  const std::string fit = std::string(RILL_SOURCE_DIR) + "/examples/fit_a_line/";
  const std::string train = dir + "/train.pbtxt";
  ASSERT_EQ(RunRill({"backward", fit + "model.pbtxt", "--loss", "avg_cost", "--sgd", "0.1", "-o", train}).exit_code, 0);
  const std::string backward = OldFile("atomic_cli_backward", "train.pbtxt");
  const std::string transpiled = OldFile("atomic_cli_transpile", "trainer.pbtxt");
  {
    FileSizeLimit limit(1024);
    const auto b = RunRill({"backward", fit + "model.pbtxt", "--loss", "avg_cost", "--sgd", "0.1", "-o", backward});
    EXPECT_EQ(b.signal, 0);
    EXPECT_NE(b.err.find("File too large"), std::string::npos) << b.err;
    const auto t = RunRill({"transpile", train, "--startup", fit + "startup.pbtxt", "--trainers", "2", "--pservers",
                            "127.0.0.1:7001", "-o", std::filesystem::path(transpiled).parent_path()});
    EXPECT_EQ(t.signal, 0);
    EXPECT_NE(t.err.find("writing '" + transpiled + "': File too large"), std::string::npos) << t.err;
  }
  ExpectOldAndAlone(backward);
  ExpectOldAndAlone(transpiled);
}

}  // namespace
}  // namespace rill
