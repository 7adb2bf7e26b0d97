#include "core/runtime/profiler.h"

#include <algorithm>
#include <chrono>
#include <unistd.h>
#include <cstdio>
#include <map>
#include <mutex>

#include "core/errors.h"
#include "core/runtime/dtype.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/variable.h"

namespace rill::core {

std::atomic<bool> Profiler::active_{false};

namespace {

// One thread's events of one recording. The thread appends under `mu`, uncontended but
// for Stop, which may gather while a straggler (a transport's thread) still records.
struct ThreadBuffer {
  std::mutex mu;
  std::vector<TraceEvent> events;
  int32_t lane = 0;
  uint64_t recording = 0;
};

// The recording in progress: its number (0: none) and every thread buffer of it.
struct Recording {
  std::mutex mu;
  uint64_t number = 0;
  std::atomic<uint64_t> current{0};
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<std::string> lane_names;
  std::map<std::string, int32_t> lane_by_name;
};

Recording& TheRecording() {
  static auto* r = new Recording;  // never destroyed: threads may record during exit
  return *r;
}

thread_local std::shared_ptr<ThreadBuffer> tls_buffer;

// This thread's buffer of the recording in progress, made on its first event.
ThreadBuffer& Buffer() {
  Recording& r = TheRecording();
  const uint64_t current = r.current.load(std::memory_order_acquire);
  if (tls_buffer == nullptr || tls_buffer->recording != current) {
    auto b = std::make_shared<ThreadBuffer>();
    b->recording = current;
    std::lock_guard lock(r.mu);
    b->lane = static_cast<int32_t>(r.lane_names.size());
    r.lane_names.push_back("thread " + std::to_string(b->lane));
    r.buffers.push_back(b);
    tls_buffer = std::move(b);
  }
  return *tls_buffer;
}

void Append(TraceEvent e) {
  ThreadBuffer& b = Buffer();
  e.lane = b.lane;
  std::lock_guard lock(b.mu);
  b.events.push_back(std::move(e));
}

std::string Shape(const Variable* v) {
  if (v == nullptr) return "?";
  const Tensor* t = v->GetTensor();
  if (t == nullptr || !t->initialized()) return v->KindName();
  std::string s = DataTypeName(t->dtype()) + "[";
  for (size_t i = 0; i < t->dims().size(); ++i) s += (i ? "," : "") + std::to_string(t->dims()[i]);
  return s + "]";
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

}  // namespace

int64_t Profiler::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Profiler::Profiler() {
  Recording& r = TheRecording();
  std::lock_guard lock(r.mu);
  if (active_.load()) throw Error("a profile is already being recorded in this process", RILL_FAILED_PRECONDITION);
  r.buffers.clear();
  r.lane_names.clear();
  r.lane_by_name.clear();
  r.current.store(++r.number, std::memory_order_release);
  active_.store(true, std::memory_order_release);
}

Profiler::~Profiler() {
  if (!stopped_) Stop();
}

Trace Profiler::Stop() {
  Recording& r = TheRecording();
  std::lock_guard lock(r.mu);
  stopped_ = true;
  active_.store(false, std::memory_order_release);
  r.current.store(0, std::memory_order_release);  // a straggler's next event goes nowhere
  Trace trace;
  trace.lane_names = r.lane_names;
  for (auto& b : r.buffers) {
    std::lock_guard buffer_lock(b->mu);
    for (auto& e : b->events) trace.events.push_back(std::move(e));
  }
  r.buffers.clear();
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  return trace;
}

void Profiler::RecordOp(const RillOpInfo& op, Variable* const* frame, int64_t start_ns) {
  TraceEvent e;
  e.kind = TraceEvent::kOp;
  e.start_ns = start_ns;
  e.end_ns = NowNs();
  e.name = op.type;
  e.block = op.block_idx;
  e.op = op.op_idx;
  for (const auto& slot : op.inputs) {
    e.args += (e.args.empty() ? "" : " ") + slot.slot + "=";
    for (size_t i = 0; i < slot.ids.size(); ++i) e.args += (i ? "," : "") + Shape(frame[slot.ids[i]]);
  }
  Append(std::move(e));
}

void Profiler::RecordWait(bool begin, const void* task, const RillOpInfo* op, const char* what) {
  TraceEvent e;
  e.kind = begin ? TraceEvent::kWaitBegin : TraceEvent::kWaitEnd;
  e.start_ns = NowNs();
  e.id = reinterpret_cast<uintptr_t>(task);
  e.name = what != nullptr ? what : "parked";
  if (op != nullptr) {
    e.args = op->type;
    e.block = op->block_idx;
    e.op = op->op_idx;
  }
  Append(std::move(e));
}

void Profiler::RecordSpawn(const RillOpInfo* origin) {
  TraceEvent e;
  e.kind = TraceEvent::kSpawn;
  e.start_ns = NowNs();
  e.name = origin != nullptr ? "spawn by " + origin->type : "spawn";
  if (origin != nullptr) {
    e.block = origin->block_idx;
    e.op = origin->op_idx;
  }
  Append(std::move(e));
}

void Profiler::RecordSpan(const char* category, const char* name, int64_t start_ns, int64_t end_ns,
                          const char* detail) {
  TraceEvent e;
  e.kind = TraceEvent::kSpan;
  e.category = category;
  e.name = name;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.args = detail;
  Append(std::move(e));
}

void Profiler::NameLane(const std::string& name) {
  Recording& r = TheRecording();
  const uint64_t current = r.current.load(std::memory_order_acquire);
  if (current == 0) return;
  std::lock_guard lock(r.mu);
  // A worker of an earlier run of the same recording, gone now, gave its lane this name:
  // this thread takes that lane over, so a lane stays one worker across runs.
  auto [it, fresh] = r.lane_by_name.emplace(name, static_cast<int32_t>(r.lane_names.size()));
  if (fresh) r.lane_names.push_back(name);
  // This thread on its lane already (a worker of each of many runs: Python's executor).
  if (tls_buffer != nullptr && tls_buffer->recording == current && tls_buffer->lane == it->second) return;
  auto b = std::make_shared<ThreadBuffer>();
  b->recording = current;
  b->lane = it->second;
  r.buffers.push_back(b);
  tls_buffer = std::move(b);
}

void WriteChromeTrace(const Trace& trace, std::ostream& out) {
  const std::string pid = std::to_string(getpid());
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << pid
      << ", \"args\": {\"name\": " << JsonString(trace.process_name) << "}}";
  for (size_t lane = 0; lane < trace.lane_names.size(); ++lane) {
    out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << pid << ", \"tid\": " << lane
        << ", \"args\": {\"name\": " << JsonString(trace.lane_names[lane]) << "}}";
  }
  for (const auto& e : trace.events) {
    const std::string ts = Micros(e.start_ns);
    const std::string where = "\"block\": " + std::to_string(e.block) + ", \"op\": " + std::to_string(e.op);
    out << ",\n{\"pid\": " << pid << ", \"tid\": " << e.lane << ", \"ts\": " << ts << ", ";
    switch (e.kind) {
      case TraceEvent::kOp:
        out << "\"ph\": \"X\", \"cat\": \"op\", \"name\": " << JsonString(e.name)
            << ", \"dur\": " << Micros(e.end_ns - e.start_ns) << ", \"args\": {" << where
            << ", \"inputs\": " << JsonString(e.args) << "}}";
        break;
      case TraceEvent::kWaitBegin:
      case TraceEvent::kWaitEnd:
        out << "\"ph\": \"" << (e.kind == TraceEvent::kWaitBegin ? "b" : "e") << "\", \"cat\": \"wait\", \"id\": \"0x"
            << std::hex << e.id << std::dec << "\", \"name\": " << JsonString("wait: " + e.name) << ", \"args\": {"
            << where << ", \"op_type\": " << JsonString(e.args) << "}}";
        break;
      case TraceEvent::kSpan:
        out << "\"ph\": \"X\", \"cat\": " << JsonString(e.category) << ", \"name\": " << JsonString(e.name)
            << ", \"dur\": " << Micros(e.end_ns - e.start_ns) << ", \"args\": {\"detail\": " << JsonString(e.args)
            << "}}";
        break;
      case TraceEvent::kSpawn:
        out << "\"ph\": \"i\", \"s\": \"t\", \"cat\": \"task\", \"name\": " << JsonString(e.name) << ", \"args\": {"
            << where << "}}";
        break;
    }
  }
  out << "\n]}\n";
}

std::vector<OpStats> SummarizeOps(const Trace& trace) {
  std::map<std::string, OpStats> by_type;
  for (const auto& e : trace.events) {
    if (e.kind != TraceEvent::kOp) continue;
    const int64_t d = e.end_ns - e.start_ns;
    OpStats& r = by_type[e.name];
    if (r.calls == 0) {
      r.type = e.name;
      r.min_ns = d;
    }
    ++r.calls;
    r.total_ns += d;
    r.min_ns = std::min(r.min_ns, d);
    r.max_ns = std::max(r.max_ns, d);
  }
  std::vector<OpStats> rows;
  for (auto& [type, r] : by_type) rows.push_back(std::move(r));
  std::sort(rows.begin(), rows.end(), [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
  return rows;
}

void WriteSummary(const Trace& trace, std::ostream& out) {
  const std::vector<OpStats> rows = SummarizeOps(trace);
  int64_t all = 0;
  for (const auto& r : rows) all += r.total_ns;
  char line[256];
  std::snprintf(line, sizeof(line), "%-28s %8s %12s %10s %10s %10s %7s\n", "op", "calls", "total ms", "mean ms",
                "min ms", "max ms", "share");
  out << line;
  const auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  for (const auto& r : rows) {
    std::snprintf(line, sizeof(line), "%-28s %8lld %12.3f %10.4f %10.4f %10.4f %6.1f%%\n", r.type.c_str(),
                  static_cast<long long>(r.calls), ms(r.total_ns), ms(r.total_ns) / static_cast<double>(r.calls),
                  ms(r.min_ns), ms(r.max_ns),
                  all > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(all) : 0.0);
    out << line;
  }
}

}  // namespace rill::core
