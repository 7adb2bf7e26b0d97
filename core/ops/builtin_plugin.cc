// The host's own ops as a plugin named "core" (core/ops/builtin_ops.h).
#include "core/ops/builtin_ops.h"

namespace {
void InitBuiltins(rill::Registrar& r) {
  rill::core::RegisterStepScopes(r);
  rill::core::RegisterWhile(r);
  rill::core::RegisterRecurrent(r);
  rill::core::RegisterConditionalBlock(r);
  rill::core::RegisterSaveLoad(r);
  rill::core::RegisterFeedFetch(r);
}
}  // namespace

extern "C" RILL_PLUGIN_ENTRY(RillGetBuiltinPlugin, "core", RILL_PROJECT_VERSION, InitBuiltins)
