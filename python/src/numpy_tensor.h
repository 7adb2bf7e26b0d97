// python/src/numpy_tensor.h — numpy arrays to tensors and back.
//
// Contract: TensorFromArray gives a CPU tensor with the array's dtype, shape and values.
// With `may_borrow`, a C-contiguous array that is 64-byte aligned and at least 64 bytes
// long (what the ABI promises kernels of every tensor) is borrowed, not copied: the tensor
// keeps the array alive (tensor.h, Tensor::Borrow), and the caller must see that nothing
// writes the tensor. Any other array is copied once: into `staging`'s memory when given
// and it has the same size and nobody else holds it (a feed's last copy), else into new
// memory; the result then shares `staging`'s. ArrayFromTensor
// always copies (a device tensor through the CPU), so what Python holds never changes
// under it when a later run rewrites the variable. Unsupported dtypes are errors naming
// the dtype. REQUIRES: the GIL held.
#ifndef RILL_PYTHON_SRC_NUMPY_TENSOR_H_
#define RILL_PYTHON_SRC_NUMPY_TENSOR_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "core/runtime/tensor.h"

namespace rill::python {

namespace py = pybind11;

// framework.proto's dtype of a numpy dtype; throws Error naming `what` and the dtype.
int32_t DtypeOfNumpy(const py::dtype& dtype, const std::string& what);
// The numpy dtype of a framework.proto dtype; throws Error for one numpy has not.
py::dtype NumpyOfDtype(int32_t dtype);

core::Tensor TensorFromArray(const py::array& array, const std::string& what, bool may_borrow,
                             core::Tensor* staging = nullptr);
py::array ArrayFromTensor(const core::Tensor& tensor);

}  // namespace rill::python

#endif  // RILL_PYTHON_SRC_NUMPY_TENSOR_H_
