// core/log.h — the logger of the host and of every plugin (through the ABI's `log`).
//
// Contract: lines go to stderr as "rill: [level] message", never to stdout, so a program's
// own output, a fetched variable or a benchmark's JSON is never mixed with them. The level
// starts at info; the `rill` binary sets it from --log-level, an embedder with
// Logger().set_level. The logger is Rill's own, not spdlog's default or registered one, so
// an embedder's spdlog set-up and ours do not touch each other.
#ifndef RILL_CORE_LOG_H_
#define RILL_CORE_LOG_H_

#include <spdlog/logger.h>

namespace rill::core {

spdlog::logger& Logger();

}  // namespace rill::core

#endif  // RILL_CORE_LOG_H_
