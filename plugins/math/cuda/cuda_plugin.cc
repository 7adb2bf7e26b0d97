// The math plugin's CUDA half: the CUDA device (memory through the CUDA runtime) and CUDA
// kernels for the math plugin's ops: fp32/fp64 for arithmetic, pooling, batch norm and (on cuDNN) convolutions,
// every dtype the CPU has for comparisons, logical ops, cast, assign and increment. Ops it has no kernel for (the
// seeded random ops, whose values must match the CPU's, and print) run on the CPU; the
// host moves tensors between the two.
#include "ops.h"

namespace {
void Init(rill::Registrar& r) {
  rill::math::cuda::RegisterDevice(r);
  rill::math::cuda::RegisterElementwise(r);
  rill::math::cuda::RegisterActivation(r);
  rill::math::cuda::RegisterFillSumMean(r);
  rill::math::cuda::RegisterSoftmaxReduce(r);
  rill::math::cuda::RegisterOptimizers(r);
  rill::math::cuda::RegisterBlas(r);
  rill::math::cuda::RegisterCompare(r);
  rill::math::cuda::RegisterCopyOps(r);
  rill::math::cuda::RegisterCastIncrement(r);
  rill::math::cuda::RegisterPool(r);
  rill::math::cuda::RegisterBatchNorm(r);
#if RILL_WITH_CUDNN
  rill::math::cuda::RegisterConv(r);
#endif
}
}  // namespace

RILL_PLUGIN("math_cuda", RILL_PROJECT_VERSION, Init)
