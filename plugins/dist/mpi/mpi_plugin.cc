// The MPI transport plugin (the MPI seed; see ARCHITECTURE.md, "Distribution"): the
// parameter-server ops under their MPI names, control and metadata over gRPC, tensor
// bytes over MPI. Launched by mpirun; see docs/DISTRIBUTED.md.
#include "mpi_data_path.h"
#include "ops.h"

namespace rill::dist {
namespace {

void Init(Registrar& r) {
  Transport mpi;
  mpi.name = "MPI";
  mpi.doc =
      "Control and metadata go over gRPC; the tensor bytes over MPI, non-blocking, straight from and into "
      "the tensors (host memory: Open MPI as Debian builds it is not CUDA-aware). Every process runs under one "
      "mpirun; ranks learn each other's roles when their first MPI op runs.";
  mpi.trainer_id_doc =
      "-1: the trainer's place among the MPI job's trainer ranks (RILL_TRAINER_ID, if set, must agree)";
  mpi.send = "send_mpi";
  mpi.recv = "recv_mpi";
  mpi.listen_and_serv = "listen_and_serv_mpi";
  mpi.prefetch = "prefetch_mpi";
  mpi.join_as_trainer = &JoinMpiAsTrainer;
  mpi.join_as_pserver = &JoinMpiAsPserver;
  mpi.failed = &EndMpiJobAtExit;
  RegisterOps(r, mpi);
}

}  // namespace
}  // namespace rill::dist

RILL_PLUGIN("dist_mpi", RILL_PROJECT_VERSION, rill::dist::Init)
