// CUDA batch_norm and its gradient, fp32/fp64, NCHW and NHWC, with the CPU kernels'
// arithmetic (norm.cc): in training each channel is normalized by its batch mean and
// biased variance, and the running statistics move towards those; is_test and
// use_global_stats normalize by the running statistics. (cuDNN's batch norm moves the
// running variance towards the unbiased variance instead, so a program would learn other
// statistics on the GPU than on the CPU.) Per-channel sums take a block per channel; the
// rest is a thread per channel or per element.
#include "../channel_layout.h"
#include "cuda_check.h"
#include "device_output.h"
#include "ops.h"
#include "scratch.h"

namespace rill::math::cuda {
namespace {

constexpr int kSumThreads = 256;  // a power of two: BlockSum halves it

// Element k of channel `ch`, k in [0, n * s).
__device__ int64_t ElementOf(const ChannelLayout& l, int64_t ch, int64_t k) {
  const int64_t i = k / l.s, j = k % l.s;
  return l.nhwc ? (i * l.s + j) * l.c + ch : (i * l.c + ch) * l.s + j;
}

// The channel of the element at `index`.
__device__ int64_t ChannelAt(const ChannelLayout& l, int64_t index) { return l.nhwc ? index % l.c : index / l.s % l.c; }

// The sum of every thread's `v` in the block (kSumThreads of them), returned to all.
template <class T>
__device__ T BlockSum(T v) {
  __shared__ T partial[kSumThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const T total = partial[0];
  __syncthreads();  // before the next call writes `partial` again
  return total;
}

// Block `ch`: channel ch's mean and biased variance over its n * s elements (0 if none).
template <class T>
__global__ void BatchStatistics(ChannelLayout l, const T* x, T* mean, T* var) {
  const int64_t ch = blockIdx.x, m = l.n * l.s;
  T sum = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) sum += x[ElementOf(l, ch, k)];
  const T mu = m > 0 ? BlockSum(sum) / static_cast<T>(m) : T(0);
  T squares = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) {
    const T d = x[ElementOf(l, ch, k)] - mu;
    squares += d * d;
  }
  const T sigma2 = m > 0 ? BlockSum(squares) / static_cast<T>(m) : T(0);
  if (threadIdx.x == 0) {
    mean[ch] = mu;
    var[ch] = sigma2;
  }
}

// Per channel, from the statistics used (`mean`, `var`): y = x * a + b, inv_std, and the
// running statistics' new values (moved towards the batch's in training, kept otherwise).
template <class T>
__global__ void ForwardCoefficients(int64_t c, bool training, T eps, T momentum, const T* scale, const T* bias,
                                    const T* running_mean, const T* running_var, const T* mean, const T* var, T* a,
                                    T* b, T* inv_std, T* mean_out, T* var_out) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c; ch += int64_t{blockDim.x} * gridDim.x) {
    inv_std[ch] = T(1) / sqrt(var[ch] + eps);
    a[ch] = inv_std[ch] * scale[ch];
    b[ch] = bias[ch] - mean[ch] * a[ch];
    mean_out[ch] = training ? momentum * running_mean[ch] + (T(1) - momentum) * mean[ch] : running_mean[ch];
    var_out[ch] = training ? momentum * running_var[ch] + (T(1) - momentum) * var[ch] : running_var[ch];
  }
}

// out = u * pu[ch] + (v ? v * pv[ch] : 0) + w[ch], elementwise.
template <class T>
__global__ void PerChannelAffine(ChannelLayout l, const T* u, const T* pu, const T* v, const T* pv, const T* w, T* out,
                                 int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = ChannelAt(l, i);
    out[i] = u[i] * pu[ch] + (v != nullptr ? v[i] * pv[ch] : T(0)) + w[ch];
  }
}

// Block `ch`: sum dy and sum dy * (x - mean) over the channel.
template <class T>
__global__ void GradientSums(ChannelLayout l, const T* x, const T* dy, const T* mean, T* dbias, T* dscale_raw) {
  const int64_t ch = blockIdx.x, m = l.n * l.s;
  T sum = 0, weighted = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) {
    const int64_t e = ElementOf(l, ch, k);
    sum += dy[e];
    weighted += dy[e] * (x[e] - mean[ch]);
  }
  sum = BlockSum(sum);
  weighted = BlockSum(weighted);
  if (threadIdx.x == 0) {
    dbias[ch] = sum;
    dscale_raw[ch] = weighted;
  }
}

// Per channel, as the CPU's BatchNormGrad: dscale, and dx = ka dy + kb x + kc.
template <class T>
__global__ void GradientCoefficients(int64_t c, int64_t m, bool global, T eps, const T* scale, const T* mean,
                                     const T* var_or_inv_std, const T* dbias, T* dscale, T* ka, T* kb, T* kc) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c; ch += int64_t{blockDim.x} * gridDim.x) {
    const T inv = global ? T(1) / sqrt(var_or_inv_std[ch] + eps) : var_or_inv_std[ch];
    dscale[ch] *= inv;
    ka[ch] = scale[ch] * inv;
    kb[ch] = T(0);
    kc[ch] = T(0);
    if (!global && m > 0) {
      kb[ch] = -ka[ch] * inv * dscale[ch] / static_cast<T>(m);
      kc[ch] = -ka[ch] * dbias[ch] / static_cast<T>(m) - kb[ch] * mean[ch];
    }
  }
}

