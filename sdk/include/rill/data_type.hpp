// rill/data_type.hpp — the element types of rill/abi.h by name and size.
//
// Header-only, no ABI, exception-free, like checked_size.hpp: the one list of element
// types, which the host and plugins (any compiler) both read, so it lives outside the
// plugin layer (rill/sdk.hpp includes it).
#ifndef RILL_DATA_TYPE_HPP_
#define RILL_DATA_TYPE_HPP_

#include <cstddef>
#include <cstdint>

#include "rill/abi.h"

namespace rill {

// "fp32", "int64", ...; "any" for RILL_ANY_DTYPE and "unknown" for a number that names no
// element type.
inline const char* DataTypeName(int32_t dtype) {
  switch (dtype) {
    case RILL_BOOL: return "bool";
    case RILL_INT16: return "int16";
    case RILL_INT32: return "int32";
    case RILL_INT64: return "int64";
    case RILL_FP16: return "fp16";
    case RILL_FP32: return "fp32";
    case RILL_FP64: return "fp64";
    case RILL_SIZE_T: return "size_t";
    case RILL_UINT8: return "uint8";
    case RILL_INT8: return "int8";
    case RILL_BF16: return "bf16";
    case RILL_COMPLEX64: return "complex64";
    case RILL_COMPLEX128: return "complex128";
    case RILL_ANY_DTYPE: return "any";
    default: return "unknown";
  }
}

// Bytes per element; 0 for a dtype that is not a tensor element type.
inline size_t DataTypeSize(int32_t dtype) {
  switch (dtype) {
    case RILL_BOOL:
    case RILL_UINT8:
    case RILL_INT8: return 1;
    case RILL_INT16:
    case RILL_FP16:
    case RILL_BF16: return 2;
    case RILL_INT32:
    case RILL_FP32: return 4;
    case RILL_INT64:
    case RILL_FP64:
    case RILL_SIZE_T:
    case RILL_COMPLEX64: return 8;
    case RILL_COMPLEX128: return 16;
    default: return 0;
  }
}

}  // namespace rill

#endif  // RILL_DATA_TYPE_HPP_
