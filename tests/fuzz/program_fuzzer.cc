// A program as `rill check` and `rill run` take it: parsed as text (first byte even) or
// read by Rill's own decoder into the compact form (odd) from the rest, then validated
// against the built-in ops and the csp plugin's, loaded from disk once; then its feed and
// fetch targets read as every front door reads them (their columns checked).
#include <string>

#include "core/api/feed_fetch_targets.h"
#include "core/errors.h"
#include "core/loader/plugin_loader.h"
#include "core/program/program.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "core/registry/registry.h"
#include "fuzz_target.h"

namespace {

const rill::core::Registry& Ops() {
  static rill::core::Registry* registry = [] {
    auto* r = new rill::core::Registry;
    rill::core::LoadOptions options;
    options.dirs = {RILL_PLUGIN_DIR};
    options.enable = {"csp"};
    rill::core::LoadPlugins(*r, options);
    return r;
  }();
  return *registry;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const auto program = data[0] % 2 == 0 ? rill::core::Program::FromProto(rill::core::ParseProgramText(bytes, "fuzz"))
                                          : rill::core::Program::Parse(bytes, "fuzz");
    rill::core::ValidateProgram(*program, Ops());
    rill::core::FeedTargets(*program);
    rill::core::FetchTargets(*program);
  } catch (const rill::core::Error&) {}
  return 0;
}
