#include "core/program/program_io.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/io/atomic_file.h"

namespace rill::core {

namespace {

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) {
      first_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// Blanks `//` comments outside strings (Fluid's design docs annotate programs with them;
// protobuf text format only knows `#`). Blanking keeps line and column numbers.
std::string BlankSlashComments(const std::string& text) {
  std::string out = text;
  bool in_string = false;
  char quote = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == quote || c == '\n') in_string = false;
    } else if (c == '"' || c == '\'') {
      in_string = true;
      quote = c;
    } else if (c == '#') {
      while (i < out.size() && out[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '/') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    }
  }
  return out;
}

// Text programs are printable; serialized ones almost never are (field tags are < 0x20).
bool LooksLikeText(const std::string& data) {
  for (unsigned char c : data) {
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

}  // namespace

namespace {

void ParseTextInto(const std::string& text, const std::string& source, proto::ProgramDesc* program) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(BlankSlashComments(text), program)) {
    throw Error(source + ": not a valid text program: " + (errors.first().empty() ? "parse error" : errors.first()));
  }
}

void ParseBinaryInto(const std::string& bytes, const std::string& source, proto::ProgramDesc* program) {
  if (!program->ParseFromString(bytes)) throw Error(source + ": not a valid serialized ProgramDesc");
}

// The program file at `path`, parsed into `program`. The file is read once, at its size:
// a program is tens of megabytes.
void LoadProgramInto(const std::string& path, proto::ProgramDesc* program) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open program '" + path + "'", RILL_NOT_FOUND);
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error("cannot read program '" + path + "'", RILL_NOT_FOUND);
  std::string data(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(data.data(), size)) throw Error("cannot read program '" + path + "'", RILL_NOT_FOUND);
  if (data.empty()) throw Error(path + ": empty file is not a program");
  if (LooksLikeText(data)) {
    ParseTextInto(data, path, program);
  } else {
    ParseBinaryInto(data, path, program);
  }
}

}  // namespace

proto::ProgramDesc ParseProgramText(const std::string& text, const std::string& source) {
  proto::ProgramDesc program;
  ParseTextInto(text, source, &program);
  return program;
}

proto::ProgramDesc ParseProgramBinary(const std::string& bytes, const std::string& source) {
  proto::ProgramDesc program;
  ParseBinaryInto(bytes, source, &program);
  return program;
}

proto::ProgramDesc LoadProgram(const std::string& path) {
  proto::ProgramDesc program;
  LoadProgramInto(path, &program);
  return program;
}

std::shared_ptr<const Program> ReadProgram(const std::string& path) {
  // Text or binary, told from the first bytes: a serialized program's field tags (below
  // 0x20) come at once; a text one has none anywhere.
  if (std::filesystem::is_directory(path)) {
    throw Error("'" + path +
                    "' is a directory with no program in it: a model directory holds __model__ "
                    "or one PREFIX.pdmodel with its PREFIX.pdiparams",
                RILL_NOT_FOUND);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open program '" + path + "'", RILL_NOT_FOUND);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.empty()) throw Error(path + ": empty file is not a program");
  if (!LooksLikeText(head)) return Program::ParseFile(path);
  proto::ProgramDesc program;
  LoadProgramInto(path, &program);
  return Program::FromProto(program);
}

std::string ProgramToText(const proto::ProgramDesc& program) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(program, &text);
  return text;
}

void SaveProgram(const proto::ProgramDesc& program, const std::string& path, ProgramFormat format) {
  WriteFileAtomically(path, [&](std::ostream& out) {
    if (format == ProgramFormat::kText) {
      out << ProgramToText(program);
    } else if (!program.SerializeToOstream(&out) && out.good()) {  // a failed write is reported as one
      throw Error("cannot serialize program to '" + path + "'", RILL_INTERNAL);
    }
  });
}

ProgramFormat FormatForPath(const std::string& path) {
  for (const char* ext : {".pbtxt", ".prototxt", ".txt"}) {
    const std::string e(ext);
    if (path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) {
      return ProgramFormat::kText;
    }
  }
  return ProgramFormat::kBinary;
}

}  // namespace rill::core