// Output `slot` (one value per channel), if the op has it, from `values` on the device.
template <class T>
void WriteChannels(KernelContext& ctx, const char* slot, int64_t c, const T* values) {
  if (!ctx.HasOutput(slot)) return;
  Tensor t = ctx.Output(slot);
  T* out = AllocateOnDevice<T>(ctx, t, {c});
  CudaCheck(cudaMemcpyAsync(out, values, sizeof(T) * static_cast<size_t>(c), cudaMemcpyDeviceToDevice, 0),
            "cudaMemcpyAsync");
}

template <class T>
void BatchNorm(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  const bool training = !ctx.Attr<bool>("is_test") && !ctx.Attr<bool>("use_global_stats");
  const T* scale = ChannelInput<T>(ctx, "Scale", l.c);
  const T* bias = ChannelInput<T>(ctx, "Bias", l.c);
  const T* running_mean = ChannelInput<T>(ctx, "Mean", l.c);
  const T* running_var = ChannelInput<T>(ctx, "Variance", l.c);
  enum { kMean, kVar, kA, kB, kInvStd, kMeanOut, kVarOut, kArrays };  // per-channel arrays in scratch
  ScratchBuffer<T> scratch(l.c * kArrays);
  const auto s = [&](int array) { return scratch.get() + array * l.c; };
  if (l.c > 0) {
    if (training) {
      BatchStatistics<T><<<static_cast<unsigned>(l.c), kSumThreads>>>(l, x.data<T>(), s(kMean), s(kVar));
      CheckLaunch("BatchStatistics");
    }
    const T* mean = training ? s(kMean) : running_mean;
    const T* var = training ? s(kVar) : running_var;
    ForwardCoefficients<T><<<Blocks(l.c), kThreads>>>(
        l.c, training, static_cast<T>(ctx.Attr<float>("epsilon")), static_cast<T>(ctx.Attr<float>("momentum")), scale,
        bias, running_mean, running_var, mean, var, s(kA), s(kB), s(kInvStd), s(kMeanOut), s(kVarOut));
    CheckLaunch("ForwardCoefficients");
    if (!training) {  // SavedMean: the statistics used
      CudaCheck(cudaMemcpyAsync(s(kMean), running_mean, sizeof(T) * l.c, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
    }
  }
  {
    DeviceOutput<T> y(ctx, "Y", 0, x.dims(), InputVars(ctx, "X"));
    const int64_t count = x.numel();
    if (count > 0) {
      PerChannelAffine<T><<<Blocks(count), kThreads>>>(l, x.data<T>(), s(kA), nullptr, nullptr, s(kB), y.get(), count);
      CheckLaunch("PerChannelAffine");
    }
    y.Finish();
  }
  // Last: MeanOut and VarianceOut are usually Mean's and Variance's own variables, read above.
  WriteChannels<T>(ctx, "MeanOut", l.c, s(kMeanOut));
  WriteChannels<T>(ctx, "VarianceOut", l.c, s(kVarOut));
  WriteChannels<T>(ctx, "SavedMean", l.c, s(kMean));
  WriteChannels<T>(ctx, "SavedVariance", l.c, s(kInvStd));
}

template <class T>
void BatchNormGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  const bool global = ctx.Attr<bool>("use_global_stats") || ctx.Attr<bool>("is_test");
  const T* scale = ChannelInput<T>(ctx, "Scale", l.c);
  const T* mean = ChannelInput<T>(ctx, global ? "Mean" : "SavedMean", l.c);
  const T* var_or_inv_std = ChannelInput<T>(ctx, global ? "Variance" : "SavedVariance", l.c);
  const T* dy = ctx.Input("Y@GRAD").data<T>();
  enum { kDbias, kDscale, kA, kB, kC, kArrays };  // per-channel arrays in scratch
  ScratchBuffer<T> scratch(l.c * kArrays);
  const auto s = [&](int array) { return scratch.get() + array * l.c; };
  if (l.c > 0) {
    GradientSums<T><<<static_cast<unsigned>(l.c), kSumThreads>>>(l, x.data<T>(), dy, mean, s(kDbias), s(kDscale));
    CheckLaunch("GradientSums");
    GradientCoefficients<T><<<Blocks(l.c), kThreads>>>(l.c, l.n * l.s, global, static_cast<T>(ctx.Attr<float>("epsilon")),
                                                       scale, mean, var_or_inv_std, s(kDbias), s(kDscale), s(kA),
                                                       s(kB), s(kC));
    CheckLaunch("GradientCoefficients");
  }
  if (ctx.HasOutput("X@GRAD")) {
    DeviceOutput<T> dx(ctx, "X@GRAD", 0, x.dims(), InputVars(ctx, {"X", "Y@GRAD"}));
    const int64_t count = x.numel();
    if (count > 0) {
      PerChannelAffine<T><<<Blocks(count), kThreads>>>(l, dy, s(kA), x.data<T>(), s(kB), s(kC), dx.get(), count);
      CheckLaunch("PerChannelAffine");
    }
    dx.Finish();
  }
  WriteChannels<T>(ctx, "Scale@GRAD", l.c, s(kDscale));
  WriteChannels<T>(ctx, "Bias@GRAD", l.c, s(kDbias));
}

}  // namespace

void RegisterBatchNorm(Registrar& r) {
  RegisterCudaFloat(r, "batch_norm", [](auto t) { return &BatchNorm<decltype(t)>; });
  RegisterCudaFloat(r, "batch_norm_grad", [](auto t) { return &BatchNormGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
