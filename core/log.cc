#include "core/log.h"

#include <memory>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace rill::core {

spdlog::logger& Logger() {
  static spdlog::logger* const logger = [] {
    // Never destroyed: plugins and task threads may log while the process exits.
    auto* l = new spdlog::logger("rill", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("rill: [%l] %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *logger;
}

}  // namespace rill::core
