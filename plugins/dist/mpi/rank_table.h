// rank_table.h — which rank of the MPI job is which pserver and which trainer.
//
// As the MPI seed says, every process learns its rank and the rank -> role mapping, kept
// here for the life of the process. The first MPI op of each process joins with its role
// (pserver of an endpoint, or trainer); the roles are exchanged among all ranks once
// (MpiWorld::AllGather, bounded by the deadline). Trainers are numbered by rank: the
// trainer of the lowest rank is trainer 0. One process has one role.
#ifndef RILL_DIST_MPI_RANK_TABLE_H_
#define RILL_DIST_MPI_RANK_TABLE_H_

#include <chrono>
#include <string>
#include <vector>

namespace rill::dist {

struct Role {
  bool pserver = false;
  std::string endpoint;  // the pserver's
};

class RankTable {
 public:
  // The job's table; the first call exchanges roles, later ones check `mine` is the same.
  static const RankTable& Join(const Role& mine, std::chrono::milliseconds deadline);

  // The rank of the pserver serving `endpoint`; throws naming every pserver if none.
  int PserverRank(const std::string& endpoint) const;
  // This process's index among the trainers.
  int TrainerIndex() const;
  const Role& RoleOf(int rank) const { return roles_.at(static_cast<size_t>(rank)); }
  // "rank 0: pserver 127.0.0.1:6170; rank 1: trainer 0; ...", for errors and logs.
  std::string Describe() const;

 private:
  std::vector<Role> roles_;  // by rank
  int rank_ = -1;
};

}  // namespace rill::dist

#endif  // RILL_DIST_MPI_RANK_TABLE_H_
