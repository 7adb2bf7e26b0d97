// The small-object caches: blocks freed on one thread come back to another through the
// depot, and what the caches hold stays bounded (core/runtime/small_objects.h).
#include "core/runtime/small_objects.h"
#include "core/tasks/scheduler.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rill::core {
namespace {

// The 512-byte class. These tests make no scopes or tensors, whose leftover lists and
// buffers also use it, so while one runs the depot's count for the class is its own.
constexpr size_t kBytes = 400;

std::vector<void*> AllocateOnNewThread(size_t n, size_t bytes = kBytes) {
  std::vector<void*> blocks;
  std::thread([&] {
    for (size_t i = 0; i < n; ++i) {
      blocks.push_back(AllocateSmall(bytes));
      std::memset(blocks.back(), 0xab, bytes);  // the whole size is usable
    }
  }).join();
  return blocks;
}

void FreeOnNewThread(const std::vector<void*>& blocks, size_t bytes = kBytes) {
  std::thread([&] {
    for (void* p : blocks) FreeSmall(p, bytes);
  }).join();
}

TEST(SmallObjects, BlocksFreedOnOneThreadAreReusedByAnother) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the caches are malloc and free";
  const size_t n = 4 * kSmallBatch;
  std::vector<void*> freed = AllocateOnNewThread(n);
  const size_t before = SmallDepotBlocks(kBytes);
  FreeOnNewThread(freed);  // full batches as it goes, the rest when it exits
  EXPECT_EQ(SmallDepotBlocks(kBytes), before + n) << "an exiting thread's cache must reach the depot";

  std::vector<void*> reused = AllocateOnNewThread(n);  // the depot hands out its newest batches first
  std::sort(freed.begin(), freed.end());
  std::sort(reused.begin(), reused.end());
  EXPECT_EQ(reused, freed) << "another thread's allocations should take the freed blocks back";
  EXPECT_EQ(SmallDepotBlocks(kBytes), before);
  FreeOnNewThread(reused);
}

// A child forked while another thread is inside the depot must find it usable: the
// depot's lock is held across fork, so the child's copy is never left locked.
TEST(SmallObjects, AChildForkedWhileAnotherThreadUsesTheDepotCanAllocate) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the caches are malloc and free";
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    // Seen in CI: one child of 200 hung. GCC 12's TSan does not hold its own allocator's
    // locks across fork (LLVM added that in 2024, PR 96600), so a child can hang inside
    // TSan whatever our depot does.
    GTEST_SKIP() << "built with ThreadSanitizer, whose runtime is not fork-safe in a multithreaded process";
  }
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    std::vector<void*> blocks;
    while (!stop.load()) {  // each round puts a batch into the depot and takes one back
      for (int i = 0; i < 2 * kSmallBatch; ++i) blocks.push_back(AllocateSmall(kBytes));
      for (void* p : blocks) FreeSmall(p, kBytes);
      blocks.clear();
    }
  });
  int hung = 0, failed = 0;
  for (int i = 0; i < 200 && hung == 0; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(5);  // a child stuck on the depot's lock dies of SIGALRM
      std::vector<void*> blocks;
      for (int j = 0; j < 4 * kSmallBatch; ++j) blocks.push_back(AllocateSmall(kBytes));
      for (void* p : blocks) FreeSmall(p, kBytes);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) ++hung;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  stop.store(true);
  churn.join();
  EXPECT_EQ(hung, 0) << "children forked while the depot was locked hung";
  EXPECT_EQ(failed, 0);
}

// A size between two powers of two has a class of its own (a scope's variable entry, 168
// bytes, is a 192-byte block), which shares no blocks with its neighbours.
TEST(SmallObjects, SizesBetweenPowersOfTwoHaveClassesOfTheirOwn) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the caches are malloc and free";
  const size_t n = 2 * kSmallBatch;
  const size_t below = SmallDepotBlocks(128), above = SmallDepotBlocks(256);
  // Counted after the allocation, which takes what earlier tests in this process left in
  // the depot first.
  std::vector<void*> blocks = AllocateOnNewThread(n, 168);
  const size_t own = SmallDepotBlocks(168);
  FreeOnNewThread(blocks, 168);
  EXPECT_EQ(SmallDepotBlocks(168), own + n);
  EXPECT_EQ(SmallDepotBlocks(192), own + n) << "168 and 192 bytes are one class";
  EXPECT_EQ(SmallDepotBlocks(128), below);
  EXPECT_EQ(SmallDepotBlocks(256), above);
  std::vector<void*> back = AllocateOnNewThread(n, 192);  // 192 bytes usable in each
  EXPECT_EQ(SmallDepotBlocks(168), own);
  FreeOnNewThread(back, 192);
}

TEST(SmallObjects, TheDepotKeepsABoundedNumberOfBlocks) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the caches are malloc and free";
  const size_t limit = kSmallDepotBatches * kSmallBatch;
  std::vector<void*> blocks = AllocateOnNewThread(limit + 10 * kSmallBatch + 7);
  FreeOnNewThread(blocks);
  EXPECT_EQ(SmallDepotBlocks(kBytes), limit) << "the rest should have gone back to malloc";
}

TEST(SmallObjects, TheAllocatorServesSharedObjectsAndNodeContainers) {
  struct Big {
    char bytes[2 * kMaxSmallBytes];  // beyond the caches: operator new
  };
  auto small = std::allocate_shared<std::string>(SmallObjectAllocator<std::string>(), "shared");
  auto big = std::allocate_shared<Big>(SmallObjectAllocator<Big>());
  big->bytes[sizeof(Big::bytes) - 1] = 'x';
  EXPECT_EQ(*small, "shared");

  std::unordered_map<int, std::string, std::hash<int>, std::equal_to<int>,
                     SmallObjectAllocator<std::pair<const int, std::string>>>
      map;
  for (int i = 0; i < 1000; ++i) map.emplace(i, std::to_string(i));  // buckets outgrow the caches
  std::thread([&] { map.clear(); }).join();  // nodes freed on another thread
  for (int i = 0; i < 1000; ++i) map.emplace(i, std::to_string(i * 2));
  EXPECT_EQ(map.at(999), "1998");
}

// Blocks past the caches' bounds go back to glibc, whose fast bins would keep them
// unmerged; a scheduler run turns those off for the process (TuneMallocForTasks).
TEST(SmallObjects, ARunOfTasksLeavesGlibcWithoutFastBins) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer, whose malloc is not glibc's";
  if (std::string(RILL_TEST_SANITIZER) == "thread") GTEST_SKIP() << "built with ThreadSanitizer, whose malloc is not glibc's";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.mxfast") != nullptr) {
    GTEST_SKIP() << "GLIBC_TUNABLES sets glibc.malloc.mxfast, which the scheduler leaves alone";
  }
  RunTasks(SchedulerOptions{.workers = 1}, [] {});
  // Past the 7 blocks a size that glibc's per-thread cache holds, a freed 24-byte block
  // would go to a fast bin (and count in fsmblks); with fast bins off it merges at once.
  // Counted from here: the arenas of threads that earlier tests in this process ran keep
  // the fast-bin blocks they freed before the scheduler turned fast bins off.
  const size_t before = mallinfo2().fsmblks;
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(std::malloc(24));
  for (void* p : blocks) std::free(p);
  EXPECT_EQ(mallinfo2().fsmblks, before);
}

}  // namespace
}  // namespace rill::core
