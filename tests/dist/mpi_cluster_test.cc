// The MPI transport (dist_mpi) with real mpirun and real `rill` processes on this host:
// fit_a_line transpiled for MPI, run by hand under mpirun, and the failures that must end
// the job with a clear error instead of a hang.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace rill::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const std::string kFitALine = std::string(RILL_SOURCE_DIR) + "/examples/fit_a_line/";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// mpirun as the repo's scripts call it on these machines.
std::vector<std::string> Mpirun() {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  return argv;
}

class DistMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Under ASan the processes this suite starts run Open MPI, whose own allocations LSan
    // would report as leaks: tests/lsan_mpi.supp says which and why.
    if (std::string(RILL_TEST_SANITIZER).find("address") != std::string::npos) {
      setenv("LSAN_OPTIONS", ("suppressions=" + std::string(RILL_SOURCE_DIR) + "/tests/lsan_mpi.supp").c_str(), 1);
      setenv("ASAN_OPTIONS", "fast_unwind_on_malloc=0", 1);
    }
    dir_ = TempPath("dist_mpi");
    ASSERT_EQ(MakeFitALineTraining(dir_), "");
  }

  // Transpiles for `transport`, 2 trainers and 2 fresh loopback ports (or `pservers`).
  std::string Transpile(const std::string& transport, std::string pservers = "") {
    static int n = 0;
    const std::string out = dir_ + "/" + transport + std::to_string(++n);
    if (pservers.empty()) {
      pservers = "127.0.0.1:" + std::to_string(FreeLoopbackPort()) + ",127.0.0.1:" + std::to_string(FreeLoopbackPort());
    }
    const auto r = RunRill({"transpile", dir_ + "/train.pbtxt", "--startup", kFitALine + "startup.pbtxt", "--trainers",
                            "2", "--pservers", pservers, "--transport", transport, "-o", out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
  static std::vector<std::string> Pserver(const std::string& dir, int i) {
    const std::string p = dir + "/pserver_" + std::to_string(i);
    return {RILL_EXE, "run", p + ".pbtxt", "--startup", p + "_startup.pbtxt"};
  }
  static std::vector<std::string> Trainer(const std::string& dir, int iterations) {
    return {RILL_EXE,
            "run",
            dir + "/trainer.pbtxt",
            "--startup",
            dir + "/trainer_startup.pbtxt",
            "--feed",
            "x=" + dir_ + "/data/x.npy",
            "--feed",
            "y=" + dir_ + "/data/y.npy",
            "--iterations",
            std::to_string(iterations),
            "--fetch",
            "w"};
  }
  // One mpirun, one app context per program (MPMD), in rank order.
  static RillProcess::Command Job(const std::vector<std::vector<std::string>>& programs,
                                  const std::string& deadline_ms = "", const std::string& env = "") {
    RillProcess::Command c{Mpirun()};
    if (!deadline_ms.empty()) c.argv.insert(c.argv.end(), {"-x", "RILL_RPC_DEADLINE_MS=" + deadline_ms});
    if (!env.empty()) c.argv.insert(c.argv.end(), {"-x", env});
    for (size_t i = 0; i < programs.size(); ++i) {
      if (i > 0) c.argv.push_back(":");
      c.argv.insert(c.argv.end(), {"-np", "1"});
      c.argv.insert(c.argv.end(), programs[i].begin(), programs[i].end());
    }
    return c;
  }

  static std::string dir_;
};
std::string DistMpi::dir_;

TEST_F(DistMpi, TheSameProgramsForGrpcAndMpiDifferOnlyInTheTransportOps) {
  const std::string pservers = "127.0.0.1:7101,127.0.0.1:7102";
  const std::string grpc = Transpile("grpc", pservers), mpi = Transpile("mpi", pservers);
  int differing = 0;
  for (const char* file : {"trainer.pbtxt", "trainer_startup.pbtxt", "pserver_0.pbtxt", "pserver_0_startup.pbtxt",
                           "pserver_1.pbtxt", "pserver_1_startup.pbtxt"}) {
    const auto a = Lines(Read(grpc + "/" + file)), b = Lines(Read(mpi + "/" + file));
    ASSERT_EQ(a.size(), b.size()) << file;
    ASSERT_GT(a.size(), 0u) << file;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      ++differing;
      // `type: "send"` against `type: "send_mpi"`, and so on: nothing else.
      const std::string op = a[i].substr(0, a[i].size() - 1);
      EXPECT_EQ(b[i], op + "_mpi\"") << file << ":" << i + 1;
      EXPECT_NE(a[i].find("type: \""), std::string::npos) << file << ":" << i + 1;
    }
  }
  EXPECT_EQ(differing, 4);  // send, recv, and the two listen_and_serv
}

TEST_F(DistMpi, MpirunRunsTheClusterByHand) {
  const std::string dir = Transpile("mpi");
  // pserver 0, pserver 1, then two trainers: ranks 2 and 3 are trainers 0 and 1.
  RillProcess job(Job({Pserver(dir, 0), Pserver(dir, 1), Trainer(dir, 20), Trainer(dir, 20)}));
  const CommandResult r = job.Wait(seconds(90));
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0], lines[1]);  // both trainers hold the pservers' parameters
  EXPECT_EQ(lines[0].rfind("w fp32 [13,1] ", 0), 0u) << r.out;
}

