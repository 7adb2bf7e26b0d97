// Registers the parameter-server ops under a transport's names (ops.h).
#include <grpc/support/log.h>

#include "ops.h"
#include "trace.h"

namespace rill::dist {
namespace {

// Each plugin links its own copy of the ops, so this is that plugin's transport.
Transport& Registered() {
  static Transport transport;
  return transport;
}

// gRPC's own log goes through the host's: its errors are details of ours (which say what
// failed and where), so they show at --log-level info.
void ForwardGrpcLog(gpr_log_func_args* args) {
  Log(args->severity == GPR_LOG_SEVERITY_ERROR ? RILL_LOG_INFO : RILL_LOG_DEBUG, std::string("grpc: ") + args->message);
}

// This plugin's tracing calls, for the shared library's spans (trace.h).
bool TracingHere() { return Tracing(); }
void RecordHere(const char* category, const std::string& name, int64_t start_ns, int64_t end_ns,
                const std::string& detail) {
  TraceRecord(category, name, start_ns, end_ns, detail);
}

}  // namespace

const Transport& ThisTransport() { return Registered(); }

void RegisterOps(Registrar& r, const Transport& transport) {
  gpr_set_log_function(&ForwardGrpcLog);
  Tracer tracer;
  tracer.active = &TracingHere;
  tracer.now = &TraceNow;
  tracer.record = &RecordHere;
  SetTracer(tracer);
  Registered() = transport;
  RegisterSend(r);
  RegisterListenAndServ(r);
  RegisterRecv(r);
  RegisterPrefetch(r);
}

}  // namespace rill::dist
