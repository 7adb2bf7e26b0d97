// core/io/inference_model.h — inference models as Paddle saves them.
//
// Contract: LoadInferenceModel(path) reads
//  - a directory holding the program (`__model__`, or files.model_filename) and the
//    parameters, either one file per parameter named as the parameter, or one combined
//    file (`__params__` when present, or files.params_filename) holding them in name order
//    (Fluid's save_inference_model);
//  - PREFIX.pdmodel, with the combined PREFIX.pdiparams beside it (Paddle 2.x), given as
//    the .pdmodel's path or as the directory holding it when no __model__ is there and it
//    is the directory's only .pdmodel (Paddle 2.x's models are shipped as such a folder).
// The parameters are block 0's persistable variables other than the feed and fetch lists,
// each in Fluid's LoDTensor format (lod_tensor_file.h); other files in the directory are
// not read (Paddle's loader ignores them too). Each record must hold what the program
// declares: its dtype, and its dims (a declared -1 matches any size). A missing parameter
// file, one that is not a regular file (a FIFO would block forever), a record that does
// not match its declaration, or a combined file holding more or fewer records than there
// are parameters is an Error naming the file and parameter.
//
// A model is code that runs with the user's rights. Unless ModelFiles::allow_files_outside,
// a model whose program could write files (FileOps: a save op) or names a file outside its
// directory (a parameter name or a load op's file_path that is absolute, climbs out with
// `..`, or resolves through a symlink to outside) is refused with an Error naming the op
// or parameter; InferenceModel::file_access lists them all. Subdirectories inside the
// model directory are fine.
//
// ModelProgramFile is the program file of the model at `path` by the rules above, or empty
// when `path` is not a model; a directory with several .pdmodel files and no __model__ is
// an Error naming them. IsInferenceModel says whether `path` is a model, telling a model
// directory from a transpiled cluster's.
#ifndef RILL_CORE_IO_INFERENCE_MODEL_H_
#define RILL_CORE_IO_INFERENCE_MODEL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/program/program.h"
#include "core/runtime/tensor.h"

namespace rill::core {

struct ModelFiles {
  std::string model_filename;        // empty: __model__
  std::string params_filename;       // empty: __params__ if present, else one file per parameter
  bool allow_files_outside = false;  // let the model write files and reach outside its directory
};

// An op that reaches a file through its `file_path` attribute: core's load ops read;
// its save ops, and any other op with a file_path, are taken to write.
struct FileOp {
  int block = 0, op = 0;
  std::string type, path;
  bool writes = false;
};
std::vector<FileOp> FileOps(const Program& program);

struct InferenceModel {
  std::shared_ptr<const Program> program;
  std::vector<std::pair<std::string, Tensor>> parameters;  // in name order
  // What the model policy refuses (ops that write files, files outside the directory),
  // one message each; loading succeeds with any only under allow_files_outside.
  std::vector<std::string> file_access;
};

std::string ModelProgramFile(const std::string& path, const ModelFiles& files = {});
bool IsInferenceModel(const std::string& path, const ModelFiles& files = {});
InferenceModel LoadInferenceModel(const std::string& path, const ModelFiles& files = {});

}  // namespace rill::core

#endif  // RILL_CORE_IO_INFERENCE_MODEL_H_
