// core/api/model.h — running an inference model from C++, as `rill run MODEL` does.
//
// Contract: Model::Load reads a model in any layout LoadInferenceModel reads, makes a
// Session of its program on `registry` (which must outlive the model; session.h) and puts
// the parameters in a root scope the model owns. Run is the session's run in that scope:
// each feed, checked against its declaration, into its feed op's column (every feed target
// given, and nothing else); block 0 as the main task of RunTasks, on the calling thread (go
// blocks it starts end with it; ModelOptions::tasks); the fetch ops' values in col order.
// Parameters and whatever earlier runs left stay in the scope. Errors throw Error with
// what was wrong. One Run at a time per model.
//
//   core::Registry registry;
//   core::LoadPlugins(registry, {{"/opt/rill/lib/rill/plugins"}});
//   auto model = core::Model::Load(registry, "mlp/");  // or "inference.pdmodel"
//   std::vector<core::Tensor> out = model->Run({{"image", image}});
#ifndef RILL_CORE_API_MODEL_H_
#define RILL_CORE_API_MODEL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/api/session.h"
#include "core/io/inference_model.h"
#include "core/registry/registry.h"
#include "core/runtime/device.h"
#include "core/runtime/scope.h"
#include "core/tasks/scheduler.h"

namespace rill::core {

struct ModelOptions {
  ModelFiles files;  // other names for the program and combined parameter files
  Place place;       // where kernels run (CPU by default), as rill run --device
  // Worker threads for the run's tasks. One by default, the thread calling Run: a model's
  // ops run in order, a large op uses the math plugin's intra-op threads, and a run
  // starts and stops no thread (several threads serve by calling Run on models of their
  // own). Go blocks then take turns on that thread; more workers (0: $RILL_WORKERS, else
  // one per hardware thread) run them in parallel, at a thread start and stop per Run.
  SchedulerOptions tasks = OneWorker();

  static SchedulerOptions OneWorker() {
    SchedulerOptions o;
    o.workers = 1;
    return o;
  }
};

class Model {
 public:
  static std::unique_ptr<Model> Load(const Registry& registry, const std::string& path,
                                     const ModelOptions& options = {});

  // The feed ops' targets and the fetch ops' targets, in col order.
  const std::vector<FeedFetchTarget>& feeds() const { return session_.feeds(); }
  const std::vector<FeedFetchTarget>& fetches() const { return session_.fetches(); }
  const Program& program() const { return session_.program(); }
  Scope& scope() { return *scope_; }

  std::vector<Tensor> Run(Session::Feeds feeds);

 private:
  Model(const Registry& registry, InferenceModel loaded, const ModelOptions& options);

  Session session_;
  std::shared_ptr<Scope> scope_;
  SchedulerOptions tasks_;
};

}  // namespace rill::core

#endif  // RILL_CORE_API_MODEL_H_
