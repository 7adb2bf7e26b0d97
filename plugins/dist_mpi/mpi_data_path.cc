#include "mpi_data_path.h"

#include <stdexcept>

#include "mpi_world.h"
#include "rank_table.h"

namespace rill::dist {
namespace {

class MpiDataPath final : public DataPath {
 public:
  explicit MpiDataPath(const RankTable& table) : world_(MpiWorld::Get()), table_(table) {}

  v1::OutOfBand RouteTo(const std::string& endpoint) override {
    v1::OutOfBand route;
    route.set_job(world_.job());
    route.set_rank(world_.rank());
    route.set_tag(world_.NextTag());
    route.set_peer_rank(table_.PserverRank(endpoint));
    return route;
  }

  std::string Refuses(const v1::OutOfBand& route) const override {
    if (route.job() != world_.job()) {
      return "the request comes from MPI job '" + route.job() + "', this pserver is in job '" + world_.job() +
             "': run every pserver and trainer under one mpirun";
    }
    if (route.peer_rank() != world_.rank()) {
      return "the request is for rank " + std::to_string(route.peer_rank()) + ", this pserver is rank " +
             std::to_string(world_.rank());
    }
    if (route.rank() < 0 || route.rank() >= world_.size() || route.rank() == world_.rank() || route.tag() < 1) {
      return "bad route: rank " + std::to_string(route.rank()) + ", tag " + std::to_string(route.tag()) +
             " in a job of " + std::to_string(world_.size()) + " ranks";
    }
    return "";
  }

  void Send(int rank, int tag, const void* data, size_t bytes, Done done) override {
    world_.Send(rank, tag, data, bytes, std::move(done));
  }
  void Receive(int rank, int tag, void* data, size_t bytes, Done done) override {
    world_.Receive(rank, tag, data, bytes, std::move(done));
  }

 private:
  MpiWorld& world_;
  const RankTable& table_;
};

MpiDataPath& Path(const RankTable& table) {
  static MpiDataPath path(table);  // one table per process
  return path;
}

}  // namespace

DataPath* JoinMpiAsTrainer(int32_t* trainer_id, const TransportOptions& options) {
  const RankTable& table = RankTable::Join(Role{}, options.deadline);
  const int index = table.TrainerIndex();
  if (*trainer_id >= 0 && *trainer_id != index) {
    throw std::runtime_error("trainer id " + std::to_string(*trainer_id) + " asked for (trainer_id, RILL_TRAINER_ID), "
                             "but under MPI trainers are numbered by rank and this is trainer " +
                             std::to_string(index) + " (" + table.Describe() + ")");
  }
  *trainer_id = index;
  return &Path(table);
}

DataPath* JoinMpiAsPserver(const std::string& endpoint, const TransportOptions& options) {
  return &Path(RankTable::Join(Role{true, endpoint}, options.deadline));
}

}  // namespace rill::dist
