#include "prepared_program.h"

#include <set>

#include "core/errors.h"
#include "core/program/validate.h"
#include "core/tasks/scheduler.h"
#include "interruptible.h"
#include "numpy_tensor.h"
#include "tensor_handle.h"

namespace rill::python {
namespace {

std::shared_ptr<const core::Program> Validated(const core::Registry& registry, const std::string& bytes) {
  auto program = core::Program::Parse(bytes, "<program from Python>");
  core::ValidateProgramOrThrow(*program, registry);
  return program;
}

}  // namespace

PreparedProgram::PreparedProgram(const core::Registry& registry, const std::string& program_bytes, int workers,
                                 int cuda_device)
    : program_(Validated(registry, program_bytes)),
      executor_(registry, program_),
      feeds_(core::FeedTargets(*program_)),
      fetches_(core::FetchTargets(*program_)),
      workers_(workers) {
  for (int b = 0; b < program_->blocks_size(); ++b) {
    for (const auto& op : program_->ops(program_->block(b))) {
      if (program_->str(op.type) == "feed") continue;
      for (const auto& slot : program_->outputs(op)) {
        for (const auto id : program_->arguments(slot)) written_.insert(std::string(program_->str(id)));
      }
    }
  }
  if (cuda_device >= 0) executor_.set_place(core::Place{RILL_CUDA, cuda_device});
}

std::vector<std::string> PreparedProgram::feed_names() const {
  std::vector<std::string> names;
  for (const auto& f : feeds_) names.push_back(f.var);
  return names;
}

std::vector<std::string> PreparedProgram::fetch_names() const {
  std::vector<std::string> names;
  for (const auto& f : fetches_) names.push_back(f.var);
  return names;
}

void PreparedProgram::ReleaseFeeds() {
  for (const auto& f : feeds_) {
    for (const std::string* name : {&f.list, &f.var}) {
      if (core::Variable* v = local_->FindLocalVar(*name)) v->Clear();
    }
  }
}

py::list PreparedProgram::Run(const std::shared_ptr<core::Scope>& scope, const py::list& feeds, bool as_tensors) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    py::gil_scoped_release release;
    lock.lock();
  }
  if (local_ == nullptr || last_scope_.lock() != scope) {
    local_ = scope->NewChild();
    last_scope_ = scope;
  }
  // The feed and fetch lists live in the run's own child scope, so runs of other programs
  // in the same scope at the same time (other threads) cannot mix their feeds.
  for (const auto& f : fetches_) local_->Var(f.list);
  struct Release {  // whatever the run's outcome
    PreparedProgram* p;
    ~Release() { p->ReleaseFeeds(); }
  } release{this};
  std::set<std::string> given;
  for (const py::handle item : feeds) {
    const auto pair = item.cast<py::tuple>();
    const auto name = pair[0].cast<std::string>();
    if (!given.insert(name).second) throw core::Error("feed '" + name + "' is given twice", RILL_INVALID_ARGUMENT);
    core::Tensor value;
    if (py::isinstance<TensorHandle>(pair[1])) {
      const core::Tensor& given_tensor = *pair[1].cast<TensorHandle&>().get();
      value = written_.count(name) != 0 ? given_tensor.DeepCopy() : given_tensor;
    } else {
      const py::array array = py::array::ensure(pair[1]);
      if (!array) throw core::Error("feed '" + name + "' is not an array", RILL_INVALID_ARGUMENT);
      value = TensorFromArray(array, "feed '" + name + "'", /*may_borrow=*/written_.count(name) == 0, &staging_[name]);
    }
    core::FeedInto(*program_, feeds_, *local_, name, std::move(value));
  }
  for (const auto& f : feeds_) {
    if (!given.count(f.var)) {
      throw core::Error("feed '" + f.var + "' (" + core::DeclaredType(*program_, f.var) + ") is not given",
                        RILL_INVALID_ARGUMENT);
    }
  }
  core::SchedulerOptions options;
  options.workers = workers_;
  RunInterruptibly(options, [&] { executor_.Run(0, local_); });
  py::list out;
  for (const auto& f : fetches_) {
    const core::Tensor& fetched = core::Fetched(*local_, f);
    if (!as_tensors) {
      out.append(ArrayFromTensor(fetched));
      continue;
    }
    auto copy = std::make_shared<core::Tensor>(fetched.DeepCopy());
    core::Tensor* tensor = copy.get();
    out.append(py::cast(TensorHandle(std::move(copy), tensor)));
  }
  return out;
}

}  // namespace rill::python
