// core/io/inference_model.h — inference models as Paddle saves them.
//
// Contract: LoadInferenceModel(path) reads
//  - a directory holding the program (`__model__`, or files.model_filename) and the
//    parameters, either one file per parameter named as the parameter, or one combined
//    file (`__params__` when present, or files.params_filename) holding them in name order
//    (Fluid's save_inference_model);
//  - PREFIX.pdmodel, with the combined PREFIX.pdiparams beside it (Paddle 2.x).
// The parameters are block 0's persistable variables other than the feed and fetch lists,
// each in Fluid's LoDTensor format (lod_tensor_file.h). A missing parameter file, a file
// in the directory that is no parameter's, or a combined file holding more or fewer
// records than there are parameters is an Error naming the file. IsInferenceModel says
// whether `path` is one (its program file is there), telling a model directory from a
// transpiled cluster's.
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
  std::string model_filename;   // empty: __model__
  std::string params_filename;  // empty: __params__ if present, else one file per parameter
};

struct InferenceModel {
  std::shared_ptr<const Program> program;
  std::vector<std::pair<std::string, Tensor>> parameters;  // in name order
};

bool IsInferenceModel(const std::string& path, const ModelFiles& files = {});
InferenceModel LoadInferenceModel(const std::string& path, const ModelFiles& files = {});

}  // namespace rill::core

#endif  // RILL_CORE_IO_INFERENCE_MODEL_H_
