// tests/test_util.h — helpers shared by the test files: loading the shipped plugins,
// running the `rill` binary, temporary files.
#ifndef RILL_TESTS_TEST_UTIL_H_
#define RILL_TESTS_TEST_UTIL_H_

#include <string>
#include <vector>

#include "core/registry/registry.h"

namespace rill::test {

// A registry with the built-in ops and the shipped plugins of this build tree.
core::Registry& ShippedRegistry();

// Whether this build ships the CUDA plugin (math_cuda), and what that changes in messages:
// the loaded-plugin list, and the CUDA kernels listed after the CPU ones.
inline constexpr bool kWithCuda = RILL_TEST_WITH_CUDA;
inline const char* LoadedPlugins() { return kWithCuda ? "core, csp, math, math_cuda" : "core, csp, math"; }
inline std::string WithCudaKernels(const std::string& cpu_kernels) {
  return kWithCuda ? cpu_kernels + ", CUDA/fp32, CUDA/fp64" : cpu_kernels;
}

struct CommandResult {
  int exit_code = -1;  // -1 with `signal` set if the process died of a signal
  int signal = 0;
  std::string out, err;
};
// Runs the `rill` binary of this build with `args`, capturing its output.
CommandResult RunRill(const std::vector<std::string>& args, const std::string& env = "");

// A fresh file path under the test's temporary directory.
std::string TempPath(const std::string& name);
void WriteFile(const std::string& path, const std::string& content);

}  // namespace rill::test

#endif  // RILL_TESTS_TEST_UTIL_H_
