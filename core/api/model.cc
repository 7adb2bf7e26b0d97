#include "core/api/model.h"

namespace rill::core {

std::unique_ptr<Model> Model::Load(const Registry& registry, const std::string& path, const ModelOptions& options) {
  return std::unique_ptr<Model>(new Model(registry, LoadInferenceModel(path, options.files), options));
}

Model::Model(const Registry& registry, InferenceModel loaded, const ModelOptions& options)
    : session_(registry, loaded.program, options.place), scope_(Scope::NewRoot()), tasks_(options.tasks) {
  for (auto& [name, value] : loaded.parameters) *scope_->Var(name)->GetMutableTensor() = std::move(value);
}

std::vector<Tensor> Model::Run(Session::Feeds feeds) { return session_.Run(scope_, std::move(feeds), tasks_); }

}  // namespace rill::core
