#include "core/io/inference_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/errors.h"
#include "core/io/lod_tensor_file.h"
#include "core/program/feed_check.h"
#include "core/program/program_io.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Block 0's persistable variables but the feed and fetch lists, in name order.
std::vector<std::string> ParameterNames(const Program& program) {
  std::vector<std::string> names;
  if (program.blocks_size() == 0) return names;
  for (const ProgramVar& v : program.vars(program.block(0))) {
    if (v.persistable && v.type != proto::VarType::FEED_MINIBATCH && v.type != proto::VarType::FETCH_LIST) {
      names.emplace_back(program.str(v.name));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Whether `target` lies inside `dir` once `..` and symlinks are resolved.
bool Inside(const fs::path& dir, const fs::path& target) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  const fs::path full = fs::weakly_canonical(target, ec);
  if (ec) return false;
  auto f = full.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++f) {
    if (r->empty()) continue;  // the trailing "" of a path ending in '/'
    if (f == full.end() || *r != *f) return false;
  }
  return true;
}

// "a FIFO", "a directory", ...: what a path that should be a regular file is instead.
std::string KindOf(const fs::path& path) {
  std::error_code ec;
  switch (fs::status(path, ec).type()) {
    case fs::file_type::not_found: return "missing";
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    case fs::file_type::regular: return "a regular file";
    default: return "not a regular file";
  }
}

// Refuses, naming it, a file to read that is not a regular file (after symlinks): opening
// a FIFO would wait for a writer forever.
void CheckRegularFile(const fs::path& path, const std::string& what) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return;
  const std::string kind = KindOf(path);
  if (kind == "missing") throw Error("cannot open " + what + " '" + path.string() + "'", RILL_NOT_FOUND);
  throw Error(what + " '" + path.string() + "' is " + kind + ", not a regular file", RILL_INVALID_ARGUMENT);
}

// What the model policy (inference_model.h) refuses in `program`, loaded from `dir`: ops
// that write files, files read from outside `dir` (by load ops, and, when the parameters
// are one file per parameter, by parameter names).
std::vector<std::string> FileAccessProblems(const Program& program, const fs::path& dir, bool per_parameter_files) {
  std::vector<std::string> problems;
  for (const FileOp& f : FileOps(program)) {
    const std::string op = "op " + std::to_string(f.op) + " of block " + std::to_string(f.block) + " (" + f.type +
                           ", file_path '" + f.path + "')";
    std::error_code ec;
    if (f.writes) {
      problems.push_back(op + " writes a file: an inference model may not write files");
    } else if (!Inside(dir, fs::absolute(f.path, ec))) {
      problems.push_back(op + " reads outside the model directory '" + dir.string() + "'");
    }
  }
  if (per_parameter_files) {
    for (const auto& name : ParameterNames(program)) {
      if (!Inside(dir, dir / name)) {
        problems.push_back("parameter '" + name + "' names a file outside the model directory '" + dir.string() + "'");
      }
    }
  }
  return problems;
}

// The record of parameter `name` must hold what the program declares for it: its dtype,
// and dims by CheckFeed's rule (DimsFitDeclared).
void CheckDeclared(const Program& program, const std::string& name, const LodTensorHeader& header,
                   const std::string& what) {
  const ProgramVar* v = program.FindVar(0, name);
  if (v == nullptr || !v->has_tensor) return;
  const auto range = program.dims(*v);
  const std::vector<int64_t> dims(range.begin(), range.end());
  if ((v->data_type < 0 || v->data_type == header.dtype) && DimsFitDeclared(dims, header.dims)) return;
  throw Error(what + ": the file holds " + DataTypeName(header.dtype) + " " +
                  ShapeString(header.dims.data(), header.dims.size()) + ", the program declares " +
                  (v->data_type < 0 ? std::string("any dtype") : DataTypeName(v->data_type)) + " " +
                  ShapeString(dims.data(), dims.size()),
              RILL_INVALID_ARGUMENT);
}

// Where a parameter's record lies: its file, its header, and where its data starts.
struct PlacedRecord {
  std::string name;
  fs::path file;
  std::string what;  // the file and parameter, for messages
  LodTensorHeader header;
  std::streamoff data_at = 0;
};

// Reads the headers of the records of `names` from `file`, which must be a regular file
// holding exactly one record per name, each as `program` declares it (`whose`: who they
// are, for the message when it holds more), onto `placed`. `what` names the file in the
// message when it cannot be opened.
void ReadHeaders(const Program& program, const fs::path& file, const std::vector<std::string>& names,
                 const std::string& what, const std::string& whose, std::vector<PlacedRecord>* placed) {
  CheckRegularFile(file, what);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " '" + file.string() + "'", RILL_NOT_FOUND);
  for (const auto& name : names) {
    PlacedRecord r{name, file, "'" + file.string() + "' (parameter '" + name + "')", {}, 0};
    r.header = ReadLodTensorHeader(in, r.what);  // checks that the data is there
    CheckDeclared(program, name, r.header, r.what);
    r.data_at = in.tellg();
    in.seekg(static_cast<std::streamoff>(r.header.bytes), std::ios::cur);
    placed->push_back(std::move(r));
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    throw Error("'" + file.string() + "' holds more than " + whose, RILL_INVALID_ARGUMENT);
  }
}

