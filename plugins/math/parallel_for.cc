#include "parallel_for.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <vector>

#include "intra_op.h"

namespace rill::math {
namespace {

constexpr double kChunkBytes = 128 * 1024;
constexpr int64_t kMaxChunks = 64;

}  // namespace

void ParallelCopy(const void* from, void* to, size_t bytes) {
  const auto* in = static_cast<const char*>(from);
  auto* out = static_cast<char*>(to);
  ParallelFor(static_cast<int64_t>(bytes), 2.0 * static_cast<double>(bytes),
              [in, out](int64_t, int64_t begin, int64_t end) {
                std::memcpy(out + begin, in + begin, static_cast<size_t>(end - begin));
              });
}

int64_t ParallelChunks(int64_t n, double bytes) {
  if (bytes < kParallelBytes || n <= 1) return 1;
  return std::min({static_cast<int64_t>(std::ceil(bytes / kChunkBytes)), kMaxChunks, n});
}

namespace detail {

void RunChunks(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  const auto chunk = [&](int64_t c) { body(c, n * c / chunks, n * (c + 1) / chunks); };
  if (IntraOpBudget() == 1) {
    for (int64_t c = 0; c < chunks; ++c) chunk(c);
    return;
  }
  // On the intra-op thread's team, each thread a contiguous run of chunks (static
  // schedule): a thread's share of one pass is where its share of the last one was, in
  // its own cache. An exception may not leave an OpenMP region: each chunk's is kept, the
  // first rethrown.
  detail::RunIntraOp(true, [&] {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      try {
        chunk(c);
      } catch (...) {
        errors[static_cast<size_t>(c)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  });
}

}  // namespace detail
}  // namespace rill::math
