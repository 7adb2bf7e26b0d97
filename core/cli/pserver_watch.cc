#include "core/cli/pserver_watch.h"

#include <regex>
#include <sstream>

namespace rill::core {

std::map<std::string, PserverReport> ParseStatusLines(const std::string& json_lines) {
  // protobuf's JSON of ServerStatus, fields in number order, int64 as strings.
  static const std::regex server(R"re(^\{"endpoint":"([^"]+)","fanin":\d+,"iteration":"(\d+)")re");
  static const std::regex trainer(R"re(\{"trainer_id":(\d+),"state":"([A-Z_]+)","iteration":"(\d+)")re");
  std::map<std::string, PserverReport> out;
  std::istringstream in(json_lines);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, server)) continue;
    PserverReport& r = out[m[1]];
    r.iteration = std::stoll(m[2]);
    for (std::sregex_iterator it(line.begin(), line.end(), trainer), end; it != end; ++it) {
      r.trainers[std::stoi((*it)[1])] = {(*it)[2], std::stoll((*it)[3])};
    }
  }
  return out;
}

ClusterWaits LastingWaits(const std::map<std::string, PserverReport>& before,
                          const std::map<std::string, PserverReport>& now) {
  ClusterWaits waits;
  for (const auto& [endpoint, report] : now) {
    const auto then = before.find(endpoint);
    if (then == before.end() || then->second.iteration != report.iteration) continue;
    bool someone_waits = false;
    for (const auto& [id, state] : report.trainers) {
      const auto earlier = then->second.trainers.find(id);
      if (state.first == "AT_BARRIER" && earlier != then->second.trainers.end() && earlier->second == state) {
        waits.trainer_at_barrier[id] = state.second;
        someone_waits = true;
      }
    }
    if (!someone_waits) continue;
    std::string laggards;
    for (const auto& [id, state] : report.trainers) {
      if (state.first != "NOT_CONNECTED" && state.first != "TRAINING") continue;
      laggards += (laggards.empty() ? "trainer " : ", trainer ") + std::to_string(id) +
                  (state.first == "NOT_CONNECTED" ? " (not connected)" : " (training)");
    }
    if (!laggards.empty()) waits.pserver_waits_for[endpoint] = laggards;
  }
  return waits;
}

PserverWatch::PserverWatch(std::function<std::string()> ask) : ask_(std::move(ask)), thread_([this] { Loop(); }) {}

PserverWatch::~PserverWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

ClusterWaits PserverWatch::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void PserverWatch::Loop() {
  std::map<std::string, PserverReport> before;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_cv_.wait_for(lock, kPeriod, [&] { return stop_; })) {
    lock.unlock();
    std::map<std::string, PserverReport> now = ParseStatusLines(ask_());
    ClusterWaits waits = LastingWaits(before, now);
    before = std::move(now);
    lock.lock();
    latest_ = std::move(waits);
  }
}

}  // namespace rill::core
