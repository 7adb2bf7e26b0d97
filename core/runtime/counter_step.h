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
#include "core/runtime/native_scalar.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

// What the increment kernel adds to `i`: the attribute read as a float, then cast to T.
template <class T>
T Incremented(T i, double step) {
  return i + static_cast<T>(static_cast<float>(step));
}

struct CounterStep {
  uint32_t counter = 0, next = 0, limit = 0, cond = 0;  // frame indices of i, j, n, cond
  double step = 1;
  uint32_t dtypes = 0;  // bit d set: both ops have CPU kernels for dtype d

  // The fused step when `increment` and `less_than` are that pair, else nothing.
  static std::optional<CounterStep> Match(const RillOpInfo& increment, const RillOpInfo& less_than,
                                          const Registry& registry);

  // Runs the pair on the block's resolved variables and returns the condition it wrote
  // (0 or 1); -1, having changed nothing, when the values are not of the shape this step
  // handles. Inline up to the usual step (RunInPlace), which a loop runs every step.
  int Run(Variable* const* frame) const {
    const int wrote = next == counter ? RunInPlace(frame) : -1;
    return wrote >= 0 ? wrote : RunGeneral(frame);
  }

 private:
  // The usual step, checked and written in place: i counted in place (j is i), and i, n
  // and cond one-element CPU tensors of one rank that own their memory, as the last step
  // left them. -1, having changed nothing, otherwise.
  int RunInPlace(Variable* const* frame) const {
    Tensor* ti = frame[counter] != nullptr ? frame[counter]->GetTensor() : nullptr;
    const Tensor* tn = frame[limit] != nullptr ? frame[limit]->GetTensor() : nullptr;
    Tensor* tc = frame[cond] != nullptr ? frame[cond]->GetTensor() : nullptr;
    if (ti == nullptr || tn == nullptr || tc == nullptr) return -1;
    const int32_t dtype = ti->dtype();
    const int32_t rank = ti->host_scalar_rank();
    if (rank < 0 || static_cast<uint32_t>(dtype) >= 32 || (dtypes >> dtype & 1) == 0 || tn->dtype() != dtype ||
        tn->host_scalar_rank() != rank) {
      return -1;
    }
    void* count = ti->OwnData();
    bool* go_on = static_cast<bool*>(InPlaceScalar(*tc, RILL_BOOL, static_cast<size_t>(rank)));
    if (count == nullptr || go_on == nullptr) return -1;
    WithNativeScalarType(dtype, [&](auto type) {
      using T = decltype(type);
      const T j = Incremented(*static_cast<T*>(count), step);
      *static_cast<T*>(count) = j;
      *go_on = j < *tn->data_as<T>();
    });
    return *go_on;
  }
  // Any other step the kernels would take without broadcasting (j its own variable, or
  // made empty; cond empty): written through ScalarSlot.
  int RunGeneral(Variable* const* frame) const;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_COUNTER_STEP_H_
