#include "core/cli/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rill::core {

std::optional<MallocTuning> ParseMallocTuning(const std::string& name) {
  if (name == "tuned") return MallocTuning::kTuned;
  if (name == "default") return MallocTuning::kDefault;
  return std::nullopt;
}

void ApplyMallocTuning(MallocTuning tuning) {
#if defined(__GLIBC__)
  if (tuning != MallocTuning::kTuned) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const auto user_set = [&](const char* tunable) { return tunables != nullptr && std::strstr(tunables, tunable); };
  if (!user_set("glibc.malloc.mxfast")) mallopt(M_MXFAST, 0);
  if (!user_set("glibc.malloc.trim_threshold") && std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) {
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  if (!user_set("glibc.malloc.mmap_threshold") && std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  }
#else
  (void)tuning;
#endif
}

}  // namespace rill::core
