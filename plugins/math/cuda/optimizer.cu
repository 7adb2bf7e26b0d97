// CUDA sgd, momentum and adam, fp32/fp64, updating parameters in place on the device
// (ParamOut must be Param, and likewise for the optimizer state). The formulas are the CPU
// kernels' (../optimizer.cc).
#include "../shape.h"
#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

template <class T> __global__ void SgdKernel(T* param, const T* grad, const T* lr, int64_t n) {
  const T rate = lr[0];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    param[i] -= rate * grad[i];
  }
}

// g = grad * rescale + l2 * param (l2 is 0 without l2_decay), read before param changes.
template <class T>
__global__ void MomentumKernel(T* param, const T* grad, T* velocity, const T* lr, int64_t n, T mu, bool nesterov,
                               T rescale, T l2) {
  const T rate = lr[0];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const T g = grad[i] * rescale + l2 * param[i];
    const T v = mu * velocity[i] + g;
    velocity[i] = v;
    param[i] -= rate * (nesterov ? g + mu * v : v);
  }
}

template <class T>
__global__ void AdamKernel(T* param, const T* grad, T* m1, T* m2, const T* lr, const T* b1_pow, const T* b2_pow,
                           int64_t n, T b1, T b2, T eps) {
  const T lr_t = lr[0] * sqrt(T(1) - b2_pow[0]) / (T(1) - b1_pow[0]);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const T g = grad[i];
    m1[i] = b1 * m1[i] + (T(1) - b1) * g;
    m2[i] = b2 * m2[i] + (T(1) - b2) * g * g;
    param[i] -= lr_t * m1[i] / (sqrt(m2[i]) + eps);
  }
}

template <class T> __global__ void AdvancePow(const T* in, T* out, T beta) { out[0] = in[0] * beta; }

// Checks what every optimizer needs: Grad shaped like Param, a [1] LearningRate, and each
// (out, in) pair naming one variable, since these kernels update in place.
void CheckOptimizer(KernelContext& ctx, std::initializer_list<std::pair<const char*, const char*>> in_place) {
  Tensor param = ctx.Input("Param");
  Tensor grad = ctx.Input("Grad");
  if (param.dims() != grad.dims()) {
    throw Error("Grad " + DimsString(grad.dims()) + " must have Param's shape " + DimsString(param.dims()));
  }
  if (ctx.Input("LearningRate").numel() != 1) throw Error("LearningRate must hold one element");
  for (const auto& [out, in] : in_place) {
    if (ctx.OutputVar(out).handle() != ctx.InputVar(in).handle()) {
      throw Error(std::string("the CUDA ") + ctx.op().type() + " kernel updates in place: " + out + " must be " + in,
                  RILL_UNIMPLEMENTED);
    }
  }
}

// Output `slot`'s device memory, holding input `in`'s values, to update in place (the two
// are one variable, CheckOptimizer saw to it): the variable's own memory, or, where that
// is shared with another tensor (abi.h's tensor_share), which keeps its values, new memory
// holding a copy.
template <class T> T* InPlace(KernelContext& ctx, const char* slot, Tensor& in) {
  const T* from = in.data<T>();
  const int64_t n = in.numel();
  Tensor out = ctx.Output(slot);
  T* to = AllocateOnDevice<T>(ctx, out, in.dims());
  if (to != from && n > 0) {
    CudaCheck(cudaMemcpy(to, from, sizeof(T) * n, cudaMemcpyDeviceToDevice), "cudaMemcpy of a shared tensor");
  }
  return to;
}

template <class T> void Sgd(KernelContext& ctx) {
  UseDevice(ctx);
  CheckOptimizer(ctx, {{"ParamOut", "Param"}});
  Tensor param = ctx.Input("Param");
  Tensor grad = ctx.Input("Grad");
  Tensor lr = ctx.Input("LearningRate");
  SgdKernel<T><<<Blocks(param.numel()), kThreads>>>(InPlace<T>(ctx, "ParamOut", param), grad.data<T>(), lr.data<T>(),
                                                    param.numel());
  CheckLaunch("sgd kernel");
}

