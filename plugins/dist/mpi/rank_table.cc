#include "rank_table.h"

#include <memory>
#include <mutex>
#include <stdexcept>

#include "mpi_world.h"

namespace rill::dist {
namespace {

constexpr size_t kRecordSize = 256;  // 'P' or 'T', then the endpoint, NUL-padded

std::string RoleText(const Role& r) { return r.pserver ? "pserver " + r.endpoint : "trainer"; }

}  // namespace

const RankTable& RankTable::Join(const Role& mine, std::chrono::milliseconds deadline) {
  static std::mutex mu;
  static std::unique_ptr<RankTable> table;
  static Role joined_as;
  std::lock_guard<std::mutex> lock(mu);
  if (table) {
    if (mine.pserver != joined_as.pserver || mine.endpoint != joined_as.endpoint) {
      throw std::runtime_error("this process joined the MPI job as " + RoleText(joined_as) + ", not as " +
                               RoleText(mine) + ": one role per rank");
    }
    return *table;
  }
  if (mine.endpoint.size() + 1 >= kRecordSize) {
    throw std::runtime_error("endpoint '" + mine.endpoint + "' is longer than " + std::to_string(kRecordSize - 2) +
                             " characters");
  }
  std::string record(kRecordSize, '\0');
  record[0] = mine.pserver ? 'P' : 'T';
  record.replace(1, mine.endpoint.size(), mine.endpoint);
  MpiWorld& world = MpiWorld::Get(deadline);
  auto t = std::make_unique<RankTable>();
  t->rank_ = world.rank();
  for (const std::string& r : world.AllGather(record, deadline)) {
    Role role;
    role.pserver = r[0] == 'P';
    role.endpoint = r.c_str() + 1;
    t->roles_.push_back(role);
  }
  for (size_t a = 0; a < t->roles_.size(); ++a) {
    for (size_t b = a + 1; b < t->roles_.size(); ++b) {
      if (t->roles_[a].pserver && t->roles_[b].pserver && t->roles_[a].endpoint == t->roles_[b].endpoint) {
        throw std::runtime_error("ranks " + std::to_string(a) + " and " + std::to_string(b) + " both serve " +
                                 t->roles_[a].endpoint);
      }
    }
  }
  table = std::move(t);
  joined_as = mine;
  return *table;
}

int RankTable::PserverRank(const std::string& endpoint) const {
  for (size_t r = 0; r < roles_.size(); ++r) {
    if (roles_[r].pserver && roles_[r].endpoint == endpoint) return static_cast<int>(r);
  }
  throw std::runtime_error("no rank of this MPI job serves " + endpoint + " (" + Describe() +
                           "); run every pserver and trainer under one mpirun");
}

int RankTable::TrainerIndex() const {
  int index = 0;
  for (int r = 0; r < rank_; ++r) index += roles_[r].pserver ? 0 : 1;
  return index;
}

std::string RankTable::Describe() const {
  std::string out;
  int trainer = 0;
  for (size_t r = 0; r < roles_.size(); ++r) {
    out += (r ? "; rank " : "rank ") + std::to_string(r) + ": " +
           (roles_[r].pserver ? "pserver " + roles_[r].endpoint : "trainer " + std::to_string(trainer++));
  }
  return out;
}

}  // namespace rill::dist
