// core/cli/progress.h — how far a `rill run --iterations N` has got, on stderr.
//
// Contract: Progress is told each finished iteration (Done). On a terminal it keeps one
// line up to date, rewritten in place at most every kRefresh and at the last iteration:
// "iteration k/N  R it/s  ETA h:mm:ss  VALUES", VALUES being the fetched variables of the
// last --print-every iteration (`values`); Finish ends the line. Off a terminal it writes
// a log line at each tenth of the run instead (every iteration of a run of ten or fewer):
// "rill: iteration k/N (P%), R it/s, ETA h:mm:ss". A run of one iteration shows nothing.
#ifndef RILL_CORE_CLI_PROGRESS_H_
#define RILL_CORE_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace rill::core {

class Progress {
 public:
  static constexpr std::chrono::milliseconds kRefresh{100};

  Progress(int64_t total, bool terminal, std::FILE* out = stderr);
  bool terminal() const { return terminal_; }
  // Iteration `done` (1-based) has finished; `values`, when not empty, replaces what the
  // line shows of the fetched variables.
  void Done(int64_t done, const std::string& values = "");
  void Finish();

 private:
  std::string Rate(int64_t done, double* per_second) const;

  const int64_t total_;
  const bool terminal_;
  std::FILE* const out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  int64_t next_log_ = 0;  // off a terminal: the iteration of the next log line
  int next_tenth_ = 1;
  std::string values_;
  bool drawn_ = false;
};

}  // namespace rill::core

#endif  // RILL_CORE_CLI_PROGRESS_H_
