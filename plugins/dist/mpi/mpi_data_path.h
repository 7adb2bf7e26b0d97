// mpi_data_path.h — the DataPath of dist_mpi: tensor bytes over MPI, routed by the job's
// RankTable (data_path.h says how the protocol uses it).
#ifndef RILL_DIST_MPI_MPI_DATA_PATH_H_
#define RILL_DIST_MPI_MPI_DATA_PATH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "data_path.h"
#include "options.h"

namespace rill::dist {

// Joins the job as a trainer. *trainer_id: the id asked for (-1: none) on entry, the
// trainer's index by rank on return; a different id asked for is an error.
DataPath* JoinMpiAsTrainer(int32_t* trainer_id, const TransportOptions& options);
// Joins the job as the pserver of `endpoint` (the path lives as long as the process).
std::shared_ptr<DataPath> JoinMpiAsPserver(const std::string& endpoint, const TransportOptions& options);
// An op failed: at exit, end the whole job (MPI_Abort) rather than finalize, which would
// wait for every other rank to finish.
void EndMpiJobAtExit();

}  // namespace rill::dist

#endif  // RILL_DIST_MPI_MPI_DATA_PATH_H_
