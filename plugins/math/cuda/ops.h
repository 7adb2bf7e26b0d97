// plugins/math/cuda/ops.h — the CUDA plugin's registration functions, one per file. The
// kernels are for ops the math plugin declares; this plugin declares none of its own.
#ifndef RILL_PLUGINS_MATH_CUDA_OPS_H_
#define RILL_PLUGINS_MATH_CUDA_OPS_H_

#include "half.h"
#include "rill/sdk.hpp"

namespace rill::math::cuda {

void RegisterDevice(Registrar& r);
void RegisterElementwise(Registrar& r);
void RegisterActivation(Registrar& r);
void RegisterFillSumMean(Registrar& r);
void RegisterSoftmaxReduce(Registrar& r);
void RegisterOptimizers(Registrar& r);
void RegisterBlas(Registrar& r);
void RegisterCompare(Registrar& r);
void RegisterCopyOps(Registrar& r);
void RegisterCastIncrement(Registrar& r);
void RegisterPool(Registrar& r);
void RegisterBatchNorm(Registrar& r);
void RegisterConv(Registrar& r);  // with cuDNN (RILL_WITH_CUDNN) only

// Registers `pick(T{})` as the CUDA kernel of `op` for float and double.
template <class Pick> void RegisterCudaFloat(Registrar& r, const char* op, Pick pick) {
  r.Kernel(op, RILL_CUDA, RILL_FP32, pick(float{}));
  r.Kernel(op, RILL_CUDA, RILL_FP64, pick(double{}));
}

// Registers Kernel<T> as the stateful CUDA kernel of `op` for fp16, float and double.
template <template <class> class Kernel> void RegisterCudaStateful(Registrar& r, const char* op) {
  r.StatefulKernel<Kernel<__half>>(op, RILL_CUDA, RILL_FP16);
  r.StatefulKernel<Kernel<float>>(op, RILL_CUDA, RILL_FP32);
  r.StatefulKernel<Kernel<double>>(op, RILL_CUDA, RILL_FP64);
}

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_OPS_H_
