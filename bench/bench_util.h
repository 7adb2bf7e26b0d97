// bench/bench_util.h — what the benchmark binaries share: the registry of this build's
// shipped plugins, loaded once, and glibc's malloc set as `rill run` sets it.
#ifndef RILL_BENCH_BENCH_UTIL_H_
#define RILL_BENCH_BENCH_UTIL_H_

#include "core/cli/malloc_tuning.h"
#include "core/loader/plugin_loader.h"
#include "core/registry/registry.h"

namespace rill::bench {

// A benchmark measures what the `rill` binary runs, so its process starts with the
// binary's default malloc settings (core/cli/malloc_tuning.h).
inline const bool kMallocTunedAsRill = [] {
  core::ApplyMallocTuning(core::MallocTuning::kTuned);
  return true;
}();

inline core::Registry& LoadedRegistry() {
  static core::Registry* r = [] {
    auto* reg = new core::Registry();
    core::LoadPlugins(*reg, core::LoadOptions{{RILL_PLUGIN_DIR}, {}, {}});
    return reg;
  }();
  return *r;
}

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCH_UTIL_H_
