// core/io/atomic_file.h — writing a file so that whoever reads it sees its old contents or
// its new ones, never a part: a failed save must not cost the last good checkpoint.
//
// Contract: WriteFileAtomically(path, fill) calls fill(out) with a stream onto a new
// temporary file in path's directory (created with the permissions a new file at `path`
// would get). When fill returns and every byte is written, the temporary is flushed to
// disk (fsync), renamed over `path`, and the directory is flushed so that the rename
// survives a crash. When fill throws, or a write, fsync or rename fails, the temporary is
// removed, `path` is left as it was (absent, or its old contents), and the exception
// propagates (an Error naming the file and the system's reason when the failure was the
// write's). The directory must exist. Every writer of files the user keeps uses it: the
// save ops, the Python package's save functions, and rill's -o, --save and --profile.
#ifndef RILL_CORE_IO_ATOMIC_FILE_H_
#define RILL_CORE_IO_ATOMIC_FILE_H_

#include <functional>
#include <ostream>
#include <string>

namespace rill::core {

void WriteFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace rill::core

#endif  // RILL_CORE_IO_ATOMIC_FILE_H_
