// core/cli/cluster_status.h — what each process of a `rill launch` cluster is doing.
//
// Contract: ClusterStatus is told, every poll of the launcher, each process's name, log
// file and whether it is starting, running or has exited (and how). A running trainer's
// state is read from its log, where `rill run` writes its progress ("running iteration
// k/N"); a running pserver is "serving"; either is followed by the wait that lasts, when
// the launcher knows of one. On a terminal the states are a block of lines on
// stderr, one per process, redrawn in place at most every kRefresh; off one, a line
// "launch: NAME: STATE" whenever a process's state changes. Finish draws the last states.
#ifndef RILL_CORE_CLI_CLUSTER_STATUS_H_
#define RILL_CORE_CLI_CLUSTER_STATUS_H_

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace rill::core {

struct ProcessState {
  std::string name;  // "pserver 0", "trainer 1"
  std::string log;
  bool pserver = false;
  bool running = false;
  bool exited = false;
  int status = 0;  // waitpid's, once exited
  // Lasting waits the pservers report (PserverWatch), while running: a trainer's barrier
  // (shown until its progress passes that iteration), whom a pserver waits for.
  int64_t at_barrier = -1;  // the iteration
  std::string waits_for{};  // "trainer 1 (not connected)"
};

class ClusterStatus {
 public:
  static constexpr std::chrono::milliseconds kRefresh{200};

  explicit ClusterStatus(bool terminal, std::FILE* out = stderr) : terminal_(terminal), out_(out) {}
  void Update(const std::vector<ProcessState>& processes);
  void Finish(const std::vector<ProcessState>& processes);

 private:
  void Draw(const std::vector<ProcessState>& processes, bool force);

  const bool terminal_;
  std::FILE* const out_;
  std::vector<std::string> shown_;  // each process's last state shown
  size_t lines_drawn_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

// A process's state as ClusterStatus shows it.
std::string StateOf(const ProcessState& p);

}  // namespace rill::core

#endif  // RILL_CORE_CLI_CLUSTER_STATUS_H_
