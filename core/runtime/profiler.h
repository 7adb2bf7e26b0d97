// core/runtime/profiler.h — a trace of what a run did, for `rill run --profile`.
//
// Contract: while a Profiler is recording (Start to Stop; one at a time in a process),
// the executor records a span per op it runs (type, block, op index, its inputs' shapes)
// on the lane of the thread that ran it, and the task scheduler records each go block's
// spawn and each task's wait (from park to resume, with the op and what it waited on).
// Stop returns the trace. When no Profiler records, Active() is one relaxed load, read once
// per block run (executor.cc) and per spawn and park (scheduler.cc); with the CMake option
// RILL_PROFILER=OFF the hooks are compiled out (the benchmark of their cost compares the
// two builds). Events are buffered per thread, without locks, and gathered at Stop;
// Record calls from threads that outlive the recording are dropped.
//
// WriteChromeTrace writes the trace in Chrome's trace-event format (Perfetto,
// chrome://tracing), on the host's monotonic clock and under the process's id, so that the
// traces of a cluster's processes on one host load together on one timeline: "X" spans per
// op, "b"/"e" async spans for waits, "i" instants for
// spawns, plugins' spans ("X" in their own categories), and a thread_name per lane ("worker N", or the thread's own lane). Summary
// prints the ops by total time, as Fluid's profiler printed them.
#ifndef RILL_CORE_RUNTIME_PROFILER_H_
#define RILL_CORE_RUNTIME_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#ifndef RILL_PROFILER_HOOKS
#define RILL_PROFILER_HOOKS 1
#endif

struct RillOpInfo;

namespace rill::core {

class Variable;

struct TraceEvent {
  enum Kind : uint8_t { kOp, kWaitBegin, kWaitEnd, kSpawn, kSpan };
  Kind kind = kOp;
  int32_t lane = 0;
  int64_t start_ns = 0, end_ns = 0;  // end_ns: ops only
  uint64_t id = 0;                   // waits: the task's; pairs a begin with its end
  std::string name;                  // op type; what a wait waited on; "spawn by <op type>"
  std::string args;                  // an op's inputs' shapes; a wait's op type; a span's detail
  std::string category;              // a plugin's span's ("rpc", "barrier", ...)
  int32_t block = -1, op = -1;
};

struct Trace {
  std::string process_name = "rill";
  std::vector<TraceEvent> events;
  std::vector<std::string> lane_names;  // by lane
};

class Profiler {
 public:
  // True while some Profiler records.
  static bool Active() {
#if RILL_PROFILER_HOOKS
    return active_.load(std::memory_order_relaxed);
#else
    return false;
#endif
  }

  // Starts recording; throws Error if another Profiler records.
  Profiler();
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  // Ends the recording and returns what was recorded.
  Trace Stop();

  static int64_t NowNs();
  // The hooks (REQUIRE Active()): an op that ran from start to now on this thread (`frame`:
  // its block's variables, for its inputs' shapes); a
  // wait's begin and end (`task` pairs them); a task's spawn by the op `origin`.
  static void RecordOp(const RillOpInfo& op, Variable* const* frame, int64_t start_ns);
  static void RecordWait(bool begin, const void* task, const RillOpInfo* op, const char* what);
  static void RecordSpawn(const RillOpInfo* origin);
  // A plugin's span (abi.h, trace_span): `category`, `name`, from start to end, `detail`.
  static void RecordSpan(const char* category, const char* name, int64_t start_ns, int64_t end_ns, const char* detail);
  // Names this thread's lane (the scheduler: "worker N").
  static void NameLane(const std::string& name);

 private:
  static std::atomic<bool> active_;
  bool stopped_ = false;
};

void WriteChromeTrace(const Trace& trace, std::ostream& out);

// One op type's spans: how many, and their total, shortest and longest time.
struct OpStats {
  std::string type;
  int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
};
// Every op type's stats, by total time, longest first. An op that runs a block (while,
// conditional_block) counts the block's ops' time too.
std::vector<OpStats> SummarizeOps(const Trace& trace);
// SummarizeOps as a table: calls, total, mean, min, max and share of all ops' time, in ms.
void WriteSummary(const Trace& trace, std::ostream& out);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_PROFILER_H_
