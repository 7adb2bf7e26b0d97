// plugins/math/cuda/sum_reduce.cuh — deterministic sums on the device of a tensor viewed
// as [pre, n, post], over pre and post, one sum per j in [0, n):
//
//   out[j] = scale * sum over p < pre, k < post of term((p * n + j) * post + k, j)
//
// This is a broadcast operand's gradient (../broadcast.h), a mean (n = 1), and a bias
// gradient (post = 1). `term` is a functor with a __device__ T operator()(int64_t idx,
// int64_t j) holding the pointers it reads.
//
// The work is split so that the GPU fills up whatever the shape: [pre, n] columns (post 1,
// n >= 32) are summed one thread per column, coalesced; anything else one block per j,
// threads striding over its pre * post elements. When that leaves too few blocks, each sum
// is cut into S chunks summed into partials [S, n] (scratch.h), then
// the partials are summed by the same code. The split depends on the shape alone, so
// results are the same from run to run. A sum of a whole aligned tensor (a mean) reads
// 16 bytes a load (SumContiguous): a streaming read reaches the bandwidth only with many
// bytes in flight per thread.
#ifndef RILL_PLUGINS_MATH_CUDA_SUM_REDUCE_CUH_
#define RILL_PLUGINS_MATH_CUDA_SUM_REDUCE_CUH_

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "scratch.h"

namespace rill::math::cuda {

// Blocks that keep every multiprocessor of a large GPU busy.
constexpr int64_t kReduceTargetBlocks = 1024;

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Block (column group x, chunk y): each thread sums rows [y * chunk, (y+1) * chunk) of its
// column j of [pre, n].
template <class T, class Term>
__global__ void SumColumns(Term term, T* out, int64_t pre, int64_t n, int64_t chunk, T scale) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const int64_t p1 = min(pre, (blockIdx.y + 1) * chunk);
  T s[4] = {0, 0, 0, 0};  // independent sums: four loads in flight per thread
  int64_t p = blockIdx.y * chunk;
  for (; p + 3 < p1; p += 4) {
#pragma unroll
    for (int u = 0; u < 4; ++u) s[u] += term((p + u) * n + j, j);
  }
  for (; p < p1; ++p) s[0] += term(p * n + j, j);
  out[blockIdx.y * n + j] = ((s[0] + s[1]) + (s[2] + s[3])) * scale;
}

// Block (j, chunk y): the threads stride over elements [y * chunk, (y+1) * chunk) of the
// pre * post that sum into j, then add up their sums in shared memory.
template <class T, class Term>
__global__ void SumPerBlock(Term term, T* out, int64_t n, int64_t post, int64_t count, int64_t chunk, T scale) {
  __shared__ T partial[kThreads];
  const int64_t j = blockIdx.x;
  const int64_t q1 = min(count, (blockIdx.y + 1) * chunk);
  // Element q of the pre * post that sum into j.
  const auto at = [&](int64_t q) {
    const int64_t p = post == 1 ? q : q / post;
    return term((p * n + j) * post + (q - p * post), j);
  };
  T s[4] = {0, 0, 0, 0};  // independent sums: four loads in flight per thread
  const int64_t stride = blockDim.x;
  int64_t q = blockIdx.y * chunk + threadIdx.x;
  for (; q + 3 * stride < q1; q += 4 * stride) {
#pragma unroll
    for (int u = 0; u < 4; ++u) s[u] += at(q + u * stride);
  }
  for (; q < q1; q += stride) s[0] += at(q);
  partial[threadIdx.x] = (s[0] + s[1]) + (s[2] + s[3]);
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.y * n + j] = partial[0] * scale;
}

// The term that is the element itself: a plain sum (of a tensor, or of partials [S, n]).
template <class T> struct ElementOf {
  const T* data;
  __device__ T operator()(int64_t idx, int64_t) const { return data[idx]; }
};

// Four values of T in 16 bytes, for one load.
template <class T> struct Vec16;
template <> struct Vec16<float> {
  using type = float4;
  __device__ static float Sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
};
template <> struct Vec16<double> {
  using type = double2;
  __device__ static double Sum(double2 v) { return v.x + v.y; }
};

// The sum of `x` over the threads of a block (kThreads), in thread 0.
template <class T> __device__ T BlockSum(T x) {
  __shared__ T warp_sums[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) x += __shfl_down_sync(0xffffffffu, x, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x < 32) {
    x = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : T(0);
    for (int o = 16; o > 0; o /= 2) x += __shfl_down_sync(0xffffffffu, x, o);
  }
  return x;
}

