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
// Inverse of DataTypeName, also accepting "float32"/"float64"/"int"/"float"; -1 if unknown.
int32_t DataTypeFromName(const std::string& name);
bool IsTensorDataType(int32_t dtype);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_DTYPE_H_
