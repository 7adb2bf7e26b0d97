// plugins/dist/trace.h — the transport's spans in the profile (`rill run --profile`).
//
// Contract: the shared library has no host table of its own (the SDK's is per plugin), so
// each transport plugin hands it its own tracing calls at init (SetTracer); until then,
// and whenever no profile is recorded, active() is false. The calls are sdk.hpp's Tracing,
// TraceNow and TraceRecord, bound to that plugin's table; any plugin's serve, since all
// reach the one host.
#ifndef RILL_PLUGINS_DIST_PS_TRACE_H_
#define RILL_PLUGINS_DIST_PS_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace rill::dist {

struct Tracer {
  bool (*active)() = [] { return false; };
  int64_t (*now)() = nullptr;
  void (*record)(const char* category, const std::string& name, int64_t start_ns, int64_t end_ns,
                 const std::string& detail) = nullptr;
};

void SetTracer(const Tracer& tracer);
const Tracer& TheTracer();

// A data path's transfer as a span: `done`, wrapped to record the span from now until it
// is called (on whichever thread ends the transfer), of `category` ("tcp", "mpi") and
// `name`, with its bytes and any error; `done` itself when no profile is recorded.
std::function<void(const std::string&)> TracedTransfer(const char* category, std::string name, size_t bytes,
                                                       std::function<void(const std::string&)> done);

}  // namespace rill::dist

#endif  // RILL_PLUGINS_DIST_PS_TRACE_H_
