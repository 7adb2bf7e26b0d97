// plugins/math/tensor_copy.h — whole-tensor copies any dtype: what assign (assign.cc), the
// tensor-array ops (tensor_array.cc) and slice of a tensor array (slice.cc) copy with.
#ifndef RILL_PLUGINS_MATH_TENSOR_COPY_H_
#define RILL_PLUGINS_MATH_TENSOR_COPY_H_

#include <cstring>

#include "parallel_for.h"
#include "rill/sdk.hpp"

namespace rill::math {

inline size_t TensorBytes(Tensor t) { return static_cast<size_t>(t.numel()) * DataTypeSize(t.dtype()); }

// dst = a copy of the CPU tensor src (not dst itself): dtype, dims, bytes (by the passes'
// team) and LoD (replacing dst's).
inline void CopyTensor(Tensor src, Tensor dst) {
  void* p = dst.Allocate(src.dtype(), src.dims());
  if (TensorBytes(src) > 0) ParallelCopy(src.raw_data(), p, TensorBytes(src));
  dst.set_lod(src.lod());
}

// dst = zeros shaped and typed like `like`.
inline void ZerosLike(Tensor like, Tensor dst) {
  void* p = dst.Allocate(like.dtype(), like.dims());
  if (TensorBytes(like) > 0) std::memset(p, 0, TensorBytes(like));
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_TENSOR_COPY_H_
