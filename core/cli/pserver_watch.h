// core/cli/pserver_watch.h — the waits of a running cluster, from its pservers' own
// reports, for `rill launch`'s display.
//
// Contract: a PserverWatch calls `ask` on a thread of its own every kPeriod until it is
// destroyed; `ask` returns what `rill status DIR --json` prints (one rill.dist.v1
// ServerStatus per line, per pserver that answered; the command a transport plugin
// provides), or "" when there is no answer. Latest() gives the waits that lasted a whole
// period, from the last two answers of each pserver whose iteration did not move in
// between: each trainer at the barrier of the same iteration in both, and the trainers
// that pserver waits for (the others not completed, with their state). Short waits, the
// normal life of sync training, are not reported; a pserver that does not answer has none.
#ifndef RILL_CORE_CLI_PSERVER_WATCH_H_
#define RILL_CORE_CLI_PSERVER_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace rill::core {

struct ClusterWaits {
  std::map<int32_t, int64_t> trainer_at_barrier;         // trainer -> iteration of the barrier it waits at
  std::map<std::string, std::string> pserver_waits_for;  // endpoint -> "trainer 1 (not connected)"
};

// One status answer, parsed: per endpoint, its iteration and each trainer's state and
// iteration. Lines that are not a ServerStatus are skipped.
struct PserverReport {
  int64_t iteration = -1;
  std::map<int32_t, std::pair<std::string, int64_t>> trainers;  // id -> (state, iteration)
};
std::map<std::string, PserverReport> ParseStatusLines(const std::string& json_lines);

// The waits that lasted from `before` to `now` (see the contract above).
ClusterWaits LastingWaits(const std::map<std::string, PserverReport>& before,
                          const std::map<std::string, PserverReport>& now);

class PserverWatch {
 public:
  static constexpr std::chrono::milliseconds kPeriod{1000};

  explicit PserverWatch(std::function<std::string()> ask);
  ~PserverWatch();
  PserverWatch(const PserverWatch&) = delete;
  PserverWatch& operator=(const PserverWatch&) = delete;

  ClusterWaits Latest() const;

 private:
  void Loop();

  const std::function<std::string()> ask_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  ClusterWaits latest_;
  std::thread thread_;  // last: starts once the rest is ready
};

}  // namespace rill::core

#endif  // RILL_CORE_CLI_PSERVER_WATCH_H_
