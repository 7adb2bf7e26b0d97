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

#include "conv_plan.h"
#include "onednn.h"

namespace rill::math {

class OnednnConv {
 public:
  enum class Kind { kForward, kBackwardData, kBackwardWeights };

  // Each writes its result and returns true, or returns false, writing nothing, when
  // oneDNN has no implementation for the plan (the caller then computes it another way).
  // x, dx: Input's layout; y, dy: Output's; w, dw: [M, C / groups, kh, kw].
  bool Forward(const ConvPlan& p, const float* x, const float* w, float* y);
  bool BackwardData(const ConvPlan& p, const float* dy, const float* w, float* dx);
  bool BackwardWeights(const ConvPlan& p, const float* x, const float* dy, float* dw);

 private:
  struct Key {
    Kind kind;
    ConvPlan plan;
    int threads;
    bool operator==(const Key& o) const { return kind == o.kind && threads == o.threads && plan == o.plan; }
  };
  // Runs `kind` with the operands in the order the primitive takes them (see MakeCall).
  bool Run(Kind kind, const ConvPlan& p, const float* in0, const float* in1, float* out);

  OnednnCache<Key> cache_;
};

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_ONEDNN_CONV_H_
