// plugins/math/cuda/device_output.h — where a CUDA kernel writes an output that may be one
// of its inputs.
//
// Allocating an output tensor can free or reuse the memory of the variable it lives in. A
// kernel that reads one element to write another (a GEMM, a concat) must not do that to a
// variable it still reads. DeviceOutput writes straight into the output tensor unless the
// output's variable is one of the inputs given; then it writes into scratch memory (scratch.h),
// copied into the output by Finish(), once the inputs are no longer read. The common case
// allocates nothing extra.
#ifndef RILL_PLUGINS_MATH_CUDA_DEVICE_OUTPUT_H_
#define RILL_PLUGINS_MATH_CUDA_DEVICE_OUTPUT_H_

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "scratch.h"

namespace rill::math::cuda {

// The variables of every argument of input `slot`, or of each of `slots`.
inline std::vector<RillVariable*> InputVars(KernelContext& ctx, const char* slot) {
  std::vector<RillVariable*> vars;
  for (size_t i = 0; i < ctx.op().InputCount(slot); ++i) vars.push_back(ctx.InputVar(slot, i).handle());
  return vars;
}
inline std::vector<RillVariable*> InputVars(KernelContext& ctx, std::initializer_list<const char*> slots) {
  std::vector<RillVariable*> vars;
  for (const char* slot : slots) {
    const std::vector<RillVariable*> of_slot = InputVars(ctx, slot);
    vars.insert(vars.end(), of_slot.begin(), of_slot.end());
  }
  return vars;
}

template <class T> class DeviceOutput {
 public:
  // Output `slot`[index] with `dims`, checked against the variables in `inputs`.
  DeviceOutput(KernelContext& ctx, const char* slot, size_t index, std::vector<int64_t> dims,
               const std::vector<RillVariable*>& inputs)
      : ctx_(ctx), slot_(slot), index_(index), dims_(std::move(dims)) {
    n_ = 1;
    for (int64_t d : dims_) n_ *= d;
    RillVariable* out = ctx.OutputVar(slot, index).handle();
    aliased_ = std::find(inputs.begin(), inputs.end(), out) != inputs.end();
    if (aliased_) {
      p_ = ScratchAlloc<T>(n_);
    } else {
      Tensor t = ctx.Output(slot, index);
      p_ = AllocateOnDevice<T>(ctx, t, dims_);
    }
  }
  ~DeviceOutput() {
    if (aliased_) ScratchFree(p_);
  }
  DeviceOutput(const DeviceOutput&) = delete;
  DeviceOutput& operator=(const DeviceOutput&) = delete;

  T* get() const { return p_; }

  // Call after the last kernel that reads the inputs has been launched.
  void Finish() {
    if (!aliased_) return;
    Tensor t = ctx_.Output(slot_, index_);
    T* po = AllocateOnDevice<T>(ctx_, t, dims_);
    CudaCheck(cudaMemcpyAsync(po, p_, sizeof(T) * n_, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
  }

 private:
  KernelContext& ctx_;
  const char* slot_;
  size_t index_;
  std::vector<int64_t> dims_;
  int64_t n_;
  bool aliased_ = false;
  T* p_ = nullptr;
};

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_DEVICE_OUTPUT_H_