// The same cluster as one SPMD job: each rank runs the process of the directory it is.
TEST_F(DistMpi, MpirunNpRunsTheClusterDirectory) {
  const std::string dir = Transpile("mpi");
  RillProcess::Command c{Mpirun()};
  c.argv.insert(c.argv.end(), {"-np", "4", RILL_EXE, "run", dir, "--feed", "x=" + dir_ + "/data/x.npy", "--feed",
                               "y=" + dir_ + "/data/y.npy", "--iterations", "20", "--fetch", "w", "--save",
                               dir + "/trainer_{trainer}"});
  RillProcess job(c);
  const CommandResult r = job.Wait(seconds(90));
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;  // the trainers fetch; the pservers do not
  EXPECT_EQ(lines[0], lines[1]);
  EXPECT_EQ(lines[0].rfind("w fp32 [13,1] ", 0), 0u) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/trainer_0/w.npy"));
  EXPECT_TRUE(fs::exists(dir + "/trainer_1/w.npy"));

  RillProcess::Command three{Mpirun()};
  three.argv.insert(three.argv.end(), {"-np", "3", RILL_EXE, "run", dir});
  RillProcess wrong(three);
  const CommandResult w = wrong.Wait(seconds(30));
  ASSERT_FALSE(w.timed_out) << w.err;
  EXPECT_NE(w.exit_code, 0);
  EXPECT_NE(w.err.find("has 2 pservers and 2 trainers: run it as 4 processes (mpirun -np 4), not 3"), std::string::npos)
      << w.err;

  const CommandResult alone = RunRill({"run", dir});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("runs one process of a cluster, picked by the rank a launcher gives it"), std::string::npos)
      << alone.err;
  // Paddle's roles are for gRPC clusters: an MPI cluster's process is its rank.
  const CommandResult by_role = RunRill({"run", dir}, "TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=0");
  EXPECT_NE(by_role.exit_code, 0);
  EXPECT_NE(by_role.err.find("is an MPI cluster, whose processes take their roles from their MPI ranks"),
            std::string::npos)
      << by_role.err;
}

TEST_F(DistMpi, ARankThatNeverArrivesIsAnErrorWithinTheDeadline) {
  const std::string dir = Transpile("mpi");
  // Rank 1 never runs an MPI op: rank 0 must not wait for it past the deadline.
  const auto start = std::chrono::steady_clock::now();
  RillProcess job(Job({Pserver(dir, 0), {"sleep", "60"}}, "1500"));
  const CommandResult r = job.Wait(seconds(40));
  ASSERT_FALSE(r.timed_out) << "the job still runs; stderr so far: " << r.err;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("within 1500 ms (RILL_RPC_DEADLINE_MS): not every rank of the MPI job"), std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(30));
}

