#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/loader/plugin_loader.h"

namespace rill::test {

core::Registry& ShippedRegistry() {
  static core::Registry* registry = [] {
    auto* r = new core::Registry();
    core::LoadOptions options;
    options.dirs = {RILL_PLUGIN_DIR};
    core::LoadPlugins(*r, options);
    return r;
  }();
  return *registry;
}

std::string TempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("rill_tests_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

namespace {
std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

CommandResult RunRill(const std::vector<std::string>& args, const std::string& env) {
  static int counter = 0;
  const std::string out_path = TempPath("out" + std::to_string(++counter));
  const std::string err_path = out_path + ".err";
  std::string cmd = "env -u RILL_PLUGIN_PATH " + env + " " + Quote(RILL_EXE);
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " >" + Quote(out_path) + " 2>" + Quote(err_path);
  const int status = std::system(cmd.c_str());
  CommandResult r;
  // `sh -c` reports a child killed by signal N as exit status 128 + N.
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (r.exit_code > 128) r.signal = r.exit_code - 128;
  r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

}  // namespace rill::test
