// FTRL's update of a run of elements (optimizer.cc's ftrl), compiled once per instruction
// set (isa.h) by optimizer_loops.cc: two roots (or powers) and two quotients an element are
// its work, which at SSE2's width bound it rather than the memory it moves.
//
// The update is elementwise, so a result is the same bits for any thread budget.
#ifndef RILL_MATH_OPTIMIZER_LOOPS_H_
#define RILL_MATH_OPTIMIZER_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {

// Paddle's ftrl_op: l1 and l2 as given plus 1e-10, power its lr_power.
template <class T> struct FtrlRates { T lr, l1, l2, power; };

// For i < n, with rate(a) = sqrt(a) for power -0.5, else a^-power:
//   next = squared[i] + grad[i]^2
//   linear[i] += grad[i] - (rate(next) - rate(squared[i])) / lr * param[i]
//   param[i] = |linear[i]| > l1 ? (l1 * sign(linear[i]) - linear[i]) / (rate(next) / lr + 2 l2) : 0
//   squared[i] = next
template <class T>
using FtrlLoop = void (*)(T* param, T* squared, T* linear, const T* grad, int64_t n, const FtrlRates<T>& rates);

// Instantiated by optimizer_loops.cc for each set's tag, for float and double.
template <class Set, class T>
void FtrlSteps(T* param, T* squared, T* linear, const T* grad, int64_t n, const FtrlRates<T>& rates);

template <class T> FtrlLoop<T> FtrlLoopFor() {
  return ForMathIsa([](auto set) -> FtrlLoop<T> { return &FtrlSteps<decltype(set), T>; });
}

}  // namespace rill::math

#endif  // RILL_MATH_OPTIMIZER_LOOPS_H_
