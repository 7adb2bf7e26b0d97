// core/io/npy.h — reading and writing NumPy .npy files (format versions 1.0-3.0).
//
// Little-endian, C-order arrays of bool, int8/16/32/64, uint8, float32/64. Anything else
// (Fortran order, big-endian, object arrays, truncated data, a shape whose size does not
// fit) is an Error naming the file; no header makes it allocate more than the file holds.
#ifndef RILL_CORE_IO_NPY_H_
#define RILL_CORE_IO_NPY_H_

#include <istream>
#include <string>

#include "core/runtime/tensor.h"

namespace rill::core {

Tensor ReadNpy(const std::string& path);
// The array in `in`; `name` (a path, or what the bytes came from) names it in errors.
Tensor ReadNpy(std::istream& in, const std::string& name);
void WriteNpy(const Tensor& tensor, const std::string& path);

}  // namespace rill::core

#endif  // RILL_CORE_IO_NPY_H_
