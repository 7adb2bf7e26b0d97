// python/src/tensor_handle.h — what Python holds for a tensor: fluid.core.LoDTensor, and
// scope.find_var(name).get_tensor().
//
// Contract: a TensorHandle points at a core::Tensor and keeps alive what owns it: a
// tensor of its own (LoDTensor()), or the scope whose variable holds it. It is valid for
// as long as the handle lives, even after the variable is rewritten (it then shows the
// new value). Not synchronized: reading it while a run writes the variable is a race, as
// in Fluid.
#ifndef RILL_PYTHON_SRC_TENSOR_HANDLE_H_
#define RILL_PYTHON_SRC_TENSOR_HANDLE_H_

#include <memory>

#include "core/runtime/tensor.h"

namespace rill::python {

class TensorHandle {
 public:
  TensorHandle() : owner_(std::make_shared<core::Tensor>()), tensor_(static_cast<core::Tensor*>(owner_.get())) {}
  TensorHandle(std::shared_ptr<void> owner, core::Tensor* tensor) : owner_(std::move(owner)), tensor_(tensor) {}
  core::Tensor* get() const { return tensor_; }

 private:
  std::shared_ptr<void> owner_;
  core::Tensor* tensor_;
};

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_TENSOR_HANDLE_H_
