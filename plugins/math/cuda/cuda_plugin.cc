// The math plugin's CUDA half: the CUDA device (memory through the CUDA runtime) and CUDA
// kernels, fp32/fp64, for the math plugin's training ops. Ops it has no kernel for
// (comparisons, logical ops, cast, concat/split, random, increment) run on the CPU; the
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
}
}  // namespace

RILL_PLUGIN("math_cuda", "0.1.0", Init)