template <class T> void Momentum(KernelContext& ctx) {
  UseDevice(ctx);
  CheckOptimizer(ctx, {{"ParamOut", "Param"}, {"VelocityOut", "Velocity"}});
  Tensor param = ctx.Input("Param");
  Tensor velocity = ctx.Input("Velocity");
  if (velocity.dims() != param.dims()) throw Error("Velocity must have Param's shape " + DimsString(param.dims()));
  const std::string method = ctx.Attr<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay") {
    throw Error("regularization_method '" + method + "' is neither \"\" nor \"l2_decay\"");
  }
  const T l2 = method == "l2_decay" ? T(ctx.Attr<float>("regularization_coeff")) : T(0);
  MomentumKernel<T><<<Blocks(param.numel()), kThreads>>>(
      InPlace<T>(ctx, "ParamOut", param), ctx.Input("Grad").data<T>(), InPlace<T>(ctx, "VelocityOut", velocity),
      ctx.Input("LearningRate").data<T>(), param.numel(), T(ctx.Attr<float>("mu")), ctx.Attr<bool>("use_nesterov"),
      T(ctx.Attr<float>("rescale_grad")), l2);
  CheckLaunch("momentum kernel");
}

template <class T> void Adam(KernelContext& ctx) {
  UseDevice(ctx);
  CheckOptimizer(ctx, {{"ParamOut", "Param"}, {"Moment1Out", "Moment1"}, {"Moment2Out", "Moment2"}});
  Tensor param = ctx.Input("Param");
  Tensor m1 = ctx.Input("Moment1");
  Tensor m2 = ctx.Input("Moment2");
  if (m1.dims() != param.dims() || m2.dims() != param.dims()) {
    throw Error("Moment1 and Moment2 must have Param's shape " + DimsString(param.dims()));
  }
  for (const char* slot : {"Beta1Tensor", "Beta2Tensor", "EpsilonTensor", "SkipUpdate"}) {
    if (ctx.HasInput(slot)) {
      throw Error(std::string("the CUDA adam kernel takes beta1, beta2 and epsilon as attributes and always "
                              "updates: it has no input ") +
                      slot,
                  RILL_UNIMPLEMENTED);
    }
  }
  if (ctx.Attr<bool>("use_global_beta_pow")) {
    throw Error("the CUDA adam kernel always advances Beta1Pow and Beta2Pow (use_global_beta_pow)", RILL_UNIMPLEMENTED);
  }
  Tensor b1_pow = ctx.Input("Beta1Pow");
  Tensor b2_pow = ctx.Input("Beta2Pow");
  const T b1 = T(ctx.Attr<float>("beta1")), b2 = T(ctx.Attr<float>("beta2"));
  AdamKernel<T><<<Blocks(param.numel()), kThreads>>>(
      InPlace<T>(ctx, "ParamOut", param), ctx.Input("Grad").data<T>(), InPlace<T>(ctx, "Moment1Out", m1),
      InPlace<T>(ctx, "Moment2Out", m2), ctx.Input("LearningRate").data<T>(), b1_pow.data<T>(), b2_pow.data<T>(),
      param.numel(), b1, b2, T(ctx.Attr<float>("epsilon")));
  CheckLaunch("adam kernel");
  // beta^t advances after the update reads it; an output that is the input is updated in place.
  const auto advance = [&](const char* slot, Tensor& in, T beta) {
    if (!ctx.HasOutput(slot)) return;
    Tensor out = ctx.Output(slot);
    T* dst = out.handle() == in.handle() ? in.mutable_data<T>() : AllocateOnDevice<T>(ctx, out, {1});
    AdvancePow<T><<<1, 1>>>(in.data<T>(), dst, beta);
    CheckLaunch("adam beta power kernel");
  };
  advance("Beta1PowOut", b1_pow, b1);
  advance("Beta2PowOut", b2_pow, b2);
}

}  // namespace

void RegisterOptimizers(Registrar& r) {
  RegisterCudaFloat(r, "sgd", [](auto t) { return &Sgd<decltype(t)>; });
  RegisterCudaFloat(r, "momentum", [](auto t) { return &Momentum<decltype(t)>; });
  RegisterCudaFloat(r, "adam", [](auto t) { return &Adam<decltype(t)>; });
}

}  // namespace rill::math::cuda
