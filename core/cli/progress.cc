#include "core/cli/progress.h"

#include <cmath>

namespace rill::core {
namespace {

std::string Clock(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

// The iteration at which tenth `tenth` (1..10) of `total` is done.
int64_t TenthAt(int64_t total, int tenth) { return (total * tenth + 9) / 10; }

}  // namespace

Progress::Progress(int64_t total, bool terminal, std::FILE* out) : total_(total), terminal_(terminal), out_(out) {
  next_log_ = TenthAt(total_, 1);
}

std::string Progress::Rate(int64_t done, double* per_second) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  *per_second = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f it/s", *per_second);
  return buf;
}

void Progress::Done(int64_t done, const std::string& values) {
  if (total_ <= 1) return;
  if (!values.empty()) values_ = values;
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (done != total_ && drawn_ && now - last_draw_ < kRefresh) return;
    last_draw_ = now;
    drawn_ = true;
    double rate = 0;
    const std::string r = Rate(done, &rate);
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    // "\r" back to the line's start, "\033[K" clears what a longer last line left.
    std::fprintf(out_, "\riteration %lld/%lld  %s  ETA %s%s%s\033[K", static_cast<long long>(done),
                 static_cast<long long>(total_), r.c_str(), Clock(eta).c_str(), values_.empty() ? "" : "  ",
                 values_.c_str());
    std::fflush(out_);
    return;
  }
  if (done < next_log_) return;
  while (next_tenth_ <= 10 && TenthAt(total_, next_tenth_) <= done) ++next_tenth_;
  next_log_ = next_tenth_ <= 10 ? TenthAt(total_, next_tenth_) : total_ + 1;
  double rate = 0;
  const std::string r = Rate(done, &rate);
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
  std::fprintf(out_, "rill: iteration %lld/%lld (%lld%%), %s, ETA %s\n", static_cast<long long>(done),
               static_cast<long long>(total_), static_cast<long long>(100 * done / total_), r.c_str(),
               Clock(eta).c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  if (terminal_ && drawn_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
}

}  // namespace rill::core
