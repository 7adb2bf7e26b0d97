// core/runtime/dtype.h — element types by framework.proto number: names and sizes.
#ifndef RILL_CORE_RUNTIME_DTYPE_H_
#define RILL_CORE_RUNTIME_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace rill::core {

// Bytes per element; throws Error for a number that is not a tensor element type.
size_t DataTypeSize(int32_t dtype);
// "fp32", "int64", ...; "dtype(N)" for an unknown number.
std::string DataTypeName(int32_t dtype);
bool IsTensorDataType(int32_t dtype);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_DTYPE_H_
