// bench/bench_util.h — what the benchmark binaries share: the registry of this build's
// shipped plugins, loaded once.
#ifndef RILL_BENCH_BENCH_UTIL_H_
#define RILL_BENCH_BENCH_UTIL_H_

#include "core/loader/plugin_loader.h"
#include "core/registry/registry.h"

namespace rill::bench {

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
