// rill launch's view of lasting waits: `rill status --json` lines parsed, and the waits
// that held from one report to the next.
#include "core/cli/pserver_watch.h"

#include <gtest/gtest.h>

#include <atomic>

namespace rill::core {
namespace {

// What `rill status DIR --json` prints for a pserver of 2 trainers: trainer 0 in `state0`
// at `it0`, trainer 1 in `state1` at `it1`.
std::string Line(const std::string& endpoint, int64_t iteration, const std::string& state0, int64_t it0,
                 const std::string& state1, int64_t it1) {
  const auto trainer = [](int id, const std::string& state, int64_t it) {
    return "{\"trainer_id\":" + std::to_string(id) + ",\"state\":\"" + state + "\",\"iteration\":\"" +
           std::to_string(it) + "\",\"last_heard_ms_ago\":\"3\"}";
  };
  return "{\"endpoint\":\"" + endpoint + "\",\"fanin\":2,\"iteration\":\"" + std::to_string(iteration) +
         "\",\"optimizing\":false,\"uptime_ms\":\"2026\",\"bytes_in\":\"56\",\"bytes_out\":\"56\",\"barrier_waits\":"
         "\"0\",\"barrier_wait_ms\":\"0\",\"trainers\":[" +
         trainer(0, state0, it0) + "," + trainer(1, state1, it1) +
         "],\"parameters\":[\"w\",\"b\"],\"data_path\":\"tcp\"}\n";
}

TEST(PserverWatch, ParsesEachPserversLineAndSkipsTheRest) {
  const auto reports = ParseStatusLines(Line("h:1", 4, "AT_BARRIER", 5, "TRAINING", 4) +
                                        "rill status: error: pserver h:2: no pserver answered\n" +
                                        Line("h:3", 0, "COMPLETED", 0, "NOT_CONNECTED", 0));
  ASSERT_EQ(reports.size(), 2u);
  const PserverReport& a = reports.at("h:1");
  EXPECT_EQ(a.iteration, 4);
  EXPECT_EQ(a.trainers.at(0), (std::pair<std::string, int64_t>{"AT_BARRIER", 5}));
  EXPECT_EQ(a.trainers.at(1), (std::pair<std::string, int64_t>{"TRAINING", 4}));
  EXPECT_EQ(reports.at("h:3").trainers.at(1).first, "NOT_CONNECTED");
}

TEST(PserverWatch, OnlyWaitsThatLastedFromOneReportToTheNextCount) {
  const auto stalled = ParseStatusLines(Line("h:1", 0, "AT_BARRIER", 1, "NOT_CONNECTED", 0));
  ClusterWaits w = LastingWaits(stalled, stalled);
  EXPECT_EQ(w.trainer_at_barrier, (std::map<int32_t, int64_t>{{0, 1}}));
  EXPECT_EQ(w.pserver_waits_for, (std::map<std::string, std::string>{{"h:1", "trainer 1 (not connected)"}}));
  // The first report: nothing lasted yet.
  EXPECT_TRUE(LastingWaits({}, stalled).trainer_at_barrier.empty());
  // The pserver moved on between the reports: whatever waits now began since.
  w = LastingWaits(ParseStatusLines(Line("h:1", 6, "AT_BARRIER", 7, "TRAINING", 6)),
                   ParseStatusLines(Line("h:1", 7, "AT_BARRIER", 8, "TRAINING", 7)));
  EXPECT_TRUE(w.trainer_at_barrier.empty());
  EXPECT_TRUE(w.pserver_waits_for.empty());
  // Both at the barrier, the pserver optimizing: nobody to wait for.
  const auto both = ParseStatusLines(Line("h:1", 3, "AT_BARRIER", 4, "AT_BARRIER", 4));
  w = LastingWaits(both, both);
  EXPECT_EQ(w.trainer_at_barrier.size(), 2u);
  EXPECT_TRUE(w.pserver_waits_for.empty());
}

TEST(PserverWatch, AsksEveryPeriodUntilDestroyed) {
  std::atomic<int> asked{0};
  const std::string line = Line("h:1", 0, "AT_BARRIER", 1, "TRAINING", 0);
  {
    PserverWatch watch([&] {
      ++asked;
      return line;
    });
    // The second answer makes the wait a lasting one; wait for it (a bounded loop).
    for (int i = 0; i < 100 && watch.Latest().trainer_at_barrier.empty(); ++i) {
      std::this_thread::sleep_for(PserverWatch::kPeriod / 10);
    }
    EXPECT_EQ(watch.Latest().trainer_at_barrier, (std::map<int32_t, int64_t>{{0, 1}}));
    EXPECT_EQ(watch.Latest().pserver_waits_for.at("h:1"), "trainer 1 (training)");
  }
  EXPECT_GE(asked.load(), 2);  // the destructor returned: its thread is joined, it asks no more
}

}  // namespace
}  // namespace rill::core