// Block b sums elements [b * chunk, (b+1) * chunk) of `data`, 16-byte aligned, where chunk
// is a multiple of the values per vector: four 16-byte loads in flight per thread.
template <class T>
__global__ void SumContiguous(const T* __restrict__ data, T* out, int64_t count, int64_t chunk, T scale) {
  using V = typename Vec16<T>::type;
  constexpr int kPer = sizeof(V) / sizeof(T);
  const int64_t q0 = blockIdx.x * chunk;
  const int64_t q1 = min(count, q0 + chunk);
  const V* v = reinterpret_cast<const V*>(data + q0);
  const int64_t nv = (q1 - q0) / kPer;
  T s[4] = {0, 0, 0, 0};
  int64_t i = threadIdx.x;
  for (; i + 3 * kThreads < nv; i += 4 * kThreads) {
    V a[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) a[u] = __ldg(v + i + u * kThreads);
#pragma unroll
    for (int u = 0; u < 4; ++u) s[u] += Vec16<T>::Sum(a[u]);
  }
  for (; i < nv; i += kThreads) s[0] += Vec16<T>::Sum(__ldg(v + i));
  for (int64_t q = q0 + nv * kPer + threadIdx.x; q < q1; q += kThreads) s[0] += data[q];
  const T total = BlockSum((s[0] + s[1]) + (s[2] + s[3]));
  if (threadIdx.x == 0) out[blockIdx.x] = total * scale;
}

template <class T, class Term> void SumOverPrePost(Term term, T* out, int64_t pre, int64_t n, int64_t post, T scale);

// out[0] = scale * the sum of `count` elements at `data` (16-byte aligned): chunks of at
// least kThreads * 16 elements into partials, then the partials.
template <class T> void SumAllContiguous(const T* data, T* out, int64_t count, T scale) {
  constexpr int64_t kStep = kThreads * (16 / sizeof(T));  // one vector load per thread
  const int64_t chunk = std::max<int64_t>(kThreads * 16, CeilDiv(CeilDiv(count, kReduceTargetBlocks), kStep) * kStep);
  const int64_t used = CeilDiv(count, chunk);
  T* target = used > 1 ? ScratchAlloc<T>(used) : out;
  SumContiguous<T><<<static_cast<unsigned>(used), kThreads>>>(data, target, count, chunk, used > 1 ? T(1) : scale);
  CheckLaunch("sum kernel");
  if (used > 1) {
    SumOverPrePost(ElementOf<T>{target}, out, used, 1, 1, scale);
    ScratchFree(target);
  }
}

template <class T, class Term> void SumOverPrePost(Term term, T* out, int64_t pre, int64_t n, int64_t post, T scale) {
  if (n == 0) return;
  if constexpr (std::is_same_v<Term, ElementOf<T>> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    if (n == 1 && post == 1 && reinterpret_cast<uintptr_t>(term.data) % 16 == 0) {
      return SumAllContiguous(term.data, out, pre, scale);
    }
  }
  const bool columns = post == 1 && n >= 32;
  const int64_t blocks = columns ? CeilDiv(n, kThreads) : n;
  const int64_t count = pre * post;
  // Chunks per sum: enough blocks in all, but no chunk shorter than a thread's fair share.
  const int64_t min_chunk = columns ? 64 : kThreads * 16;
  const int64_t splits =
      std::clamp<int64_t>(CeilDiv(kReduceTargetBlocks, blocks), 1, std::max<int64_t>(1, count / min_chunk));
  const int64_t chunk = std::max<int64_t>(1, CeilDiv(count, splits));
  const int64_t used = std::max<int64_t>(1, CeilDiv(count, chunk));
  T* target = out;
  if (used > 1) target = ScratchAlloc<T>(used * n);
  const T first_scale = used > 1 ? T(1) : scale;
  if (columns) {
    SumColumns<T><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(used)), kThreads>>>(term, target, pre, n,
                                                                                                  chunk, first_scale);
  } else {
    SumPerBlock<T><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(used)), kThreads>>>(
        term, target, n, post, count, chunk, first_scale);
  }
  CheckLaunch("sum kernel");
  if (used > 1) {
    SumOverPrePost(ElementOf<T>{target}, out, used, n, 1, scale);
    ScratchFree(target);
  }
}

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_SUM_REDUCE_CUH_
