#include "core/program/render_dot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/errors.h"
#include "core/io/atomic_file.h"

extern char** environ;

namespace rill::core {
namespace {

// A file in memory (memfd): it has no name in any directory, so it cannot be left behind.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name) : fd_(memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) throw Error(std::string("cannot make an in-memory file: ") + std::strerror(errno), RILL_UNAVAILABLE);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  int fd() const { return fd_; }

  void Write(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(std::string("writing an in-memory file: ") + std::strerror(errno), RILL_UNAVAILABLE);
      done += static_cast<size_t>(n);
    }
    lseek(fd_, 0, SEEK_SET);
  }
  std::string Read() const {
    std::string out;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      const ssize_t n = pread(fd_, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
  }

 private:
  int fd_;
};

// The node count of the `// rill graph: N nodes` first line, or 0 without one.
size_t NodesOf(const std::string& dot) {
  static const std::string kPrefix = "// rill graph: ";
  if (dot.compare(0, kPrefix.size(), kPrefix) != 0) return 0;
  return std::strtoull(dot.c_str() + kPrefix.size(), nullptr, 10);
}

int DeadlineSeconds() {
  const char* env = std::getenv("RILL_GRAPH_DEADLINE_S");
  if (env == nullptr || *env == '\0') return 60;
  char* end = nullptr;
  const long s = std::strtol(env, &end, 10);
  if (*end != '\0' || s < 1 || s > 86400) {
    throw Error(std::string("RILL_GRAPH_DEADLINE_S is a whole number of seconds in 1..86400, got '") + env + "'",
                RILL_INVALID_ARGUMENT);
  }
  return static_cast<int>(s);
}

void Reap(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
}

// Waits for `pid` to end within `seconds`; true with its wait status, or false (it still
// runs) when the deadline passed. A pidfd makes the wait one poll; where the kernel has
// none, the wait has no deadline.
bool WaitWithin(pid_t pid, int seconds, int* status) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int ready;
    while ((ready = poll(&p, 1, seconds * 1000)) < 0 && errno == EINTR) {}
    close(pidfd);
    if (ready == 0) return false;
  }
  Reap(pid, status);
  return true;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

void WriteGraph(const std::string& dot, const std::string& path) {
  std::string format = std::filesystem::path(path).extension().string();
  if (!format.empty()) format.erase(0, 1);
  if (format == "dot" || format == "gv") {
    return WriteFileAtomically(path, [&](std::ostream& out) { out << dot; });
  }
  if (format.empty()) {
    throw Error("'" + path +
                "' has no extension to tell the picture's format by (.svg, .png, .pdf, or .dot for "
                "the graph as text)");
  }
  const std::string instead =
      "draw one block (rill graph --block N; Program.to_graphviz(block=N)) or write the "
      "graph as text (-o FILE.dot)";
  const size_t nodes = NodesOf(dot);
  if (nodes > kGraphNodeBudget) {
    throw Error("'" + path + "': the graph has " + std::to_string(nodes) + " nodes, more than Graphviz lays out " +
                    "in reasonable time (a picture takes at most " + std::to_string(kGraphNodeBudget) + "); " + instead,
                RILL_RESOURCE_EXHAUSTED);
  }
  const int deadline = DeadlineSeconds();
  MemoryFile input("rill-graph-input"), picture("rill-graph-picture"), messages("rill-graph-messages");
  input.Write(dot);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.fd(), 0);
  posix_spawn_file_actions_adddup2(&actions, picture.fd(), 1);
  posix_spawn_file_actions_adddup2(&actions, messages.fd(), 2);
  const std::string type = "-T" + format;
  std::vector<char*> argv = {const_cast<char*>("dot"), const_cast<char*>(type.c_str()), nullptr};
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err == ENOENT) {
    throw Error("rendering '" + path +
                    "' needs Graphviz's `dot` on PATH (Debian: apt-get install graphviz); "
                    "a .dot file needs none",
                RILL_NOT_FOUND);
  }
  if (err != 0) throw Error("cannot start Graphviz's `dot`: " + std::string(std::strerror(err)), RILL_UNAVAILABLE);
  int status = 0;
  if (!WaitWithin(pid, deadline, &status)) {
    kill(pid, SIGKILL);
    Reap(pid, &status);
    throw Error("Graphviz's `dot " + type + "` did not lay out '" + path + "' (" + std::to_string(nodes) +
                    " nodes) within " + std::to_string(deadline) + " s (RILL_GRAPH_DEADLINE_S) and was stopped; " +
                    instead,
                RILL_DEADLINE_EXCEEDED);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string said = Trimmed(messages.Read());
    const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                      strsignal(WTERMSIG(status)) + ")"
                                                : "failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    throw Error("Graphviz's `dot " + type + "` " + how + " rendering '" + path + "'; " +
                    (said.empty() ? std::string("it printed nothing") : "it printed: " + said),
                RILL_UNAVAILABLE);
  }
  const std::string rendered = picture.Read();
  WriteFileAtomically(path, [&](std::ostream& out) { out << rendered; });
}

}  // namespace rill::core