// The pid of the `rill run` whose arguments include `marker`, or -1.
pid_t FindRill(const std::string& marker) {
  DIR* proc = opendir("/proc");
  pid_t found = -1;
  while (dirent* e = proc ? readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::string cmdline = Read("/proc/" + std::string(e->d_name) + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.rfind(RILL_EXE, 0) == 0 && cmdline.find(marker) != std::string::npos) found = pid;
  }
  if (proc) closedir(proc);
  return found;
}

TEST_F(DistMpi, ARankThatDiesEndsTheJobNamingIt) {
  const std::string dir = Transpile("mpi");
  RillProcess launch({"launch", dir, "--deadline-ms", "5000", "--", "--feed", "x=" + dir_ + "/data/x.npy", "--feed",
                      "y=" + dir_ + "/data/y.npy", "--iterations", "1000000", "--fetch", "w", "--save",
                      dir + "/trainer_{trainer}"});
  // Trainer 1, once it trains (its log shows nothing until the end: wait for the process).
  pid_t victim = -1;
  for (int i = 0; i < 200 && victim < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    victim = FindRill(dir + "/trainer_1");
  }
  ASSERT_GT(victim, 0) << "trainer 1 never started";
  // Mid-run: once both pservers heard from trainer 1.
  const CommandResult heard =
      StatusUntil({dir, "--json"}, [](const std::string& out) { return PserversHeardFrom(out, 1, 2); });
  ASSERT_TRUE(PserversHeardFrom(heard.out, 1, 2)) << heard.out << heard.err;
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const CommandResult r = launch.Wait(seconds(60));
  ASSERT_FALSE(r.timed_out) << "the job still runs; stderr so far: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("launch: mpirun failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the first to fail was trainer 1"), std::string::npos) << r.err;
}

// A 256 KiB parameter: both ways its bytes go by MPI (above the eager limit, and above
// kOutOfBandMinBytes), with the request pushed over MPI and as a gRPC call. One trainer
// sends a gradient of ones each step; sgd with rate 0.5 takes w from 1 to 1 - 0.5 * steps.
// A one-parameter cluster in `dir`: w (fp32 [256, 256], 1 MiB) lives on a pserver at
// `endpoint` with sgd at lr 0.5, and the trainer pulls it at startup. The trainer's block
// is `trainer_ops`, with the vars w and w@GRAD declared.
const std::string kParam = R"(type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 256 dims: 256 } } })";
const std::string kFillOnes =
    R"(attrs { name: "shape" type: INTS ints: 256 ints: 256 } attrs { name: "value" type: FLOAT f: 1 })";

void WriteOneParameterCluster(const std::string& dir, const std::string& endpoint, const std::string& trainer_ops) {
  fs::create_directories(dir);
  WriteFile(dir + "/pserver_startup.pbtxt",
            R"(blocks { idx: 0 parent_idx: -1 vars { name: "w" persistable: true )" + kParam +
                R"( } ops { type: "fill_constant" outputs { parameter: "Out" arguments: "w" } )" + kFillOnes + " } }");
  WriteFile(dir + "/pserver.pbtxt", R"(blocks { idx: 0 parent_idx: -1
  vars { name: "w" persistable: true )" +
                                        kParam + R"( }
  vars { name: "w@GRAD" )" + kParam + R"( }
  vars { name: "lr" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 1 } } } }
  ops { type: "listen_and_serv_mpi" attrs { name: "endpoint" type: STRING s: ")" +
                                        endpoint + R"(" }
        attrs { name: "OptimizeBlock" type: BLOCK block_idx: 1 } attrs { name: "ParamList" type: STRINGS strings: "w" }
        attrs { name: "GradList" type: STRINGS strings: "w@GRAD" } attrs { name: "Fanin" type: INT i: 1 } } }
