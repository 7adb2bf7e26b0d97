#include "core/runtime/dtype.h"

#include "core/errors.h"

namespace rill::core {

bool IsTensorDataType(int32_t dtype) {
  switch (dtype) {
    case RILL_BOOL: case RILL_INT16: case RILL_INT32: case RILL_INT64: case RILL_FP16:
    case RILL_FP32: case RILL_FP64: case RILL_SIZE_T: case RILL_UINT8: case RILL_INT8:
    case RILL_BF16: case RILL_COMPLEX64: case RILL_COMPLEX128:
      return true;
    default:
      return false;
  }
}

void ThrowNotTensorDataType(int32_t dtype) {
  throw Error("dtype " + std::to_string(dtype) + " is not a tensor element type");
}

std::string DataTypeName(int32_t dtype) {
  const std::string name = ::rill::DataTypeName(dtype);
  return name != "unknown" ? name : "dtype(" + std::to_string(dtype) + ")";
}

}  // namespace rill::core
