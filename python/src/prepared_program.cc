#include "prepared_program.h"

#include "core/errors.h"
#include "core/tasks/scheduler.h"
#include "interruptible.h"
#include "numpy_tensor.h"
#include "tensor_handle.h"

namespace rill::python {

PreparedProgram::PreparedProgram(const core::Registry& registry, const std::string& program_bytes, int workers,
                                 int cuda_device)
    : session_(registry, core::Program::Parse(program_bytes, "<program from Python>"),
               cuda_device >= 0 ? core::Place{RILL_CUDA, cuda_device} : core::Place{}),
      workers_(workers) {}

std::vector<std::string> PreparedProgram::feed_names() const {
  std::vector<std::string> names;
  for (const auto& f : session_.feeds()) names.push_back(f.var);
  return names;
}

std::vector<std::string> PreparedProgram::fetch_names() const {
  std::vector<std::string> names;
  for (const auto& f : session_.fetches()) names.push_back(f.var);
  return names;
}

void PreparedProgram::ReleaseFeeds() {
  for (const auto& f : session_.feeds()) {
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
  for (const auto& f : session_.fetches()) local_->Var(f.list);
  struct Release {  // whatever the run's outcome
    PreparedProgram* p;
    ~Release() { p->ReleaseFeeds(); }
  } release{this};
  core::Session::Feeds values;
  for (const py::handle item : feeds) {
    const auto pair = item.cast<py::tuple>();
    const auto name = pair[0].cast<std::string>();
    const bool written = session_.Writes(name);
    if (py::isinstance<TensorHandle>(pair[1])) {
      const core::Tensor& given = *pair[1].cast<TensorHandle&>().get();
      values.emplace_back(name, written ? given.DeepCopy() : given);
    } else {
      const py::array array = py::array::ensure(pair[1]);
      if (!array) throw core::Error("feed '" + name + "' is not an array", RILL_INVALID_ARGUMENT);
      values.emplace_back(name,
                          TensorFromArray(array, "feed '" + name + "'", /*may_borrow=*/!written, &staging_[name]));
    }
  }
  session_.Feed(*local_, std::move(values));
  core::SchedulerOptions options;
  options.workers = workers_;
  RunInterruptibly(options, [&] { session_.Run(local_); });
  py::list out;
  for (const core::Tensor& fetched : session_.Fetch(*local_)) {
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
