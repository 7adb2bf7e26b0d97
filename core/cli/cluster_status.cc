#include "core/cli/cluster_status.h"

#include <sys/wait.h>

#include <fstream>

namespace rill::core {
namespace {

constexpr std::streamoff kTailBytes = 4096;  // enough for the last progress line

// "k/N" of the last progress line `rill run` wrote to `log`; empty if none yet.
std::string LastIteration(const std::string& log) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(size > kTailBytes ? size - kTailBytes : 0);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string mark = "rill: iteration ";
  const size_t at = tail.rfind(mark);
  if (at == std::string::npos) return "";
  const size_t from = at + mark.size(), to = tail.find_first_of(" \n", from);
  return tail.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

}  // namespace

std::string StateOf(const ProcessState& p) {
  if (p.exited) {
    if (WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0) return "done";
    return WIFEXITED(p.status) ? "failed (exit status " + std::to_string(WEXITSTATUS(p.status)) + ")"
                               : "failed (signal " + std::to_string(WTERMSIG(p.status)) + ")";
  }
  if (!p.running) return "starting";
  if (p.pserver) return p.waits_for.empty() ? "serving" : "serving, waiting for " + p.waits_for;
  const std::string iteration = LastIteration(p.log);
  const std::string state = iteration.empty() ? "running" : "running iteration " + iteration;
  // Barrier k is iteration k of the training: a report from before the run got past it is stale.
  const bool passed = !iteration.empty() && std::stoll(iteration) >= p.at_barrier;
  if (p.at_barrier < 0 || passed) return state;
  return state + ", waiting at the barrier of iteration " + std::to_string(p.at_barrier);
}

void ClusterStatus::Update(const std::vector<ProcessState>& processes) { Draw(processes, false); }

void ClusterStatus::Finish(const std::vector<ProcessState>& processes) { Draw(processes, true); }

void ClusterStatus::Draw(const std::vector<ProcessState>& processes, bool force) {
  std::vector<std::string> states;
  for (const auto& p : processes) states.push_back(StateOf(p));
  if (!terminal_) {
    for (size_t i = 0; i < processes.size(); ++i) {
      if (i < shown_.size() && shown_[i] == states[i]) continue;
      std::fprintf(out_, "launch: %s: %s\n", processes[i].name.c_str(), states[i].c_str());
    }
    std::fflush(out_);
    shown_ = states;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!force && (states == shown_ || now - last_draw_ < kRefresh)) return;
  last_draw_ = now;
  // Back up over the last drawing ("\033[NA": N lines up), then each line cleared ("\033[K").
  if (lines_drawn_ > 0) std::fprintf(out_, "\033[%zuA", lines_drawn_);
  for (size_t i = 0; i < processes.size(); ++i) {
    std::fprintf(out_, "\r%-12s %s\033[K\n", processes[i].name.c_str(), states[i].c_str());
  }
  std::fflush(out_);
  lines_drawn_ = processes.size();
  shown_ = states;
}

}  // namespace rill::core
