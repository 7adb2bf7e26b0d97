// core/program/program_io.h — reading and writing ProgramDesc files.
//
// Text (protobuf text format, as in Fluid's docs; `#` and `//` comments allowed) and
// binary (Fluid's serialized ProgramDesc) both load; the format is told from the content,
// not the file name. Errors name the file and, for text, the line and column.
#ifndef RILL_CORE_PROGRAM_PROGRAM_IO_H_
#define RILL_CORE_PROGRAM_PROGRAM_IO_H_

#include <memory>
#include <string>

#include "core/program/program.h"
#include "core/proto/framework.pb.h"

namespace rill::core {

enum class ProgramFormat { kText, kBinary };

// For editing (convert, backward, transpile): the program as protobuf messages.
proto::ProgramDesc LoadProgram(const std::string& path);
// For checking and running: the program in Rill's compact form (program.h). A binary file
// is read as it is decoded, never whole in memory.
std::shared_ptr<const Program> ReadProgram(const std::string& path);
// `source` names the input in error messages.
proto::ProgramDesc ParseProgramText(const std::string& text, const std::string& source = "<text>");
proto::ProgramDesc ParseProgramBinary(const std::string& bytes, const std::string& source = "<binary>");
void SaveProgram(const proto::ProgramDesc& program, const std::string& path, ProgramFormat format);
std::string ProgramToText(const proto::ProgramDesc& program);
// kText for names ending .pbtxt, .prototxt or .txt; otherwise kBinary.
ProgramFormat FormatForPath(const std::string& path);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_PROGRAM_IO_H_
