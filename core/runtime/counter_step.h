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
#include <type_traits>

#include "core/registry/registry.h"
#include "core/runtime/native_scalar.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

struct CounterStep {
  uint32_t counter = 0, next = 0, limit = 0, cond = 0;  // frame indices of i, j, n, cond
  uint32_t dtypes = 0;  // bit d set: both ops have CPU kernels for dtype d
  // The increment's step as its kernel adds it to each dtype: the attribute read as a
  // float, then cast to T (Step<T>()).
  int64_t step_i64 = 1;
  double step_f64 = 1;
  int32_t step_i32 = 1;
  float step_f32 = 1;

  // The fused step when `increment` and `less_than` are that pair, else nothing.
  static std::optional<CounterStep> Match(const RillOpInfo& increment, const RillOpInfo& less_than,
                                          const Registry& registry);

  // Runs the pair on the block's resolved variables and returns the condition it wrote
  // (0 or 1); -1, having changed nothing, when the values are not of the shape this step
  // handles. Inline up to the usual step (RunInPlace), which a loop runs every step.
  [[gnu::always_inline]] int Run(Variable* const* frame) const {
    const int wrote = next == counter ? RunInPlace(frame) : -1;
    return wrote >= 0 ? wrote : RunGeneral(frame);
  }

 private:
  // The usual step, checked and written in place: i counted in place (j is i), i and n
  // one-element CPU tensors of one dtype and rank, cond the bool one of that rank, i and
  // cond owning their memory, as the last step left them. -1, having changed nothing,
  // otherwise. Forced inline: a loop's step is a few of these loads and compares, and the
  // call, with its saved registers, cost as much again.
  [[gnu::always_inline]] int RunInPlace(Variable* const* frame) const {
    Tensor* ti = TensorIn(frame[counter]);
    const Tensor* tn = TensorIn(frame[limit]);
    Tensor* tc = TensorIn(frame[cond]);
    if (ti == nullptr || tn == nullptr || tc == nullptr) return -1;
    const int32_t key = ti->host_scalar_key();
    if (key < 0 || tn->host_scalar_key() != key) return -1;
    void* count = ti->OwnData();
    bool* go_on = static_cast<bool*>(InPlaceScalar(*tc, RILL_BOOL, static_cast<size_t>(key >> 8)));
    if (count == nullptr || go_on == nullptr) return -1;
    const int32_t dtype = key & 0xff;
    if (dtype >= 32 || (dtypes >> dtype & 1) == 0) return -1;
    WithNativeScalarType(dtype, [&](auto type) {
      using T = decltype(type);
      const T j = *static_cast<T*>(count) + Step<T>();
      *static_cast<T*>(count) = j;
      *go_on = j < *tn->data_as<T>();
    });
    return *go_on;
  }
  template <class T>
  T Step() const {
    if constexpr (std::is_same_v<T, int32_t>) return step_i32;
    else if constexpr (std::is_same_v<T, int64_t>) return step_i64;
    else if constexpr (std::is_same_v<T, float>) return step_f32;
    else return step_f64;
  }
  // Any other step the kernels would take without broadcasting (j its own variable, or
  // made empty; cond empty): written through ScalarSlot.
  int RunGeneral(Variable* const* frame) const;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_COUNTER_STEP_H_
