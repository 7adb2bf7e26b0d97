#include "mpi_data_path.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "mpi_world.h"
#include "rank_table.h"
#include "trace.h"

namespace rill::dist {
namespace {

// A pushed request on MpiWorld::kRequestTag: [int32 tag][SendVariable request]. Its answer
// comes back on that tag: [int32 refused][why], at most kAnswerBytes.
constexpr size_t kAnswerBytes = 1024;

// RILL_MPI_REQUESTS: "mpi" (default) pushes SendVariable requests over MPI; "grpc" sends
// them as gRPC calls, as the MPI seed has it (docs/PERFORMANCE.md measures both).
bool PushOverMpi() {
  const char* v = std::getenv("RILL_MPI_REQUESTS");
  if (v == nullptr || std::strcmp(v, "mpi") == 0) return true;
  if (std::strcmp(v, "grpc") == 0) return false;
  throw std::runtime_error(std::string("RILL_MPI_REQUESTS='") + v + "': expected mpi or grpc");
}

// Calls `done` once: with the first error, or with "" when all `count` parts succeeded.
class Joined {
 public:
  Joined(int count, DataPath::Done done) : pending_(count), done_(std::move(done)) {}
  void Part(const std::string& error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) return;
    if (error.empty() && --pending_ > 0) return;
    DataPath::Done done = std::move(done_);
    done_ = nullptr;
    done(error);
  }

 private:
  std::mutex mu_;
  int pending_;
  DataPath::Done done_;
};

class MpiDataPath final : public DataPath {
 public:
  explicit MpiDataPath(const RankTable& table) : world_(MpiWorld::Get()), table_(table), pushes_(PushOverMpi()) {}
  std::string Name() const override { return "mpi"; }

  bool RouteTo(const std::string& endpoint, v1::OutOfBand* route) override {
    route->set_job(world_.job());
    route->set_rank(world_.rank());
    route->set_tag(world_.NextTag());
    route->set_peer_rank(table_.PserverRank(endpoint));
    return true;
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
    world_.Send(rank, tag, data, bytes, TracedTransfer("mpi", "send to " + PeerName(rank), bytes, std::move(done)));
  }
  void Receive(int rank, int tag, void* data, size_t bytes, Done done) override {
    world_.Receive(rank, tag, data, bytes,
                   TracedTransfer("mpi", "receive from " + PeerName(rank), bytes, std::move(done)));
  }

  bool Pushes() const override { return pushes_; }

  void Push(const v1::OutOfBand& route, const std::string& request, const void* data, size_t bytes,
            Done done) override {
    const int rank = route.peer_rank(), tag = route.tag();
    done = TracedTransfer("mpi", "push to " + PeerName(rank), bytes, std::move(done));
    auto joined = std::make_shared<Joined>(3, std::move(done));  // the answer, the request, the bytes
    auto answer = std::make_shared<std::string>(kAnswerBytes, '\0');
    world_.Receive(rank, tag, answer->data(), answer->size(), [joined, answer](const std::string& error) {
      int32_t refused = 0;
      std::memcpy(&refused, answer->data(), sizeof(refused));
      joined->Part(!error.empty() ? error : refused ? std::string(answer->c_str() + sizeof(refused)) : "");
    });
    std::string message(sizeof(int32_t), '\0');
    std::memcpy(message.data(), &tag, sizeof(int32_t));
    message += request;
    world_.SendRequest(rank, std::move(message), [joined](const std::string& error) { joined->Part(error); });
    world_.Send(rank, tag, data, bytes, [joined](const std::string& error) { joined->Part(error); });
  }

  void ServePushes(PushHandler handler) override {
    if (!handler) {
      world_.ServeRequests(nullptr);
      return;
    }
    world_.ServeRequests([this, handler = std::move(handler)](int rank, std::string message) {
      int32_t tag = 0;
      if (message.size() < sizeof(tag)) return;  // not ours: nothing to answer to
      std::memcpy(&tag, message.data(), sizeof(tag));
      handler(message.substr(sizeof(tag)), [this, rank, tag](const std::string& refusal) {
        auto answer = std::make_shared<std::string>(sizeof(int32_t), '\0');
        const int32_t refused = refusal.empty() ? 0 : 1;
        std::memcpy(answer->data(), &refused, sizeof(refused));
        *answer += refusal.substr(0, kAnswerBytes - sizeof(refused) - 1);
        world_.Send(rank, tag, answer->data(), answer->size(), [answer](const std::string&) {});
      });
    });
  }

 private:
  MpiWorld& world_;
  const RankTable& table_;
  const bool pushes_;
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
    throw std::runtime_error("trainer id " + std::to_string(*trainer_id) +
                             " asked for (trainer_id, RILL_TRAINER_ID), "
                             "but under MPI trainers are numbered by rank and this is trainer " +
                             std::to_string(index) + " (" + table.Describe() + ")");
  }
  *trainer_id = index;
  return &Path(table);
}

std::shared_ptr<DataPath> JoinMpiAsPserver(const std::string& endpoint, const TransportOptions& options) {
  return std::shared_ptr<DataPath>(&Path(RankTable::Join(Role{true, endpoint}, options.deadline)), [](DataPath*) {});
}

void EndMpiJobAtExit() { MpiWorld::AbortAtExit(); }

}  // namespace rill::dist
