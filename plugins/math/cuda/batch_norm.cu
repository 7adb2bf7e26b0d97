// CUDA batch_norm and its gradient, fp16/fp32/fp64, NCHW and NHWC, with the CPU kernels'
// arithmetic (norm.cc): in training each channel is normalized by its batch mean and
// biased variance, and the running statistics move towards those; is_test and
// use_global_stats normalize by the running statistics. (cuDNN's batch norm moves the
// running variance towards the unbiased variance instead, so a program would learn other
// statistics on the GPU than on the CPU.) Per-channel sums take a block per channel; the
// rest is a thread per channel or per element.
//
// As in Fluid, an fp16 X (and Y and their gradients) comes with float per-channel tensors
// (Scale, Bias, the statistics and their gradients), and the arithmetic is in float: a
// kernel over T elements keeps channels in P = Accumulator<T>.
#include "../channel_layout.h"
#include "cuda_check.h"
#include "device_output.h"
#include "half.h"
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
template <class T> __device__ T BlockSum(T v) {
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
template <class T, class P> __global__ void BatchStatistics(ChannelLayout l, const T* x, P* mean, P* var) {
  const int64_t ch = blockIdx.x, m = l.n * l.s;
  P sum = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) sum += ConvertValue<P>(x[ElementOf(l, ch, k)]);
  const P mu = m > 0 ? BlockSum(sum) / static_cast<P>(m) : P(0);
  P squares = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) {
    const P d = ConvertValue<P>(x[ElementOf(l, ch, k)]) - mu;
    squares += d * d;
  }
  const P sigma2 = m > 0 ? BlockSum(squares) / static_cast<P>(m) : P(0);
  if (threadIdx.x == 0) {
    mean[ch] = mu;
    var[ch] = sigma2;
  }
}

// Per channel, from the statistics used (`mean`, `var`): y = x * a + b, inv_std, and the
// running statistics' new values (moved towards the batch's in training, kept otherwise).
template <class P>
__global__ void ForwardCoefficients(int64_t c, bool training, P eps, P momentum, const P* scale, const P* bias,
                                    const P* running_mean, const P* running_var, const P* mean, const P* var, P* a,
                                    P* b, P* inv_std, P* mean_out, P* var_out) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c; ch += int64_t{blockDim.x} * gridDim.x) {
    inv_std[ch] = P(1) / sqrt(var[ch] + eps);
    a[ch] = inv_std[ch] * scale[ch];
    b[ch] = bias[ch] - mean[ch] * a[ch];
    mean_out[ch] = training ? momentum * running_mean[ch] + (P(1) - momentum) * mean[ch] : running_mean[ch];
    var_out[ch] = training ? momentum * running_var[ch] + (P(1) - momentum) * var[ch] : running_var[ch];
  }
}

// out = u * pu[ch] + (v ? v * pv[ch] : 0) + w[ch], elementwise.
template <class T, class P>
__global__ void PerChannelAffine(ChannelLayout l, const T* u, const P* pu, const T* v, const P* pv, const P* w, T* out,
                                 int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t ch = ChannelAt(l, i);
    out[i] = ConvertValue<T>(ConvertValue<P>(u[i]) * pu[ch] + (v != nullptr ? ConvertValue<P>(v[i]) * pv[ch] : P(0)) +
                             w[ch]);
  }
}

// Block `ch`: sum dy and sum dy * (x - mean) over the channel.
template <class T, class P>
__global__ void GradientSums(ChannelLayout l, const T* x, const T* dy, const P* mean, P* dbias, P* dscale_raw) {
  const int64_t ch = blockIdx.x, m = l.n * l.s;
  P sum = 0, weighted = 0;
  for (int64_t k = threadIdx.x; k < m; k += kSumThreads) {
    const int64_t e = ElementOf(l, ch, k);
    const P g = ConvertValue<P>(dy[e]);
    sum += g;
    weighted += g * (ConvertValue<P>(x[e]) - mean[ch]);
  }
  sum = BlockSum(sum);
  weighted = BlockSum(weighted);
  if (threadIdx.x == 0) {
    dbias[ch] = sum;
    dscale_raw[ch] = weighted;
  }
}

// Per channel, as the CPU's BatchNormGrad: dscale, and dx = ka dy + kb x + kc.
template <class P>
__global__ void GradientCoefficients(int64_t c, int64_t m, bool global, P eps, const P* scale, const P* mean,
                                     const P* var_or_inv_std, const P* dbias, P* dscale, P* ka, P* kb, P* kc) {
  for (int64_t ch = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; ch < c; ch += int64_t{blockDim.x} * gridDim.x) {
    const P inv = global ? P(1) / sqrt(var_or_inv_std[ch] + eps) : var_or_inv_std[ch];
    dscale[ch] *= inv;
    ka[ch] = scale[ch] * inv;
    kb[ch] = P(0);
    kc[ch] = P(0);
    if (!global && m > 0) {
      kb[ch] = -ka[ch] * inv * dscale[ch] / static_cast<P>(m);
      kc[ch] = -ka[ch] * dbias[ch] / static_cast<P>(m) - kb[ch] * mean[ch];
    }
  }
}

// Output `slot` (one value per channel), if the op has it, from `values` on the device.
template <class T> void WriteChannels(KernelContext& ctx, const char* slot, int64_t c, const T* values) {
  if (!ctx.HasOutput(slot)) return;
  Tensor t = ctx.Output(slot);
  T* out = AllocateOnDevice<T>(ctx, t, {c});
  CudaCheck(cudaMemcpyAsync(out, values, sizeof(T) * static_cast<size_t>(c), cudaMemcpyDeviceToDevice, 0),
            "cudaMemcpyAsync");
}

