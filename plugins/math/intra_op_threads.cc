#include "intra_op_threads.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "rill/sdk.hpp"

namespace rill::math {
namespace {

std::atomic<int> running{0};  // IntraOpThreads alive now, over all threads

int ReadBudget() {
#if defined(__SANITIZE_THREAD__)
  return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return 1;
#endif
#endif
  const char* env = std::getenv("RILL_INTRA_OP_THREADS");
  if (env == nullptr || *env == '\0') return std::max(1, omp_get_max_threads());
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096) {
    throw Error("RILL_INTRA_OP_THREADS '" + std::string(env) + "' is not a thread count from 1 to 4096",
                RILL_INVALID_ARGUMENT);
  }
  return static_cast<int>(n);
}

}  // namespace

int IntraOpThreads::Budget() {
  static const int budget = ReadBudget();
  return budget;
}

IntraOpThreads::IntraOpThreads() {
  const int now = running.fetch_add(1, std::memory_order_relaxed) + 1;
  threads_ = std::max(1, Budget() / now);
  omp_set_num_threads(threads_);
}

IntraOpThreads::~IntraOpThreads() { running.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace rill::math
