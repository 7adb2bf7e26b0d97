// CUDA cast (any of bool, int32, int64, fp16, fp32, fp64 to any other) and its gradient
// (fp16/fp32/fp64), and increment (a one-element counter, fp32, fp64, int32, int64). fp16
// exists on the device only: the CPU kernels have none.
#include "broadcast.cuh"
#include "device_output.h"
#include "half.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

template <class From, class To> struct ConvertAt {
  const From* x;
  __device__ To operator()(int64_t i, int64_t) const { return ConvertValue<To>(x[i]); }
};

// out (dims of `x`, dtype To, output `slot`) = x converted; out may be x's variable.
template <class From, class To>
void Convert(KernelContext& ctx, Tensor x, const char* slot, const std::vector<RillVariable*>& inputs) {
  const int64_t total = x.numel();
  DeviceOutput<To> out(ctx, slot, 0, x.dims(), inputs);
  LaunchBroadcast(out.get(), total, Broadcast{1, total, 1}, ConvertAt<From, To>{x.data<From>()});
  CheckLaunch("cast kernel");
  out.Finish();
}

template <class From> void Cast(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  VisitDataType<bool, int32_t, int64_t, __half, float, double>(
      static_cast<int32_t>(ctx.Attr<int64_t>("out_dtype")), "cast out_dtype",
      [&](auto to) { Convert<From, decltype(to)>(ctx, x, "Out", InputVars(ctx, "X")); });
}

// X@GRAD = Out@GRAD converted back to X's dtype.
template <class T> void CastGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<RillVariable*> inputs = {ctx.InputVar("X").handle(), ctx.InputVar("Out@GRAD").handle()};
  VisitDataType<__half, float, double>(g.dtype(), "cast_grad Out@GRAD",
                                       [&](auto from) { Convert<decltype(from), T>(ctx, g, "X@GRAD", inputs); });
}

template <class T> __global__ void IncrementKernel(const T* x, T* out, T step) { out[0] = x[0] + step; }

// Stateful so that `step` is read once per op instance, as on the CPU.
template <class T> class Increment {
 public:
  explicit Increment(const OpInfo& op) : step_(static_cast<T>(op.Attr<float>("step"))) {}

  void Compute(KernelContext& ctx) {
    UseDevice(ctx);
    Tensor x = ctx.Input("X");
    if (x.numel() != 1) throw Error("X must have exactly one element, it has " + std::to_string(x.numel()));
    // One element: Out, even when it is X, is written by the thread that read X.
    const T* px = x.data<T>();
    Tensor out = ctx.Output("Out");
    IncrementKernel<T><<<1, 1>>>(px, AllocateOnDevice<T>(ctx, out, x.dims()), step_);
    CheckLaunch("increment kernel");
  }

 private:
  const T step_;
};

}  // namespace

void RegisterCastIncrement(Registrar& r) {
  r.Kernel("cast", RILL_CUDA, RILL_BOOL, &Cast<bool>);
  r.Kernel("cast", RILL_CUDA, RILL_INT32, &Cast<int32_t>);
  r.Kernel("cast", RILL_CUDA, RILL_INT64, &Cast<int64_t>);
  RegisterCudaFloat(r, "cast", [](auto t) { return &Cast<decltype(t)>; });
  RegisterCudaFloat(r, "cast_grad", [](auto t) { return &CastGrad<decltype(t)>; });
  r.Kernel("cast", RILL_CUDA, RILL_FP16, &Cast<__half>);
  r.Kernel("cast_grad", RILL_CUDA, RILL_FP16, &CastGrad<__half>);
  r.StatefulKernel<Increment<float>>("increment", RILL_CUDA, RILL_FP32);
  r.StatefulKernel<Increment<double>>("increment", RILL_CUDA, RILL_FP64);
  r.StatefulKernel<Increment<int32_t>>("increment", RILL_CUDA, RILL_INT32);
  r.StatefulKernel<Increment<int64_t>>("increment", RILL_CUDA, RILL_INT64);
}

}  // namespace rill::math::cuda