template <class T> void BatchNorm(KernelContext& ctx) {
  using P = Accumulator<T>;
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  // is_test with trainable_statistics normalizes by the batch, as training does (Paddle's).
  const bool training =
      (!ctx.Attr<bool>("is_test") || ctx.Attr<bool>("trainable_statistics")) && !ctx.Attr<bool>("use_global_stats");
  if (ctx.HasInput("MomentumTensor")) {
    throw Error("the CUDA batch_norm kernel takes momentum as an attribute, not as MomentumTensor", RILL_UNIMPLEMENTED);
  }
  const P* scale = ChannelInput<P>(ctx, "Scale", l.c);
  const P* bias = ChannelInput<P>(ctx, "Bias", l.c);
  const P* running_mean = ChannelInput<P>(ctx, "Mean", l.c);
  const P* running_var = ChannelInput<P>(ctx, "Variance", l.c);
  enum { kMean, kVar, kA, kB, kInvStd, kMeanOut, kVarOut, kArrays };  // per-channel arrays in scratch
  ScratchBuffer<P> scratch(l.c * kArrays);
  const auto s = [&](int array) { return scratch.get() + array * l.c; };
  if (l.c > 0) {
    if (training) {
      BatchStatistics<T, P><<<static_cast<unsigned>(l.c), kSumThreads>>>(l, x.data<T>(), s(kMean), s(kVar));
      CheckLaunch("BatchStatistics");
    }
    const P* mean = training ? s(kMean) : running_mean;
    const P* var = training ? s(kVar) : running_var;
    ForwardCoefficients<P><<<Blocks(l.c), kThreads>>>(
        l.c, training, static_cast<P>(ctx.Attr<float>("epsilon")), static_cast<P>(ctx.Attr<float>("momentum")), scale,
        bias, running_mean, running_var, mean, var, s(kA), s(kB), s(kInvStd), s(kMeanOut), s(kVarOut));
    CheckLaunch("ForwardCoefficients");
    if (!training) {  // SavedMean: the statistics used
      CudaCheck(cudaMemcpyAsync(s(kMean), running_mean, sizeof(P) * l.c, cudaMemcpyDeviceToDevice, 0),
                "cudaMemcpyAsync");
    }
  }
  {
    DeviceOutput<T> y(ctx, "Y", 0, x.dims(), InputVars(ctx, "X"));
    const int64_t count = x.numel();
    if (count > 0) {
      PerChannelAffine<T, P>
          <<<Blocks(count), kThreads>>>(l, x.data<T>(), s(kA), nullptr, nullptr, s(kB), y.get(), count);
      CheckLaunch("PerChannelAffine");
    }
    y.Finish();
  }
  // Last: MeanOut and VarianceOut are usually Mean's and Variance's own variables, read above.
  WriteChannels<P>(ctx, "MeanOut", l.c, s(kMeanOut));
  WriteChannels<P>(ctx, "VarianceOut", l.c, s(kVarOut));
  WriteChannels<P>(ctx, "SavedMean", l.c, s(kMean));
  WriteChannels<P>(ctx, "SavedVariance", l.c, s(kInvStd));
}

template <class T> void BatchNormGrad(KernelContext& ctx) {
  using P = Accumulator<T>;
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  const bool global = ctx.Attr<bool>("use_global_stats") || ctx.Attr<bool>("is_test");
  const P* scale = ChannelInput<P>(ctx, "Scale", l.c);
  const P* mean = ChannelInput<P>(ctx, global ? "Mean" : "SavedMean", l.c);
  const P* var_or_inv_std = ChannelInput<P>(ctx, global ? "Variance" : "SavedVariance", l.c);
  const T* dy = ctx.Input("Y@GRAD").data<T>();
  enum { kDbias, kDscale, kA, kB, kC, kArrays };  // per-channel arrays in scratch
  ScratchBuffer<P> scratch(l.c * kArrays);
  const auto s = [&](int array) { return scratch.get() + array * l.c; };
  if (l.c > 0) {
    GradientSums<T, P><<<static_cast<unsigned>(l.c), kSumThreads>>>(l, x.data<T>(), dy, mean, s(kDbias), s(kDscale));
    CheckLaunch("GradientSums");
    GradientCoefficients<P><<<Blocks(l.c), kThreads>>>(l.c, l.n * l.s, global,
                                                       static_cast<P>(ctx.Attr<float>("epsilon")), scale, mean,
                                                       var_or_inv_std, s(kDbias), s(kDscale), s(kA), s(kB), s(kC));
    CheckLaunch("GradientCoefficients");
  }
  if (ctx.HasOutput("X@GRAD")) {
    DeviceOutput<T> dx(ctx, "X@GRAD", 0, x.dims(), InputVars(ctx, {"X", "Y@GRAD"}));
    const int64_t count = x.numel();
    if (count > 0) {
      PerChannelAffine<T, P><<<Blocks(count), kThreads>>>(l, dy, s(kA), x.data<T>(), s(kB), s(kC), dx.get(), count);
      CheckLaunch("PerChannelAffine");
    }
    dx.Finish();
  }
  WriteChannels<P>(ctx, "Scale@GRAD", l.c, s(kDscale));
  WriteChannels<P>(ctx, "Bias@GRAD", l.c, s(kDbias));
}

}  // namespace

void RegisterBatchNorm(Registrar& r) {
  r.Kernel("batch_norm", RILL_CUDA, RILL_FP16, &BatchNorm<__half>);
  r.Kernel("batch_norm_grad", RILL_CUDA, RILL_FP16, &BatchNormGrad<__half>);
  RegisterCudaFloat(r, "batch_norm", [](auto t) { return &BatchNorm<decltype(t)>; });
  RegisterCudaFloat(r, "batch_norm_grad", [](auto t) { return &BatchNormGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
