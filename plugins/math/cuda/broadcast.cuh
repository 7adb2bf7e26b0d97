// plugins/math/cuda/broadcast.cuh — Out = f(X, Y) elementwise on the device, with Fluid's
// broadcasting (../broadcast.h: X viewed as [pre, n, post], Y as [n]).
//
// The two common shapes skip the index arithmetic (64-bit division is emulated on the GPU
// and costs more than the memory traffic of an add): Y shaped like X reads Y[i], and a
// one-element Y reads Y[0].
#ifndef RILL_PLUGINS_MATH_CUDA_BROADCAST_CUH_
#define RILL_PLUGINS_MATH_CUDA_BROADCAST_CUH_

#include "../broadcast.h"
#include "cuda_check.h"

namespace rill::math::cuda {

enum class YIndex { kSame, kScalar, kBroadcast };

template <YIndex kMode> __device__ __forceinline__ int64_t YAt(int64_t i, int64_t n, int64_t post) {
  if constexpr (kMode == YIndex::kSame) return i;
  else if constexpr (kMode == YIndex::kScalar) return 0;
  else return (i / post) % n;
}

// out[i] = f(i, index into Y of element i of X).
template <YIndex kMode, class R, class F>
__global__ void BroadcastKernel(R* out, int64_t total, int64_t n, int64_t post, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = f(i, YAt<kMode>(i, n, post));
  }
}

// Launches out[i] = f(i, Y's index for i) over X's `total` elements; f is a functor with a
// __device__ operator()(int64_t i, int64_t yi) holding the pointers it reads.
template <class R, class F> void LaunchBroadcast(R* out, int64_t total, const Broadcast& b, F f) {
  if (b.pre == 1 && b.post == 1) {
    BroadcastKernel<YIndex::kSame><<<Blocks(total), kThreads>>>(out, total, b.n, b.post, f);
  } else if (b.n == 1) {
    BroadcastKernel<YIndex::kScalar><<<Blocks(total), kThreads>>>(out, total, b.n, b.post, f);
  } else {
    BroadcastKernel<YIndex::kBroadcast><<<Blocks(total), kThreads>>>(out, total, b.n, b.post, f);
  }
}

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_BROADCAST_CUH_
