#include "core/io/inference_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/errors.h"
#include "core/io/lod_tensor_file.h"
#include "core/program/program_io.h"

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

// Where a parameter's record lies: its file, its header, and where its data starts.
struct PlacedRecord {
  std::string name;
  fs::path file;
  std::string what;  // the file and parameter, for messages
  LodTensorHeader header;
  std::streamoff data_at = 0;
};

// Reads the headers of the records of `names` from `file`, which must hold exactly one
// record per name (`whose`: who they are, for the message when it holds more), onto
// `placed`. `what` names the file in the message when it cannot be opened.
void ReadHeaders(const fs::path& file, const std::vector<std::string>& names, const std::string& what,
                 const std::string& whose, std::vector<PlacedRecord>* placed) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " '" + file.string() + "'", RILL_NOT_FOUND);
  for (const auto& name : names) {
    PlacedRecord r{name, file, "'" + file.string() + "' (parameter '" + name + "')", {}, 0};
    r.header = ReadLodTensorHeader(in, r.what);  // checks that the data is there
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

bool IsInferenceModel(const std::string& path, const ModelFiles& files) {
  if (EndsWith(path, ".pdmodel")) return fs::is_regular_file(path);
  const std::string model = files.model_filename.empty() ? "__model__" : files.model_filename;
  return fs::is_directory(path) && fs::is_regular_file(fs::path(path) / model);
}

InferenceModel LoadInferenceModel(const std::string& path, const ModelFiles& files) {
  fs::path model_file, combined;
  const bool prefix_form = EndsWith(path, ".pdmodel");
  if (prefix_form) {
    model_file = path;
    combined = path.substr(0, path.size() - 8) + ".pdiparams";
  } else {
    model_file = fs::path(path) / (files.model_filename.empty() ? "__model__" : files.model_filename);
    if (!files.params_filename.empty()) {
      combined = fs::path(path) / files.params_filename;
    } else if (fs::exists(fs::path(path) / "__params__")) {
      combined = fs::path(path) / "__params__";
    }
  }
  InferenceModel m;
  m.program = ReadProgram(model_file.string());
  const std::vector<std::string> names = ParameterNames(*m.program);
  std::vector<PlacedRecord> placed;
  if (!combined.empty()) {
    ReadHeaders(combined, names, "the parameter file", "the program's " + std::to_string(names.size()) + " parameters",
                &placed);
    m.parameters = ReadData(placed);
    return m;
  }
  const std::set<std::string> expected(names.begin(), names.end());
  for (const auto& entry : fs::recursive_directory_iterator(path)) {
    if (!entry.is_regular_file() || entry.path() == model_file) continue;
    const std::string name = fs::relative(entry.path(), path).generic_string();
    if (expected.count(name) == 0) {
      throw Error("'" + entry.path().string() + "' is not a parameter of the model (its program's persistable "
                  "variables are its parameters)", RILL_INVALID_ARGUMENT);
    }
  }
  for (const auto& name : names) {
    ReadHeaders(fs::path(path) / name, {name}, "the file of parameter '" + name + "',", "parameter '" + name + "'",
                &placed);
  }
  m.parameters = ReadData(placed);
  return m;
}

}  // namespace rill::core
