// The host's own ops as a plugin named "core": registered through the same ABI table as
// every loaded plugin, so the ABI is exercised even with no plugin on disk.
#include "core/ops/control_flow.h"
#include "core/ops/feed_fetch.h"

namespace {
void InitBuiltins(rill::Registrar& r) {
  rill::core::RegisterWhile(r);
  rill::core::RegisterConditionalBlock(r);
  rill::core::RegisterSaveLoad(r);
  rill::core::RegisterFeedFetch(r);
}
}  // namespace

extern "C" RILL_PLUGIN_ENTRY(RillGetBuiltinPlugin, "core", RILL_PROJECT_VERSION, InitBuiltins)
