#include "core/api/model.h"

#include <set>

#include "core/errors.h"
#include "core/program/validate.h"

namespace rill::core {

std::unique_ptr<Model> Model::Load(const Registry& registry, const std::string& path, const ModelOptions& options) {
  InferenceModel loaded = LoadInferenceModel(path, options.files);
  ValidateProgramOrThrow(*loaded.program, registry);
  return std::unique_ptr<Model>(new Model(registry, std::move(loaded), options));
}

Model::Model(const Registry& registry, InferenceModel loaded, const ModelOptions& options)
    : program_(loaded.program),
      feeds_(FeedTargets(*program_)),
      fetches_(FetchTargets(*program_)),
      scope_(Scope::NewRoot()),
      executor_(registry, program_),
      tasks_(options.tasks) {
  executor_.set_place(options.place);
  for (auto& [name, value] : loaded.parameters) *scope_->Var(name)->GetMutableTensor() = std::move(value);
}

std::vector<Tensor> Model::Run(std::vector<std::pair<std::string, Tensor>> feeds) {
  std::set<std::string> given;
  for (auto& feed : feeds) {
    const std::string& name = feed.first;
    if (!given.insert(name).second) throw Error("feed '" + name + "' is given twice", RILL_INVALID_ARGUMENT);
    const bool target = std::any_of(feeds_.begin(), feeds_.end(), [&](const auto& f) { return f.var == name; });
    if (!target) {
      std::string names;
      for (const auto& f : feeds_) names += (names.empty() ? "" : ", ") + f.var;
      throw Error("feed '" + name + "' is not one of the model's feeds (" + (names.empty() ? "none" : names) + ")",
                  RILL_INVALID_ARGUMENT);
    }
    FeedInto(*program_, feeds_, *scope_, name, std::move(feed.second));
  }
  for (const auto& f : feeds_) {
    if (!given.count(f.var)) {
      throw Error("feed '" + f.var + "' (" + DeclaredType(*program_, f.var) + ") is not given", RILL_INVALID_ARGUMENT);
    }
  }
  RunTasks(tasks_, [&] { executor_.Run(0, scope_); });
  std::vector<Tensor> out;
  out.reserve(fetches_.size());
  for (const auto& f : fetches_) out.push_back(Fetched(*scope_, f));
  return out;
}

}  // namespace rill::core
