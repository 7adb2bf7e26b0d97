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
