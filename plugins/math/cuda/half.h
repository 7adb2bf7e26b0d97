// plugins/math/cuda/half.h — fp16 (framework.proto's FP16) as CUDA's __half, for the CUDA
// kernels that take it: cast, convolution, pooling and batch norm. The SDK maps its own
// element types to dtypes (DataTypeOf); this adds __half for this plugin.
#ifndef RILL_PLUGINS_MATH_CUDA_HALF_H_
#define RILL_PLUGINS_MATH_CUDA_HALF_H_

#include <cuda_fp16.h>

#include <type_traits>

#include "rill/sdk.hpp"

namespace rill {
template <> struct DataTypeOf<__half> { static constexpr RillDataType value = RILL_FP16; };
}  // namespace rill

namespace rill::math::cuda {

// The type a kernel over T elements computes and sums in: float for __half (as cuDNN's
// fp16 convolutions do, and Fluid's fp16 batch_norm, whose per-channel tensors are float),
// T itself otherwise.
template <class T> using Accumulator = std::conditional_t<std::is_same_v<T, __half>, float, T>;

// `v` as a To, as static_cast would; through float where either side is __half (which
// converts to and from float only).
template <class To, class From> __host__ __device__ inline To ConvertValue(From v) {
  if constexpr (std::is_same_v<From, __half> && std::is_same_v<To, __half>) {
    return v;
  } else if constexpr (std::is_same_v<From, __half>) {
    return static_cast<To>(__half2float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_HALF_H_
