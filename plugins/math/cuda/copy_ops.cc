// CUDA ops that only move bytes, on the GPU's copy engines: assign (any dtype), sum_grad,
// concat and split and their gradients (each the other's forward), fp32/fp64.
#include "../assign.h"
#include "../shape.h"
#include "device_output.h"
#include "ops.h"
#include "scratch.h"

namespace rill::math::cuda {
namespace {

// Copies `height` rows of `width` elements from src (rows `src_pitch` apart) to dst (rows
// `dst_pitch` apart), on the device.
template <class T>
void CopyRows(T* dst, int64_t dst_pitch, const T* src, int64_t src_pitch, int64_t width, int64_t height) {
  if (width == 0 || height == 0) return;
  CudaCheck(cudaMemcpy2DAsync(dst, sizeof(T) * dst_pitch, src, sizeof(T) * src_pitch, sizeof(T) * width, height,
                              cudaMemcpyDeviceToDevice, 0),
            "cudaMemcpy2DAsync");
}

// Joins the tensors of input slot `in` along `axis` into output `out_slot` (concat, and
// split's gradient).
template <class T> void JoinAlong(KernelContext& ctx, const char* in, const char* out_slot) {
  UseDevice(ctx);
  const size_t n = ctx.op().InputCount(in);
  std::vector<Tensor> xs;
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(ctx.Input(in, i));
    dims.push_back(xs.back().dims());
  }
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), dims[0].size());
  const std::vector<int64_t> out_dims = ConcatDims(dims, axis);
  const int64_t pre = Product(out_dims, 0, axis), post = Product(out_dims, axis + 1, out_dims.size());
  const int64_t row = out_dims[axis] * post;
  DeviceOutput<T> out(ctx, out_slot, 0, out_dims, InputVars(ctx, in));
  int64_t offset = 0;  // along a row of the output
  for (size_t i = 0; i < n; ++i) {
    const int64_t chunk = dims[i][axis] * post;
    CopyRows(out.get() + offset, row, xs[i].data<T>(), chunk, chunk, pre);
    offset += chunk;
  }
  out.Finish();
}

// Cuts `src` (dims `d`) along `axis` into pieces of `sizes` written to the outputs of
// `out_slot` (split, and concat's gradient); outputs named RILL_EMPTY_VAR_NAME are skipped.
template <class T>
void CutAlong(KernelContext& ctx, Tensor src, const std::vector<int64_t>& d, size_t axis,
              const std::vector<int64_t>& sizes, const char* out_slot, const std::vector<RillVariable*>& inputs) {
  const int64_t pre = Product(d, 0, axis), post = Product(d, axis + 1, d.size()), row = d[axis] * post;
  const OpInfo op = ctx.op();
  // An output that is also an input would be overwritten while later pieces are cut from it.
  const T* from = src.data<T>();
  T* copy = nullptr;
  for (size_t o = 0; o < sizes.size() && copy == nullptr; ++o) {
    if (std::find(inputs.begin(), inputs.end(), ctx.OutputVar(out_slot, o).handle()) == inputs.end()) continue;
    copy = ScratchAlloc<T>(src.numel());
    CudaCheck(cudaMemcpyAsync(copy, from, sizeof(T) * src.numel(), cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
    from = copy;
  }
  int64_t offset = 0;
  for (size_t o = 0; o < sizes.size(); ++o) {
    const int64_t chunk = sizes[o] * post;
    if (op.OutputName(out_slot, o) != RILL_EMPTY_VAR_NAME) {
      std::vector<int64_t> od = d;
      od[axis] = sizes[o];
      Tensor out = ctx.Output(out_slot, o);
      CopyRows(AllocateOnDevice<T>(ctx, out, od), chunk, from + offset, row, chunk, pre);
    }
    offset += chunk;
  }
  if (copy != nullptr) ScratchFree(copy);
}

template <class T> void Concat(KernelContext& ctx) { JoinAlong<T>(ctx, "X", "Out"); }
template <class T> void SplitGrad(KernelContext& ctx) { JoinAlong<T>(ctx, "Out@GRAD", "X@GRAD"); }

template <class T> void Split(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const std::vector<int64_t> sizes = SplitSections(d, axis, ctx.Attr<std::vector<int64_t>>("sections"),
                                                   ctx.Attr<int64_t>("num"), ctx.op().OutputCount("Out"));
  CutAlong<T>(ctx, x, d, axis, sizes, "Out", InputVars(ctx, "X"));
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled.
template <class T> void ConcatGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> gd = g.dims();
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), gd.size());
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < ctx.op().InputCount("X"); ++i) sizes.push_back(ctx.Input("X", i).dims()[axis]);
  std::vector<RillVariable*> inputs = InputVars(ctx, "X");
  inputs.push_back(ctx.InputVar("Out@GRAD").handle());
  CutAlong<T>(ctx, g, gd, axis, sizes, "X@GRAD", inputs);
}

// Every X@GRAD[i] = a copy of Out@GRAD.
template <class T> void SumGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor g = ctx.Input("Out@GRAD");
  const OpInfo op = ctx.op();
  for (size_t i = 0; i < op.OutputCount("X@GRAD"); ++i) {
    if (op.OutputName("X@GRAD", i) == RILL_EMPTY_VAR_NAME) continue;
    Tensor dx = ctx.Output("X@GRAD", i);
    T* p = AllocateOnDevice<T>(ctx, dx, g.dims());
    CudaCheck(cudaMemcpyAsync(p, g.data<T>(), sizeof(T) * g.numel(), cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
  }
}

}  // namespace

void RegisterCopyOps(Registrar& r) {
  r.StatefulKernel<Assign>("assign", RILL_CUDA, RILL_ANY_DTYPE);
  r.Kernel("assign_grad", RILL_CUDA, RILL_ANY_DTYPE, &AssignGradKernel);
  RegisterCudaFloat(r, "sum_grad", [](auto t) { return &SumGrad<decltype(t)>; });
  RegisterCudaFloat(r, "concat", [](auto t) { return &Concat<decltype(t)>; });
  RegisterCudaFloat(r, "concat_grad", [](auto t) { return &ConcatGrad<decltype(t)>; });
  RegisterCudaFloat(r, "split", [](auto t) { return &Split<decltype(t)>; });
  RegisterCudaFloat(r, "split_grad", [](auto t) { return &SplitGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
