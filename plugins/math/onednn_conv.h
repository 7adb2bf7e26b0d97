// plugins/math/onednn_conv.h — fp32 2-D convolutions (forward, backward data, backward
// weights) on oneDNN's convolution primitives, which pick the kernel and memory layout for
// this CPU (AVX2 / AVX-512) at run time.
//
// One OnednnConv belongs to one op (a stateful kernel): it keeps the primitives it made,
// keyed by the plan (shapes, strides, paddings, layout) and the thread count they were
// made for, so a prepared op running again with the same shapes creates nothing. Tensors
// stay in Fluid's layouts (NCHW or NHWC; Filter [M, C / groups, kh, kw]); where the
// primitive wants another layout, the operands are reordered into scratch memory and the
// result back. Calls may come from several threads at once (go blocks running one op).
#ifndef RILL_PLUGINS_MATH_ONEDNN_CONV_H_
#define RILL_PLUGINS_MATH_ONEDNN_CONV_H_

#include <memory>
#include <mutex>
#include <vector>

#include "conv_plan.h"

namespace rill::math {

class OnednnConv {
 public:
  OnednnConv();
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  // Each writes its result and returns true, or returns false, writing nothing, when
  // oneDNN has no implementation for the plan (the caller then computes it another way).
  // x, dx: Input's layout; y, dy: Output's; w, dw: [M, C / groups, kh, kw].
  bool Forward(const ConvPlan& p, const float* x, const float* w, float* y);
  bool BackwardData(const ConvPlan& p, const float* dy, const float* w, float* dx);
  bool BackwardWeights(const ConvPlan& p, const float* x, const float* dy, float* dw);

 private:
  enum class Kind { kForward, kBackwardData, kBackwardWeights };
  struct Entry;
  // The primitive for (kind, p, threads), made on first use; null when oneDNN has none.
  std::shared_ptr<const Entry> Find(Kind kind, const ConvPlan& p, int threads);
  // Runs `kind` with the operands in the order the primitive takes them (see Entry).
  bool Run(Kind kind, const ConvPlan& p, const float* in0, const float* in1, float* out);

  static constexpr size_t kMaxEntries = 8;  // shapes one op sees: a few batch sizes at most
  std::mutex mu_;                           // guards entries_
  std::vector<std::shared_ptr<const Entry>> entries_;  // most recently used first
};

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_ONEDNN_CONV_H_
