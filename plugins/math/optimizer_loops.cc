// FTRL's loop (optimizer_loops.h) for one instruction set: CMakeLists.txt compiles this file
// once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "optimizer_loops.h"

#include <algorithm>

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "optimizer_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

template <class Set, class T>
void FtrlSteps(T* param, T* squared, T* linear, const T* grad, int64_t n, const FtrlRates<T>& rates) {
  // Blocks whose temporaries live on the stack.
  constexpr int64_t kBlock = 1024;
  using Block = Eigen::Array<T, Eigen::Dynamic, 1, 0, kBlock, 1>;
  const T lr = rates.lr, l1 = rates.l1, l2 = rates.l2, power = rates.power;
  const auto rate = [power](const auto& a) -> Block {
    return power == T(-0.5) ? Block(a.sqrt()) : Block(a.pow(-power));
  };
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t k = std::min(kBlock, n - b);
    const ConstVecMap<T> g(grad + b, k);
    VecMap<T> sq(squared + b, k), lin(linear + b, k), p(param + b, k);
    const Block next = sq + g.square(), next_rate = rate(next);
    lin += g - (next_rate - rate(Block(sq))) / lr * p;
    const Block shrunk = (l1 * lin.sign() - lin) / (next_rate / lr + T(2) * l2);
    p = (lin.abs() > l1).select(shrunk, T(0));
    sq = next;
  }
}

template void FtrlSteps<RILL_MATH_ISA_TAG, float>(float*, float*, float*, const float*, int64_t,
                                                  const FtrlRates<float>&);
template void FtrlSteps<RILL_MATH_ISA_TAG, double>(double*, double*, double*, const double*, int64_t,
                                                   const FtrlRates<double>&);

}  // namespace rill::math
