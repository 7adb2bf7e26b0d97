#include "test_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

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

namespace {

// This process's own directory, made fresh: named by pid, it was reused by a later process
// with the same pid, whose test then failed on a file the earlier one had left. Removed at
// exit when every test passed; kept for a look when one failed.
const std::filesystem::path& TestDirectory() {
  static const struct Directory {
    std::filesystem::path path;
    Directory() {
      std::string name = (std::filesystem::temp_directory_path() / "rill_tests_XXXXXX").string();
      if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + name);
      path = name;
    }
    ~Directory() {
      std::error_code ignored;
      if (testing::UnitTest::GetInstance()->Passed()) std::filesystem::remove_all(path, ignored);
    }
  } directory;
  return directory.path;
}

}  // namespace

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

std::string TempPath(const std::string& name) { return (TestDirectory() / name).string(); }

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A shell command running `argv` with its output in files out_path and out_path.err.
std::string ShellCommand(const std::vector<std::string>& argv, const std::string& env, std::string* out_path) {
  static std::atomic<int> counter{0};
  *out_path = TempPath("out" + std::to_string(++counter));
  std::string cmd = "exec env -u RILL_PLUGIN_PATH " + env;
  for (const auto& a : argv) cmd += " " + Quote(a);
  return cmd + " >" + Quote(*out_path) + " 2>" + Quote(*out_path + ".err");
}

std::vector<std::string> RillArgv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {RILL_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

CommandResult Collect(int status, const std::string& out_path) {
  CommandResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  // `sh -c` reports a child killed by signal N as exit status 128 + N.
  if (r.exit_code > 128) r.signal = r.exit_code - 128;
  r.out = ReadFile(out_path);
  r.err = ReadFile(out_path + ".err");
  return r;
}
}  // namespace

CommandResult RunRill(const std::vector<std::string>& args, const std::string& env) {
  std::string out_path;
  const int status = std::system(ShellCommand(RillArgv(args), env, &out_path).c_str());
  return Collect(status, out_path);
}

CommandResult StatusUntil(const std::vector<std::string>& args, const std::function<bool(const std::string&)>& done,
                          const std::string& env) {
  std::vector<std::string> status = {"status"};
  status.insert(status.end(), args.begin(), args.end());
  status.insert(status.end(), {"--deadline-ms", "2000"});
  CommandResult r;
  for (int attempt = 0; attempt < 60; ++attempt) {
    r = RunRill(status, env);
    if (r.exit_code == 0 && done(r.out)) break;
  }
  return r;
}

CommandResult StatusUntil(const std::vector<std::string>& args, const std::string& text, const std::string& env) {
  return StatusUntil(
      args, [&](const std::string& out) { return out.find(text) != std::string::npos; }, env);
}

bool PserversHeardFrom(const std::string& json, int trainer, int count) {
  int heard = 0;
  for (const char* state : {"TRAINING", "AT_BARRIER"}) {
    const std::string mark = "{\"trainer_id\":" + std::to_string(trainer) + ",\"state\":\"" + state + "\"";
    for (size_t at = json.find(mark); at != std::string::npos; at = json.find(mark, at + 1)) ++heard;
  }
  return heard >= count;
}

RillProcess::RillProcess(const std::vector<std::string>& args, const std::string& env)
    : RillProcess(Command{RillArgv(args)}, env) {}

RillProcess::RillProcess(const Command& command, const std::string& env) {
  const std::string cmd = ShellCommand(command.argv, env, &out_path_);
  pid_ = fork();
  if (pid_ == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

RillProcess::~RillProcess() {
  if (pid_ > 0) {
    Kill(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

void RillProcess::Kill(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

CommandResult RillProcess::Wait(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (pid_ > 0) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Collect(status, out_path_);
    }
    if (std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CommandResult r;
  r.timed_out = true;
  r.out = ReadFile(out_path_);
  r.err = ReadFile(out_path_ + ".err");
  return r;
}

namespace {

// Whether nothing on this host holds loopback `port` now (0: any port; *port gets it).
bool BindsLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (ok) *port = ntohs(addr.sin_port);
  return ok;
}

}  // namespace

// Taken from below the kernel's ephemeral range: a port from that range, once released,
// may be handed to any process's next outgoing connection or port-0 bind before the
// test's server binds it (Open MPI's own sockets took one in CI). Random, so that tests
// running at once rarely pick the same one.
int FreeLoopbackPort() {
  int ephemeral_low = 32768, ephemeral_high = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low >> ephemeral_high;
  constexpr int kLowest = 20000;
  if (ephemeral_low - kLowest >= 1000) {
    static std::mt19937 rng(static_cast<unsigned>(getpid()) * 2654435761u ^
                            static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::uniform_int_distribution<int> pick(kLowest, ephemeral_low - 1);
    for (int tries = 0; tries < 100; ++tries) {
      int port = pick(rng);
      if (BindsLoopback(&port)) return port;
    }
  }
  int port = 0;  // no room below the ephemeral range: let the kernel choose
  return BindsLoopback(&port) ? port : -1;
}

std::string MakeFitALineTraining(const std::string& dir) {
  const std::string fit_a_line = std::string(RILL_SOURCE_DIR) + "/examples/fit_a_line/";
  std::filesystem::create_directories(dir);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", fit_a_line + "data.pbtxt", "--fetch", "x", "--fetch", "y", "--save", dir + "/data"},
           {"backward", fit_a_line + "model.pbtxt", "--loss", "avg_cost", "--sgd", "0.1", "-o",
            dir + "/train.pbtxt"}}) {
    const CommandResult r = RunRill(args);
    if (r.exit_code != 0) return "rill " + args[0] + ": " + r.err;
  }
  return "";
}

}  // namespace rill::test
