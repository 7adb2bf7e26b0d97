// The gRPC transport plugin (see ARCHITECTURE.md, "Distribution").
#include "ops.h"

namespace rill::dist {
namespace {

void Init(Registrar& r) {
  Transport grpc;
  grpc.name = "gRPC";
  grpc.doc = "The tensor bytes travel in the gRPC messages, as slices over the tensors' memory.";
  grpc.trainer_id_doc = "-1: RILL_TRAINER_ID or 0";
  grpc.send = "send";
  grpc.recv = "recv";
  grpc.listen_and_serv = "listen_and_serv";
  RegisterOps(r, grpc);
}

}  // namespace
}  // namespace rill::dist

RILL_PLUGIN("dist_grpc", "1.0", rill::dist::Init)
