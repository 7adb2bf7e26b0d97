#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace rill::core {
namespace {

namespace fs = std::filesystem;

// A name in `path`'s directory that no other writer in this process or another uses: the
// process id and a per-process count, hidden (a leading dot) so listings skip it.
fs::path TemporaryFor(const fs::path& path) {
  static std::atomic<uint64_t> count{0};
  return path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(getpid()) + "-" +
                               std::to_string(count.fetch_add(1)));
}

// Flushes the file or directory at `path` to disk; false with errno set on failure.
bool Sync(const fs::path& path, int flags) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = fsync(fd) == 0;
  const int saved = errno;
  close(fd);
  errno = saved;
  return ok;
}

[[noreturn]] void Fail(const std::string& what, const fs::path& path, int error) {
  throw Error(what + " '" + path.string() + "': " + std::strerror(error), RILL_UNAVAILABLE);
}

}  // namespace

void WriteFileAtomically(const std::string& path_string, const std::function<void(std::ostream&)>& fill) {
  const fs::path path(path_string);
  if (path.filename().empty())
    throw Error("'" + path_string + "' names a directory, not a file", RILL_INVALID_ARGUMENT);
  const fs::path temporary = TemporaryFor(path);
  struct RemoveUnlessRenamed {
    const fs::path& file;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      std::error_code ignored;
      if (!renamed) fs::remove(file, ignored);
    }
  } cleanup{temporary};
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) Fail("cannot write", path, errno);
    fill(out);
    out.flush();
    if (!out) Fail("writing", path, errno);
    out.close();
    if (!out) Fail("writing", path, errno);
  }
  if (!Sync(temporary, O_RDONLY)) Fail("flushing", path, errno);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) Fail("replacing", path, errno);
  cleanup.renamed = true;
  // The rename is durable once the directory is; a failure here leaves the new file in
  // place, so it is not reported as the write's.
  Sync(path.parent_path().empty() ? fs::path(".") : path.parent_path(), O_RDONLY | O_DIRECTORY);
}

}  // namespace rill::core