blocks { idx: 1 parent_idx: 0
  ops { type: "fill_constant" outputs { parameter: "Out" arguments: "lr" }
        attrs { name: "shape" type: INTS ints: 1 } attrs { name: "value" type: FLOAT f: 0.5 } }
  ops { type: "sgd" inputs { parameter: "Param" arguments: "w" } inputs { parameter: "Grad" arguments: "w@GRAD" }
        inputs { parameter: "LearningRate" arguments: "lr" } outputs { parameter: "ParamOut" arguments: "w" } } })");
  WriteFile(dir + "/trainer_startup.pbtxt", R"(blocks { idx: 0 parent_idx: -1 vars { name: "w" persistable: true )" +
                                                kParam +
                                                R"( } ops { type: "recv_mpi" outputs { parameter: "Out" arguments: "w" }
        attrs { name: "epmap" type: STRINGS strings: ")" +
                                                endpoint + R"(" } } })");
  WriteFile(dir + "/trainer.pbtxt", R"(blocks { idx: 0 parent_idx: -1
  vars { name: "w" persistable: true )" +
                                        kParam + R"( }
  vars { name: "w@GRAD" )" + kParam + " }\n" +
                                        trainer_ops + " }");
}

// The trainer's gradient: ones, then sent for w (4 steps of sgd at lr 0.5 take w from 1 to -1).
std::string GradientStep(const std::string& endpoint, const std::string& between = "") {
  return R"(ops { type: "fill_constant" outputs { parameter: "Out" arguments: "w@GRAD" } )" + kFillOnes + " }\n" +
         between +
         R"(ops { type: "send_mpi" inputs { parameter: "X" arguments: "w@GRAD" } outputs { parameter: "Out" arguments: "w" }
        attrs { name: "epmap" type: STRINGS strings: ")" +
         endpoint + R"(" } })";
}

// How many of the 256x256 values of the saved w are not -1.
int NotMinusOne(const std::string& npy_path) {
  const std::string npy = Read(npy_path);
  if (npy.size() < 256u * 256u * 4u) return -1;
  const float* w = reinterpret_cast<const float*>(npy.data() + npy.size() - 256 * 256 * 4);
  int wrong = 0;
  for (int i = 0; i < 256 * 256; ++i) wrong += w[i] != -1.0f;
  return wrong;
}

TEST_F(DistMpi, ALargeParameterTravelsByMpiBothWays) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  const std::string dir = TempPath("mpi_large");
  WriteOneParameterCluster(dir, endpoint, GradientStep(endpoint));
  for (const std::string requests : {"mpi", "grpc"}) {
    RillProcess job(Job({{RILL_EXE, "run", dir + "/pserver.pbtxt", "--startup", dir + "/pserver_startup.pbtxt"},
                         {RILL_EXE, "run", dir + "/trainer.pbtxt", "--startup", dir + "/trainer_startup.pbtxt",
                          "--iterations", "4", "--save", dir + "/" + requests, "--fetch", "w"}},
                        "30000", "RILL_MPI_REQUESTS=" + requests));
    const CommandResult r = job.Wait(seconds(60));
    ASSERT_FALSE(r.timed_out) << requests << ": " << r.err;
    ASSERT_EQ(r.exit_code, 0) << requests << ": " << r.err;
    EXPECT_EQ(NotMinusOne(dir + "/" + requests + "/w.npy"), 0) << requests;
  }
}

