#include "isa.h"

#include <cstdlib>
#include <string>

#include "kernels.h"

namespace rill::math {
namespace {

Isa Detected() {
#if defined(RILL_MATH_X86_ISAS)
  // GCC's and Clang's cpu checks also ask the OS (XGETBV) whether it saves the registers.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kBaseline;
}

Isa Chosen() {
  const Isa best = Detected();
  const char* env = std::getenv("RILL_MATH_ISA");
  if (env == nullptr || *env == '\0') return best;
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (IsaName(isa) == std::string(env)) return isa < best ? isa : best;
  }
  throw Error(std::string("RILL_MATH_ISA is '") + env + "'; it names one of baseline, avx2, avx512");
}

}  // namespace

Isa MathIsa() {
  static const Isa isa = Chosen();
  return isa;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kBaseline: break;
  }
  return "baseline";
}

}  // namespace rill::math
