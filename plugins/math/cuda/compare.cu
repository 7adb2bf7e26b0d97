// CUDA comparisons (Out: bool = X op Y, for fp32, fp64, int32 and int64; equal and
// not_equal for bool too) and logical ops on bool tensors, with Fluid's broadcasting.
// With force_cpu, a comparison still runs here but leaves Out on the CPU: that is where a
// while loop's condition is read.
#include "broadcast.cuh"
#include "device_output.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

struct Less {
  template <class T> __device__ bool operator()(T a, T b) const { return a < b; }
};
struct LessEq {
  template <class T> __device__ bool operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  template <class T> __device__ bool operator()(T a, T b) const { return a > b; }
};
struct GreaterEq {
  template <class T> __device__ bool operator()(T a, T b) const { return a >= b; }
};
struct Eq {
  template <class T> __device__ bool operator()(T a, T b) const { return a == b; }
};
struct NotEq {
  template <class T> __device__ bool operator()(T a, T b) const { return a != b; }
};
struct And {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  __device__ bool operator()(bool a, bool b) const { return a != b; }
};

template <class F, class T> struct CompareAt {
  const T *x, *y;
  __device__ bool operator()(int64_t i, int64_t yi) const { return F{}(x[i], y[yi]); }
};

// Out = F(X, Y); comparisons (kForceCpuAttr) leave Out on the CPU when force_cpu is set.
template <class T, class F, bool kForceCpuAttr> void Compare(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const Broadcast b = ComputeBroadcast(x.dims(), y.dims(), ctx.Attr<int64_t>("axis"));
  const CompareAt<F, T> f{x.data<T>(), y.data<T>()};
  const std::vector<int64_t> dims = x.dims();
  const int64_t total = x.numel();
  if (!(kForceCpuAttr && ctx.Attr<bool>("force_cpu"))) {
    DeviceOutput<bool> out(ctx, "Out", 0, dims, {ctx.InputVar("X").handle(), ctx.InputVar("Y").handle()});
    LaunchBroadcast(out.get(), total, b, f);
    CheckLaunch("comparison kernel");
    out.Finish();
    return;
  }
  // Out goes to the host: computed on the device first, then copied over.
  bool* result = ScratchAlloc<bool>(total);
  LaunchBroadcast(result, total, b, f);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    Tensor out = ctx.Output("Out");
    e = cudaMemcpy(out.Allocate(RILL_BOOL, dims.data(), dims.size()), result, total, cudaMemcpyDeviceToHost);
  }
  ScratchFree(result);
  CudaCheck(e, "comparison");
}

struct NotAt {
  const bool* x;
  __device__ bool operator()(int64_t i, int64_t) const { return !x[i]; }
};

void LogicalNot(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const bool* px = x.data<bool>();
  Tensor out = ctx.Output("Out");
  const std::vector<int64_t> dims = x.dims();
  auto* po = static_cast<bool*>(out.Allocate(RILL_BOOL, dims.data(), dims.size(), RILL_CUDA, ctx.device_id()));
  LaunchBroadcast(po, x.numel(), Broadcast{1, x.numel(), 1}, NotAt{px});
  CheckLaunch("logical_not kernel");
}

template <class F> void RegisterComparison(Registrar& r, const char* op, bool with_bool) {
  r.Kernel(op, RILL_CUDA, RILL_FP32, &Compare<float, F, true>);
  r.Kernel(op, RILL_CUDA, RILL_FP64, &Compare<double, F, true>);
  r.Kernel(op, RILL_CUDA, RILL_INT32, &Compare<int32_t, F, true>);
  r.Kernel(op, RILL_CUDA, RILL_INT64, &Compare<int64_t, F, true>);
  if (with_bool) r.Kernel(op, RILL_CUDA, RILL_BOOL, &Compare<bool, F, true>);
}

}  // namespace

void RegisterCompare(Registrar& r) {
  RegisterComparison<Less>(r, "less_than", false);
  RegisterComparison<LessEq>(r, "less_equal", false);
  RegisterComparison<Greater>(r, "greater_than", false);
  RegisterComparison<GreaterEq>(r, "greater_equal", false);
  RegisterComparison<Eq>(r, "equal", true);
  RegisterComparison<NotEq>(r, "not_equal", true);
  r.Kernel("logical_and", RILL_CUDA, RILL_BOOL, &Compare<bool, And, false>);
  r.Kernel("logical_or", RILL_CUDA, RILL_BOOL, &Compare<bool, Or, false>);
  r.Kernel("logical_xor", RILL_CUDA, RILL_BOOL, &Compare<bool, Xor, false>);
  r.Kernel("logical_not", RILL_CUDA, RILL_BOOL, &LogicalNot);
}

}  // namespace rill::math::cuda
