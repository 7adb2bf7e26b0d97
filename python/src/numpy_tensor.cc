#include "numpy_tensor.h"

#include <cstring>
#include <vector>

#include "core/errors.h"
#include "core/runtime/dtype.h"

namespace rill::python {

int32_t DtypeOfNumpy(const py::dtype& dtype, const std::string& what) {
  const char kind = dtype.kind();
  const ssize_t size = dtype.itemsize();
  int32_t d = -1;
  if (kind == 'b' && size == 1) d = 0;                                                       // BOOL
  if (kind == 'i') d = size == 1 ? 21 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;  // INT8 INT16 INT32 INT64
  if (kind == 'u' && size == 1) d = 20;                                                      // UINT8
  if (kind == 'f') d = size == 2 ? 4 : size == 4 ? 5 : size == 8 ? 6 : -1;                   // FP16 FP32 FP64
  if (d < 0) {
    throw core::Error(what + ": numpy dtype " + py::str(static_cast<const py::object&>(dtype)).cast<std::string>() +
                          " has no Rill dtype (bool, int8/16/32/64, uint8, float16/32/64 do)",
                      RILL_INVALID_ARGUMENT);
  }
  return d;
}

py::dtype NumpyOfDtype(int32_t dtype) {
  switch (dtype) {
    case 0: return py::dtype("bool");
    case 1: return py::dtype("int16");
    case 2: return py::dtype("int32");
    case 3: return py::dtype("int64");
    case 4: return py::dtype("float16");
    case 5: return py::dtype("float32");
    case 6: return py::dtype("float64");
    case 20: return py::dtype("uint8");
    case 21: return py::dtype("int8");
    default: throw core::Error("a tensor of " + core::DataTypeName(dtype) + " has no numpy dtype", RILL_UNIMPLEMENTED);
  }
}

core::Tensor TensorFromArray(const py::array& array, const std::string& what, bool may_borrow, core::Tensor* staging) {
  const int32_t dtype = DtypeOfNumpy(array.dtype(), what);
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  const bool contiguous = (array.flags() & py::array::c_style) != 0;
  const size_t bytes = static_cast<size_t>(array.nbytes());
  const auto address = reinterpret_cast<uintptr_t>(array.data());
  if (may_borrow && contiguous && address % core::Buffer::kAlignment == 0 && bytes >= core::Buffer::kAlignment) {
    // The keeper drops the array's reference under the GIL, from whichever thread lets
    // go of the tensor last; after the interpreter is gone there is nothing to drop.
    PyObject* owner = array.inc_ref().ptr();
    std::shared_ptr<void> keeper(owner, [](void* p) {
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      Py_DECREF(static_cast<PyObject*>(p));
    });
    return core::Tensor::Borrow(dtype, dims, const_cast<void*>(array.data()), std::move(keeper));
  }
  core::Tensor own;
  core::Tensor& t = staging != nullptr ? *staging : own;
  void* out = t.Allocate(dtype, dims);  // the staging tensor's memory when it is free and fits
  if (contiguous) {
    if (bytes != 0) std::memcpy(out, array.data(), bytes);
  } else {
    // numpy lays the values out in C order into the tensor's memory.
    py::array dst(array.dtype(), array.request().shape, {}, out, py::none());
    py::module_::import("numpy").attr("copyto")(dst, array);
  }
  return t;
}

py::array ArrayFromTensor(const core::Tensor& tensor) {
  if (!tensor.initialized()) throw core::Error("the tensor holds no value yet", RILL_FAILED_PRECONDITION);
  const core::Tensor host = tensor.place().device_type == RILL_CPU ? tensor : tensor.CopyTo(core::Place{});
  std::vector<ssize_t> shape(host.dims().begin(), host.dims().end());
  py::array out(NumpyOfDtype(host.dtype()), shape);
  if (host.nbytes() != 0) std::memcpy(out.mutable_data(), host.data(), host.nbytes());
  return out;
}

}  // namespace rill::python
