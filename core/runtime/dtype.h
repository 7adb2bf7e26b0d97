// core/runtime/dtype.h — element types by framework.proto number: names and sizes.
#ifndef RILL_CORE_RUNTIME_DTYPE_H_
#define RILL_CORE_RUNTIME_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/data_type.hpp"

namespace rill::core {

[[noreturn]] void ThrowNotTensorDataType(int32_t dtype);
// Bytes per element; throws Error for a number that is not a tensor element type. Inline:
// every new tensor asks.
inline size_t DataTypeSize(int32_t dtype) {
  const size_t size = ::rill::DataTypeSize(dtype);
  if (size == 0) ThrowNotTensorDataType(dtype);
  return size;
}
// "fp32", "int64", ...; "dtype(N)" for an unknown number.
std::string DataTypeName(int32_t dtype);
bool IsTensorDataType(int32_t dtype);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_DTYPE_H_
