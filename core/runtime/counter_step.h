// core/runtime/counter_step.h — a counted loop's tail, run as one native step.
//
// Fluid writes `for i in range(n)` as a `while` whose body ends with
//     increment(X=i) -> Out=j;  less_than(X=j, Y=n) -> Out=cond
// (j is usually i itself). Dispatching those two ops costs more than a channel hand-off,
// so the executor recognises the pair when it prepares a block (CounterStep::Match) and
// runs it natively (Run): j = i + step; cond = j < n, exactly what the two kernels write.
//
// Contract:
//  - Run does the step only for what the kernels would do without broadcasting: i and n
//    one-element CPU tensors of the same dtype (int32, int64, fp32 or fp64) and dims, j
//    and cond empty or holding tensors. Anything else returns false, having changed
//    nothing, and the executor runs the two ops as usual (their kernels give the errors).
//  - Match pairs only ops whose kernels for those dtypes the registry holds, so a fused
//    step never runs where the ops themselves could not.
#ifndef RILL_CORE_RUNTIME_COUNTER_STEP_H_
#define RILL_CORE_RUNTIME_COUNTER_STEP_H_

#include <cstdint>
#include <optional>

#include "core/registry/registry.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

struct CounterStep {
  uint32_t counter = 0, next = 0, limit = 0, cond = 0;  // frame indices of i, j, n, cond
  double step = 1;
  uint32_t dtypes = 0;  // bit d set: both ops have CPU kernels for dtype d

  // The fused step when `increment` and `less_than` are that pair, else nothing.
  static std::optional<CounterStep> Match(const RillOpInfo& increment, const RillOpInfo& less_than,
                                          const Registry& registry);

  // Runs the pair on the block's resolved variables and returns the condition it wrote
  // (0 or 1); -1, having changed nothing, when the values are not of the shape this step
  // handles.
  int Run(Variable* const* frame) const;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_COUNTER_STEP_H_
