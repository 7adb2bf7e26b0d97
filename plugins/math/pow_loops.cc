// elementwise_pow's loop (pow_loops.h) for one instruction set: CMakeLists.txt compiles this
// file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "pow_loops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.h"

#if !defined(RILL_MATH_ISA_TAG)
#error "pow_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {

template <class Set> void PowFloats(const float* x, const float* y, float* out, int64_t n) {
  constexpr int64_t kBlock = 1024;
  using Doubles = Eigen::Array<double, Eigen::Dynamic, 1, Eigen::ColMajor, kBlock, 1>;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t k = std::min(kBlock, n - begin);
    const ConstVecMap<float> xs(x + begin, k), ys(y + begin, k);
    // Widened first: Eigen evaluates an expression with a float-to-double cast in it one
    // element at a time, its log and exp included.
    const Doubles wide_x = xs.cast<double>(), wide_y = ys.cast<double>();
    const Doubles powers = (wide_y * wide_x.log()).exp();
    for (int64_t i = 0; i < k; ++i) {
      const float a = xs[i], b = ys[i];
      out[begin + i] = a > 0.0f && a < kInf && std::fabs(b) < kInf
                           ? static_cast<float>(powers[i])
                           : static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
}

template void PowFloats<RILL_MATH_ISA_TAG>(const float*, const float*, float*, int64_t);

}  // namespace rill::math
