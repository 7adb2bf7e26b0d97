#include "core/runtime/dtype.h"

#include "core/errors.h"

namespace rill::core {

// rill/data_type.hpp's size table is the one list of element types.
bool IsTensorDataType(int32_t dtype) { return ::rill::DataTypeSize(dtype) != 0; }

void ThrowNotTensorDataType(int32_t dtype) {
  throw Error("dtype " + std::to_string(dtype) + " is not a tensor element type");
}

std::string DataTypeName(int32_t dtype) {
  const std::string name = ::rill::DataTypeName(dtype);
  return name != "unknown" ? name : "dtype(" + std::to_string(dtype) + ")";
}

}  // namespace rill::core
