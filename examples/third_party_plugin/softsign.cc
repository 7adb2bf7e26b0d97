// An example third-party op: softsign(x) = x / (1 + |x|), for fp32 and fp64 tensors.
#include <cmath>

#include "rill/sdk.hpp"

namespace {

template <class T>
void Softsign(rill::KernelContext& ctx) {
  rill::Tensor x = ctx.Input("X");
  const T* in = x.data<T>();
  T* o = ctx.AllocateOutput<T>("Out", x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] / (T(1) + std::abs(in[i]));
}

void Init(rill::Registrar& r) {
  r.Op(rill::OpSchema("softsign")
           .Doc("Out = X / (1 + |X|), elementwise.")
           .Input("X", "input tensor")
           .Output("Out", "softsign of X, same shape")
           .KernelDtypeFrom("X"));
  r.Kernel("softsign", RILL_CPU, RILL_FP32, &Softsign<float>);
  r.Kernel("softsign", RILL_CPU, RILL_FP64, &Softsign<double>);
}

}  // namespace

RILL_PLUGIN("softsign", "1.0.0", Init)