// Debian's Open MPI is not CUDA-aware, so a tensor on a device goes through host memory:
// the device's page-locked memory (ABI v5), on a device that needs no GPU (the fake_device
// fixture). The trainer moves w and its gradient onto the device every step; send_mpi
// then sends the gradient from page-locked memory and receives w into it, and the same two
// blocks serve every step.
TEST_F(DistMpi, DeviceTensorsTravelFromAndIntoPageLockedMemory) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  const std::string dir = TempPath("mpi_staged");
  const std::string on_device = R"(
  ops { type: "scale" inputs { parameter: "X" arguments: "w@GRAD" } outputs { parameter: "Out" arguments: "w@GRAD" } }
  ops { type: "scale" inputs { parameter: "X" arguments: "w" } outputs { parameter: "Out" arguments: "w" } }
)";
  WriteOneParameterCluster(dir, endpoint, GradientStep(endpoint, on_device) + R"(
  ops { type: "fake_page_locked" inputs { parameter: "X" arguments: "w@GRAD" arguments: "w" } outputs { parameter: "Out" arguments: "locked" } }
  ops { type: "fake_device_stats" outputs { parameter: "Out" arguments: "stats" } })");
  RillProcess job(
      Job({{RILL_EXE, "run", dir + "/pserver.pbtxt", "--startup", dir + "/pserver_startup.pbtxt"},
           {RILL_EXE, "run", dir + "/trainer.pbtxt", "--startup", dir + "/trainer_startup.pbtxt", "--plugin",
            std::string(RILL_FIXTURE_DIR) + "/fake_device/librill_fake_device.so", "--device", "fake:0", "--iterations",
            "4", "--save", dir + "/out", "--fetch", "w", "--fetch", "locked", "--fetch", "stats"}},
          "30000"));
  const CommandResult r = job.Wait(seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(NotMinusOne(dir + "/out/w.npy"), 0);
  const size_t after_w = r.out.find("\nlocked");  // w's 65,536 values come first
  ASSERT_NE(after_w, std::string::npos) << r.out.substr(r.out.size() - std::min<size_t>(r.out.size(), 300));
  const std::string tail = r.out.substr(after_w);
  EXPECT_NE(tail.find("locked int32 [2] 1 1\n"), std::string::npos) << tail;
  // Device allocations and frees, host->device and device->host copies, page-locked
  // allocations and frees: every step moves both tensors to the device and back (w comes
  // back by being received over), and the 2 page-locked blocks of the first step serve all.
  EXPECT_NE(tail.find("stats int64 [6] 8 8 8 4 2 0\n"), std::string::npos) << tail;
}

// Both ways a large gradient's request can travel (256 KiB: by the data path, not in the
// step): pushed over MPI (the default) and as a gRPC call.
TEST_F(DistMpi, ARefusedGradientIsAnErrorNamingIt) {
  const int port = FreeLoopbackPort();
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  const std::string dir = Transpile("mpi", endpoint);  // one pserver holds w and b
  const std::string bad = dir + "/bad_trainer.pbtxt";
  WriteFile(bad, R"(blocks { idx: 0 parent_idx: -1
  vars { name: "g" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 65536 } } } }
  ops { type: "fill_constant" outputs { parameter: "Out" arguments: "g" }
        attrs { name: "shape" type: INTS ints: 65536 } attrs { name: "value" type: FLOAT f: 1 } }
  ops { type: "send_mpi" inputs { parameter: "X" arguments: "g" }
        attrs { name: "epmap" type: STRINGS strings: ")" +
                     endpoint + R"(" } }
})");
  for (const std::string requests : {"mpi", "grpc"}) {
    RillProcess job(Job({Pserver(dir, 0), {RILL_EXE, "run", bad}}, "10000", "RILL_MPI_REQUESTS=" + requests));
    const CommandResult r = job.Wait(seconds(40));
    ASSERT_FALSE(r.timed_out) << requests << ": the job still runs; stderr so far: " << r.err;
    EXPECT_NE(r.exit_code, 0) << requests;
    EXPECT_NE(r.err.find("pserver " + endpoint +
                         ": SendVariable 'g': unknown variable 'g'; this pserver takes the "
                         "gradients w@GRAD, b@GRAD"),
              std::string::npos)
        << requests << ": " << r.err;
  }
}

TEST_F(DistMpi, OutsideMpirunATrainerSaysWhereItsPserversAre) {
  const std::string dir = Transpile("mpi");
  const CommandResult r = RunRill({"run", dir + "/trainer_startup.pbtxt"}, "RILL_RPC_DEADLINE_MS=2000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no rank of this MPI job serves 127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run every pserver and trainer under one mpirun"), std::string::npos) << r.err;
}

TEST_F(DistMpi, WithoutThePluginAProgramFailsValidationNamingIt) {
  const std::string dir = Transpile("mpi");
  const CommandResult r = RunRill({"check", dir + "/trainer.pbtxt", "--plugins", "core,math,dist_grpc"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("op 'send_mpi' is provided by plugin 'dist_mpi', which is not enabled"), std::string::npos)
      << r.err;
}

TEST_F(DistMpi, LaunchRefusesAClusterTranspiledForTheOtherTransport) {
  const std::string dir = Transpile("grpc");
  const CommandResult r = RunRill({"launch", dir, "--transport", "mpi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("was transpiled for grpc (cluster.txt), not mpi"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rill::test
