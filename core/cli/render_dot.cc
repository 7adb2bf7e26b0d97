#include "core/cli/render_dot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/errors.h"
#include "core/io/atomic_file.h"

extern char** environ;

namespace rill::core {
namespace {

void WriteText(const std::string& text, const std::string& path) {
  WriteFileAtomically(path, [&](std::ostream& out) { out << text; });
}

// A file of its own under the temporary directory, removed when this goes.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/rill-graph-XXXXXX";
    const int fd = mkstemp(path_.data());
    if (fd < 0) throw Error("cannot make a temporary file in " + path_ + ": " + std::strerror(errno), RILL_UNAVAILABLE);
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void WriteGraph(const std::string& dot, const std::string& path) {
  std::string format = std::filesystem::path(path).extension().string();
  if (!format.empty()) format.erase(0, 1);
  if (format == "dot" || format == "gv") return WriteText(dot, path);
  if (format.empty()) {
    throw Error("'" + path + "' has no extension to tell the picture's format by (.svg, .png, .pdf, or .dot for "
                "the graph as text)");
  }
  TempFile text;
  WriteText(dot, text.path());
  const std::string type = "-T" + format;
  std::vector<char*> argv = {const_cast<char*>("dot"), const_cast<char*>(type.c_str()), const_cast<char*>("-o"),
                             const_cast<char*>(path.c_str()), const_cast<char*>(text.path().c_str()), nullptr};
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  if (err == ENOENT) {
    throw Error("rendering '" + path + "' needs Graphviz's `dot` on PATH (Debian: apt-get install graphviz); "
                "a .dot file needs none", RILL_NOT_FOUND);
  }
  if (err != 0) throw Error("cannot start Graphviz's `dot`: " + std::string(std::strerror(err)), RILL_UNAVAILABLE);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error("Graphviz's `dot " + type + "` failed writing '" + path + "' (exit status " +
                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                "; its message is above)", RILL_UNAVAILABLE);
  }
}

}  // namespace rill::core
