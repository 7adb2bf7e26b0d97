// tests/test_util.h — helpers shared by the test files: loading the shipped plugins,
// running the `rill` binary, temporary files.
#ifndef RILL_TESTS_TEST_UTIL_H_
#define RILL_TESTS_TEST_UTIL_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/registry/registry.h"

namespace rill::test {

// A registry with the built-in ops and the shipped plugins of this build tree.
core::Registry& ShippedRegistry();

// Whether this build ships the CUDA plugin (math_cuda) and the transports (dist_grpc, dist_mpi),
// and what that changes in messages: the loaded-plugin list, and the CUDA kernels listed
// after the CPU ones.
inline constexpr bool kWithCuda = RILL_TEST_WITH_CUDA;
inline constexpr bool kWithDistGrpc = RILL_TEST_WITH_DIST_GRPC;
inline constexpr bool kWithDistMpi = RILL_TEST_WITH_DIST_MPI;
inline std::string LoadedPlugins() {
  return std::string("core, csp") + (kWithDistGrpc ? ", dist_grpc" : "") + (kWithDistMpi ? ", dist_mpi" : "") +
         ", math" + (kWithCuda ? ", math_cuda" : "");
}
inline std::string WithCudaKernels(const std::string& cpu_kernels) {
  return kWithCuda ? cpu_kernels + ", CUDA/fp32, CUDA/fp64" : cpu_kernels;
}

struct CommandResult {
  int exit_code = -1;  // -1 with `signal` set if the process died of a signal
  int signal = 0;
  std::string out, err;
  bool timed_out = false;  // RillProcess::Wait gave up; the process still runs
};
// Runs the `rill` binary of this build with `args`, capturing its output.
CommandResult RunRill(const std::vector<std::string>& args, const std::string& env = "");

// `rill status ARGS... --deadline-ms 2000` (the pservers' reports) until `done` holds for a
// successful one's output, at most 60 tries; returns the last result.
CommandResult StatusUntil(const std::vector<std::string>& args, const std::function<bool(const std::string&)>& done,
                          const std::string& env = "");
// The same, until the output contains `text`.
CommandResult StatusUntil(const std::vector<std::string>& args, const std::string& text, const std::string& env = "");
// Whether a `rill status --json` output says pserver(s) heard from `trainer` (it is training
// or at a barrier): `count` of them do.
bool PserversHeardFrom(const std::string& json, int trainer, int count = 1);

// `rill args` started in the background; killed (SIGKILL) when destroyed if still running.
class RillProcess {
 public:
  explicit RillProcess(const std::vector<std::string>& args, const std::string& env = "");
  // Any program instead of `rill` (argv[0] looked up on PATH), e.g. mpirun.
  struct Command {
    std::vector<std::string> argv;
  };
  RillProcess(const Command& command, const std::string& env = "");
  ~RillProcess();
  RillProcess(const RillProcess&) = delete;
  RillProcess& operator=(const RillProcess&) = delete;
  void Kill(int sig);
  // The result once it exited, or timed_out after `timeout`.
  CommandResult Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::string out_path_;
};

// fit_a_line's data (DIR/data/x.npy, y.npy) and training program with SGD
// (DIR/train.pbtxt), made by `rill`; "" or what failed.
std::string MakeFitALineTraining(const std::string& dir);

// A loopback TCP port that was free a moment ago, from outside the ephemeral range (no
// automatic bind by another process can take it meanwhile); -1 if none is found.
int FreeLoopbackPort();

// Waits until `done()` holds, yielding the thread meanwhile (done is asked again at once);
// false if it still does not after `limit`.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(10));

// A fresh file path under the test's temporary directory.
std::string TempPath(const std::string& name);
void WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);  // "" if it cannot be read

}  // namespace rill::test

#endif  // RILL_TESTS_TEST_UTIL_H_
