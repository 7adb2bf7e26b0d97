// The gRPC transport plugin (see ARCHITECTURE.md, "Distribution"): control and metadata
// over gRPC; tensors of 1 MiB and more over a TCP connection beside it (tcp_data_path.h),
// or in the gRPC messages under TLS or RILL_DATA_PATH=message. It also provides
// `rill status`, which asks pservers of either transport.
#include "ops.h"
#include "status_command.h"
#include "tcp_data_path.h"

namespace rill::dist {
namespace {

void Init(Registrar& r) {
  Transport grpc;
  grpc.name = "gRPC";
  grpc.doc =
      "Tensors under 1 MiB travel in the gRPC messages, as slices over the tensors' memory; larger ones "
      "over one TCP connection per trainer and pserver, opened through the gRPC service (so the token "
      "applies), straight from and into the tensors. With TLS, or RILL_DATA_PATH=message, every tensor "
      "travels in the (encrypted) messages.";
  grpc.trainer_id_doc = "-1: RILL_TRAINER_ID or 0";
  grpc.send = "send";
  grpc.recv = "recv";
  grpc.listen_and_serv = "listen_and_serv";
  grpc.prefetch = "prefetch";
  grpc.join_as_trainer = [](int32_t*, const TransportOptions& options) { return TcpTrainerDataPath(options); };
  grpc.join_as_pserver = &ListenTcpDataPath;
  RegisterOps(r, grpc);
  RegisterStatusCommand(r);
}

}  // namespace
}  // namespace rill::dist

RILL_PLUGIN("dist_grpc", RILL_PROJECT_VERSION, rill::dist::Init)
