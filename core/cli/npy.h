// core/cli/npy.h — reading and writing NumPy .npy files (format versions 1.0-3.0).
//
// Little-endian, C-order arrays of bool, int8/16/32/64, uint8, float32/64. Anything else
// (Fortran order, big-endian, object arrays, truncated data) is an Error naming the file.
#ifndef RILL_CORE_CLI_NPY_H_
#define RILL_CORE_CLI_NPY_H_

#include <string>

#include "core/runtime/tensor.h"

namespace rill::core {

Tensor ReadNpy(const std::string& path);
void WriteNpy(const Tensor& tensor, const std::string& path);

}  // namespace rill::core

#endif  // RILL_CORE_CLI_NPY_H_
