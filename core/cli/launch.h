// core/cli/launch.h — `rill launch`: a local parameter-server cluster, one process each.
//
// Reads the cluster a `rill transpile` output directory describes (cluster.txt: the
// transport, trainer count and pserver endpoints), starts one `rill run` per pserver and
// per trainer ("{trainer}" in a trainer's arguments replaced by its index j), and writes
// each process's output to LOG_DIR/pserver.I.log or trainer.J.log.
//  - gRPC: each process spawned here, trainer j with RILL_TRAINER_ID=j.
//  - MPI: one mpirun (from PATH) runs them all, pservers first: rank i is pserver i, rank
//    P+j trainer j, as the dist_mpi plugin numbers them. mpirun's own output goes to
//    LOG_DIR/mpirun.log; as root it gets --allow-run-as-root, and --oversubscribe always
//    (more processes than cores is the point of a local cluster).
// It returns when every process exited 0. When one fails, the others are stopped and
// the error names the process, its exit status and its log's last lines; pservers still
// running a deadline after the last trainer ended are stopped and reported too.
#ifndef RILL_CORE_CLI_LAUNCH_H_
#define RILL_CORE_CLI_LAUNCH_H_

#include <chrono>
#include <string>
#include <vector>

namespace rill::core {

struct ClusterSpec {
  std::string transport = "grpc";  // or "mpi"
  int32_t trainers = 0;
  std::vector<std::string> pservers;
  // Non-empty: the pservers checkpoint there, so `rill launch` restarts one that dies.
  std::string checkpoint_dir;
};

// How many times `rill launch` restarts one pserver of a checkpointing cluster that died.
inline constexpr int kPserverRestarts = 3;

// The manifest `rill transpile` writes beside the programs.
void WriteClusterSpec(const ClusterSpec& spec, const std::string& path);
ClusterSpec ReadClusterSpec(const std::string& path);

// One process of the cluster in DIR: process i < pservers is pserver i, the rest are the
// trainers in order (the order `rill launch` starts them in, and mpirun's ranks).
struct ClusterProcess {
  std::string name;              // "pserver 0", "trainer 1"
  std::string program, startup;  // DIR/pserver_0.pbtxt, DIR/pserver_0_startup.pbtxt
  int32_t trainer = -1;          // the trainer index, -1 for a pserver
};
ClusterProcess ProcessOf(const std::string& dir, const ClusterSpec& spec, size_t index);

// This process's rank and the job's size as a launcher gave them in the environment
// (mpirun: OMPI_COMM_WORLD_RANK/SIZE; PMIx: PMIX_RANK; MPICH's Hydra: PMI_RANK/PMI_SIZE;
// Slurm's srun: SLURM_PROCID/SLURM_NTASKS, asked last, since an mpirun inside a Slurm
// allocation passes the batch script's own on to every rank); false if none did.
bool LauncherRank(int64_t* rank, int64_t* size);

// This process's index in the cluster (ProcessOf) from the environment Paddle's
// parameter-server jobs set (its role maker: Kubernetes and PaddleCloud jobs): TRAINING_ROLE
// PSERVER or TRAINER, PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, and a trainer's
// PADDLE_TRAINER_ID or a pserver's POD_IP and PADDLE_PORT (its endpoint, found in the
// list). False when TRAINING_ROLE is not set. Throws Error naming the variable that is
// missing or malformed, or that disagrees with the cluster `dir` was transpiled for (its
// pservers' endpoints and trainer count, cluster.txt).
bool PaddleRoleIndex(const std::string& dir, const ClusterSpec& spec, size_t* index);

// "{trainer}" in `s` replaced by `trainer`.
std::string WithTrainer(std::string s, int32_t trainer);

struct LaunchOptions {
  std::string dir;                             // rill transpile's output
  std::string transport;                       // "grpc" or "mpi"; empty: cluster.txt's
  std::string log_dir;                         // default: DIR/logs
  std::vector<std::string> common_args;        // for every process (plugin options, log level)
  std::vector<std::string> trainer_args;       // for trainers only ({trainer} = index)
  std::chrono::milliseconds deadline{120000};  // RILL_RPC_DEADLINE_MS for all, and the pservers' grace
  bool deadline_given = false;
  // Non-empty: each process writes its trace there (rill run --profile), named after its
  // log (trainer.J.json, pserver.P.json); the directory is made before any starts.
  std::string profile_dir;
};

// Runs the cluster; while it runs, shows each process's state (cluster_status.h: on a
// terminal a block of lines, else a line per change, on stderr; gRPC only: under mpirun
// the processes are mpirun's); prints each trainer's output, prefixed "[trainer J] ", at
// the end, without its progress lines. Throws Error when a process fails.
void Launch(const LaunchOptions& options);

}  // namespace rill::core

#endif  // RILL_CORE_CLI_LAUNCH_H_