// Every parameter's data, read into one allocation (Tensor::AllocateTogether): a model's
// parameters live and go together, and one large allocation fills at the speed of huge
// pages where many small ones would fault in page by page.
std::vector<std::pair<std::string, Tensor>> ReadData(std::vector<PlacedRecord>& placed) {
  std::vector<std::pair<int32_t, std::vector<int64_t>>> shapes;
  for (const auto& r : placed) shapes.emplace_back(r.header.dtype, r.header.dims);
  std::vector<Tensor> tensors = Tensor::AllocateTogether(shapes);
  std::vector<std::pair<std::string, Tensor>> out;
  std::ifstream in;
  fs::path open;
  for (size_t k = 0; k < placed.size(); ++k) {
    PlacedRecord& r = placed[k];
    if (r.file != open) {
      in = std::ifstream(r.file, std::ios::binary);
      open = r.file;
      if (!in) throw Error("cannot open '" + r.file.string() + "'", RILL_NOT_FOUND);
    }
    in.seekg(r.data_at);
    ReadLodTensorData(in, r.header, tensors[k].data(), r.what);
    tensors[k].mutable_lod() = std::move(r.header.lod);
    out.emplace_back(r.name, std::move(tensors[k]));
  }
  return out;
}

}  // namespace

std::string ModelProgramFile(const std::string& path, const ModelFiles& files) {
  if (EndsWith(path, ".pdmodel")) return fs::is_regular_file(path) ? path : "";
  if (!fs::is_directory(path)) return "";
  const fs::path named = fs::path(path) / (files.model_filename.empty() ? "__model__" : files.model_filename);
  if (fs::is_regular_file(named) || !files.model_filename.empty()) {
    return fs::is_regular_file(named) ? named.string() : "";
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, ".pdmodel") && entry.is_regular_file()) found.push_back(entry.path().string());
  }
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + fs::path(f).filename().string();
    throw Error("'" + path + "' holds several programs (" + list + ") and no __model__: give the .pdmodel to load",
                RILL_INVALID_ARGUMENT);
  }
  return found.empty() ? "" : found.front();
}

bool IsInferenceModel(const std::string& path, const ModelFiles& files) {
  return !ModelProgramFile(path, files).empty();
}

InferenceModel LoadInferenceModel(const std::string& path, const ModelFiles& files) {
  fs::path model_file = ModelProgramFile(path, files), combined;
  if (model_file.empty()) {
    throw Error("'" + path + "' is not an inference model: no " +
                    (files.model_filename.empty() ? std::string("'__model__' or PREFIX.pdmodel")
                                                  : "'" + files.model_filename + "'") +
                    " in it",
                RILL_NOT_FOUND);
  }
  const bool prefix_form = EndsWith(model_file.string(), ".pdmodel") && files.model_filename.empty();
  if (prefix_form) {
    const std::string m = model_file.string();
    combined = m.substr(0, m.size() - 8) + ".pdiparams";
  } else if (!files.params_filename.empty()) {
    combined = fs::path(path) / files.params_filename;
  } else if (fs::exists(fs::path(path) / "__params__")) {
    combined = fs::path(path) / "__params__";
  }
  InferenceModel m;
  CheckRegularFile(model_file, "the model's program file");
  m.program = ReadProgram(model_file.string());
  const fs::path dir = prefix_form ? fs::absolute(model_file).parent_path() : fs::path(path);
  m.file_access = FileAccessProblems(*m.program, dir, combined.empty());
  if (!files.allow_files_outside && !m.file_access.empty()) {
    throw Error(m.file_access.front() +
                    " (rill run --allow-model-files, ModelFiles::allow_files_outside or "
                    "load_inference_model(..., allow_files_outside=True) allow it)",
                RILL_INVALID_ARGUMENT);
  }
  const std::vector<std::string> names = ParameterNames(*m.program);
  std::vector<PlacedRecord> placed;
  if (!combined.empty()) {
    ReadHeaders(*m.program, combined, names, "the parameter file",
                "the program's " + std::to_string(names.size()) + " parameters", &placed);
  } else {
    for (const auto& name : names) {
      ReadHeaders(*m.program, dir / name, {name}, "the file of parameter '" + name + "',", "parameter '" + name + "'",
                  &placed);
    }
  }
  m.parameters = ReadData(placed);
  return m;
}

std::vector<FileOp> FileOps(const Program& program) {
  std::vector<FileOp> found;
  for (int b = 0; b < program.blocks_size(); ++b) {
    int index = 0;
    for (const ProgramOp& op : program.ops(program.block(b))) {
      for (AttrId id : program.attrs(op)) {
        const ProgramAttr& attr = program.attr(id);
        if (program.str(attr.name) != "file_path" || attr.type != proto::STRING) continue;
        const std::string type(program.str(op.type));
        found.push_back({b, index, type, std::string(program.str(attr.s)), type != "load" && type != "load_combine"});
      }
      ++index;
    }
  }
  return found;
}

}  // namespace rill::core
