#include "trace.h"

#include <atomic>

namespace rill::dist {
namespace {

// Set at a plugin's init, before any op of it runs; read by the ops' threads after.
std::atomic<const Tracer*> g_tracer{nullptr};

}  // namespace

void SetTracer(const Tracer& tracer) {
  static Tracer kept[2];  // one per transport plugin; both bind the same host
  static std::atomic<int> next{0};
  Tracer* slot = &kept[next.fetch_add(1) % 2];
  *slot = tracer;
  g_tracer.store(slot, std::memory_order_release);
}

const Tracer& TheTracer() {
  static const Tracer kNone;
  const Tracer* t = g_tracer.load(std::memory_order_acquire);
  return t != nullptr ? *t : kNone;
}

std::function<void(const std::string&)> TracedTransfer(const char* category, std::string name, size_t bytes,
                                                       std::function<void(const std::string&)> done) {
  const Tracer& tracer = TheTracer();
  if (!tracer.active()) return done;
  const int64_t start = tracer.now();
  return [&tracer, category, name = std::move(name), bytes, start, done = std::move(done)](const std::string& error) {
    tracer.record(category, name, start, tracer.now(),
                  std::to_string(bytes) + " bytes" + (error.empty() ? "" : "; failed: " + error));
    done(error);
  };
}

}  // namespace rill::dist
