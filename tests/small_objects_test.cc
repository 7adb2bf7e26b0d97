// The small-object pages: blocks freed on another thread go back to their page, a page
// nothing of which is live is carved afresh, an exiting thread's pages are handed on, and
// the pool's resident memory stays bounded (core/runtime/small_objects.h).
#include "core/runtime/small_objects.h"
#include "core/tasks/scheduler.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <chrono>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rill::core {
namespace {

// The 512-byte class and the 384-byte one. These tests make no scopes or tensors (whose
// leftover lists and buffers use some classes), so while one runs, the pages of these
// classes are its own.
constexpr size_t kBytes = 400;
constexpr size_t kOwnBytes = 320;
constexpr size_t BlocksPerPage(size_t block_bytes) { return (kSmallPageBytes - kSmallPageHeaderBytes) / block_bytes; }

uintptr_t PageOf(const void* p) { return reinterpret_cast<uintptr_t>(p) & ~uintptr_t{kSmallPageBytes - 1}; }

// By address, since earlier tests in the process (their threads' exits, a worker's first
// page of a class) leave and adopt abandoned pages of their own.
std::set<uintptr_t> AbandonedPages() {
  const std::vector<uintptr_t> pages = AbandonedSmallPages();
  return {pages.begin(), pages.end()};
}

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

// The owner allocates n blocks, another thread frees them, the owner allocates n again:
// it takes the freed blocks back from its own pages instead of a page from the pool.
TEST(SmallObjects, BlocksFreedOnAnotherThreadGoBackToTheirPage) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the pages are malloc and free";
  const size_t n = 3 * BlocksPerPage(512);
  std::vector<void*> first, second;
  std::mutex mu;
  std::condition_variable cv;
  int stage = 0;
  std::thread owner([&] {
    for (size_t i = 0; i < n; ++i) first.push_back(AllocateSmall(kBytes));
    std::unique_lock lock(mu);
    stage = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return stage == 2; });
    for (size_t i = 0; i < n; ++i) second.push_back(AllocateSmall(kBytes));
    for (void* p : second) FreeSmall(p, kBytes);
  });
  size_t empty_before = 0;
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stage == 1; });
    empty_before = CountSmallPages().empty;
    FreeOnNewThread(first);  // remote frees; the thread's cache goes back to the pages as it exits
    stage = 2;
    cv.notify_all();
  }
  owner.join();
  std::set<uintptr_t> pages;
  for (void* p : first) pages.insert(PageOf(p));
  for (void* p : second) EXPECT_TRUE(pages.count(PageOf(p))) << "a block of the second round came from a new page";
  std::set<void*> distinct(second.begin(), second.end());
  EXPECT_EQ(distinct.size(), n);
  EXPECT_GE(CountSmallPages().empty, empty_before) << "the second round took pages from the pool";
}

// A block freed on a thread, whichever thread's page it is on, is the next one that
// thread hands out: it is still in that core's cache.
TEST(SmallObjects, AThreadHandsOutTheBlockItFreedLastFirst) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the pages are malloc and free";
  std::vector<void*> theirs = AllocateOnNewThread(2);
  std::thread([&] {
    void* mine = AllocateSmall(kBytes);
    FreeSmall(theirs[0], kBytes);
    FreeSmall(mine, kBytes);
    EXPECT_EQ(AllocateSmall(kBytes), mine);
    EXPECT_EQ(AllocateSmall(kBytes), theirs[0]);
    FreeSmall(mine, kBytes);
    FreeSmall(theirs[0], kBytes);
  }).join();
  FreeOnNewThread({theirs[1]});
}

// A thread's first page of a class, with nothing of it live, is carved in address order;
// once all its blocks are freed it goes back to the pool and is carved from the start
// again by the next thread.
TEST(SmallObjects, AFreshPageIsCarvedInAddressOrder) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the pages are malloc and free";
  const size_t per_page = BlocksPerPage(384);
  std::vector<void*> blocks = AllocateOnNewThread(per_page, kOwnBytes);
  for (size_t i = 1; i < blocks.size(); ++i) {
    ASSERT_EQ(static_cast<char*>(blocks[i]), static_cast<char*>(blocks[i - 1]) + 384) << "block " << i;
  }
  const uintptr_t page = PageOf(blocks[0]);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(blocks[0]) - page, kSmallPageHeaderBytes);
  EXPECT_TRUE(AbandonedPages().count(page)) << "the exited thread's page has live blocks";
  FreeOnNewThread(blocks, kOwnBytes);
  // The next thread adopts the abandoned page, finds none of it live and starts it over.
  std::vector<void*> again = AllocateOnNewThread(2, kOwnBytes);
  EXPECT_EQ(again[0], blocks[0]);
  EXPECT_EQ(again[1], blocks[1]);
  EXPECT_TRUE(AbandonedPages().count(page));
  FreeOnNewThread(again, kOwnBytes);
  std::thread([] { FreeSmall(AllocateSmall(kOwnBytes), kOwnBytes); }).join();  // adopts and releases it
  EXPECT_FALSE(AbandonedPages().count(page));
}

// Pages emptied by their owner go back to the pool, resident; once the pool has taken and
// put none for a second, the scavenger gives all but kSmallResidentEmptyPages of them back
// to the kernel (they stay in the pool, to be carved again).
TEST(SmallObjects, ThePoolGivesBackEmptyPagesPastTheKeptOnesOnceIdle) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the pages are malloc and free";
  const size_t pages = kSmallResidentEmptyPages + 10;
  std::thread([&] {
    std::vector<void*> blocks;
    for (size_t i = 0; i < pages * BlocksPerPage(512); ++i) blocks.push_back(AllocateSmall(kBytes));
    for (void* p : blocks) FreeSmall(p, kBytes);  // every page but the current one empties
  }).join();
  const SmallPageCounts after = CountSmallPages();
  EXPECT_GE(after.empty, pages) << "the thread's pages, the last one too once it exited";
  EXPECT_GE(after.empty_resident, pages) << "given back at once: a run taking them again would advise each";

  // The scavenger takes the pages past the kept ones off the resident list, advises them,
  // then lists them as given back: wait for the whole move, not its first half.
  auto moved = [&] {
    const SmallPageCounts now = CountSmallPages();
    return now.empty_resident <= kSmallResidentEmptyPages && now.empty >= after.empty;
  };
  const auto start = std::chrono::steady_clock::now();
  while (!moved() && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  const SmallPageCounts idle = CountSmallPages();
  EXPECT_EQ(idle.empty_resident, kSmallResidentEmptyPages) << "the pages past the kept ones were never given back";
  EXPECT_EQ(idle.empty, after.empty) << "given-back pages stay in the pool";
  EXPECT_GE(waited, std::chrono::milliseconds(500)) << "given back before the pool had been idle for a second";
}

// Threads allocate blocks of every class, hand some to each other and free what they are
// handed, while others exit with blocks still live: no block is ever handed out twice
// (each keeps the pattern its holder wrote), and at the end every page is back in the pool.
TEST(SmallObjects, ThreadsFreeingEachOthersBlocksNeverShareOne) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  const std::set<uintptr_t> abandoned_before = AbandonedPages();
  // Pages abandoned now that were not before the test: its threads' pages still unadopted.
  auto abandoned_since = [&] {
    size_t n = 0;
    for (uintptr_t p : AbandonedPages()) n += abandoned_before.count(p) == 0 ? 1 : 0;
    return n;
  };
  struct Held {
    unsigned char* p;
    size_t bytes;
    unsigned char mark;
  };
  std::mutex mu;
  std::vector<Held> exchange;
  std::atomic<int> corrupt{0};
  auto check_and_free = [&](const Held& h) {
    for (size_t i = 0; i < h.bytes; i += 16) {
      if (h.p[i] != h.mark) corrupt.fetch_add(1);
    }
    FreeSmall(h.p, h.bytes);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<Held> mine;
      for (int r = 0; r < kRounds; ++r) {
        const size_t bytes = 8 + rng() % (kMaxSmallBytes - 7);  // 8 to kMaxSmallBytes
        Held h{static_cast<unsigned char*>(AllocateSmall(bytes)), bytes, static_cast<unsigned char>(rng())};
        for (size_t i = 0; i < bytes; i += 16) h.p[i] = h.mark;
        switch (rng() % 4) {
          case 0: {  // hand it to whoever takes from the exchange next
            std::lock_guard lock(mu);
            exchange.push_back(h);
            break;
          }
          case 1: check_and_free(h); break;
          default: mine.push_back(h);
        }
        if (mine.size() > 500 || rng() % 64 == 0) {
          for (const Held& m : mine) check_and_free(m);
          mine.clear();
        }
        if (rng() % 8 == 0) {
          std::vector<Held> taken;
          {
            std::lock_guard lock(mu);
            taken.swap(exchange);
          }
          for (const Held& m : taken) check_and_free(m);
        }
      }
      // Left live as the thread exits: its pages are abandoned and the blocks freed by others.
      std::lock_guard lock(mu);
      exchange.insert(exchange.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& t : threads) t.join();
  std::thread([&] {
    for (const Held& h : exchange) check_and_free(h);
  }).join();
  EXPECT_EQ(corrupt.load(), 0) << "a block was handed out while another holder still had it";
  if (kSmallObjectCaches) {
    // An abandoned page none of whose blocks is live goes back to the pool when a thread
    // that needs a page of its class adopts it: a thread that keeps taking whole pages of
    // every class takes them all back.
    std::thread([&] {
      std::vector<std::pair<void*, size_t>> blocks;
      for (int round = 0; round < 100 && abandoned_since() > 0; ++round) {
        for (size_t bytes : {32, 48, 64, 96, 128, 192, 256, 384, 512}) {
          for (size_t i = 0; i < BlocksPerPage(bytes); ++i) blocks.emplace_back(AllocateSmall(bytes), bytes);
        }
      }
      for (auto [p, bytes] : blocks) FreeSmall(p, bytes);
    }).join();
    EXPECT_EQ(abandoned_since(), 0u);
  }
}

// Destructors of thread-locals made before a thread's first small allocation run after
// the thread has handed its pages on: they still allocate and free (from the orphan heap).
struct AllocatesWhenDestroyed {
  std::atomic<int>* freed_ok;
  ~AllocatesWhenDestroyed() {
    std::vector<void*> blocks;
    for (int i = 0; i < 300; ++i) {
      blocks.push_back(AllocateSmall(kBytes));
      std::memset(blocks.back(), i, kBytes);
    }
    bool intact = true;
    for (int i = 0; i < 300; ++i) intact = intact && static_cast<unsigned char*>(blocks[i])[kBytes - 1] == i % 256;
    for (void* p : blocks) FreeSmall(p, kBytes);
    if (intact) freed_ok->fetch_add(1);
  }
};

TEST(SmallObjects, AThreadThatIsExitingStillAllocatesAndFrees) {
  std::atomic<int> freed_ok{0};
  std::thread([&] {
    thread_local AllocatesWhenDestroyed late;  // made first, so destroyed last
    late.freed_ok = &freed_ok;
    FreeSmall(AllocateSmall(kBytes), kBytes);  // the thread's heap, handed on before `late` goes
  }).join();
  EXPECT_EQ(freed_ok.load(), 1);
  std::vector<void*> after = AllocateOnNewThread(300);  // the pages are usable by others
  FreeOnNewThread(after);
}

// A child forked while another thread is inside the page pool must find it usable: the
// pool's lock is held across fork, so the child's copy is never left locked.
TEST(SmallObjects, AChildForkedWhileAnotherThreadUsesThePoolCanAllocate) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer: the pages are malloc and free";
  if (std::string(RILL_TEST_SANITIZER) == "thread") {
    // Seen in CI: one child of 200 hung. GCC 12's TSan does not hold its own allocator's
    // locks across fork (LLVM added that in 2024, PR 96600), so a child can hang inside
    // TSan whatever our pool does.
    GTEST_SKIP() << "built with ThreadSanitizer, whose runtime is not fork-safe in a multithreaded process";
  }
  // Both threads make their first allocation (which also registers the destructor of the
  // thread's heap, through glibc's calloc) before the forks start, so that what a child
  // waits for, if anything, is the pool's lock.
  FreeSmall(AllocateSmall(kBytes), kBytes);
  std::atomic<bool> stop{false}, started{false};
  std::thread churn([&] {
    std::vector<void*> blocks;
    while (!stop.load()) {  // each round empties pages into the pool and takes them back
      for (int i = 0; i < 300; ++i) blocks.push_back(AllocateSmall(kBytes));
      for (void* p : blocks) FreeSmall(p, kBytes);
      blocks.clear();
      started.store(true);
    }
  });
  while (!started.load()) std::this_thread::yield();
  int hung = 0, failed = 0;
  for (int i = 0; i < 200 && hung == 0; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(30);  // a child stuck on the pool's lock dies of SIGALRM; one merely slowed by a
                  // loaded machine (CI runs two tests at once) has time to finish
      std::vector<void*> blocks;
      for (int j = 0; j < 300; ++j) blocks.push_back(AllocateSmall(kBytes));
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
  EXPECT_EQ(hung, 0) << "children forked while the pool was locked hung";
  EXPECT_EQ(failed, 0);
}

TEST(SmallObjects, TheAllocatorServesSharedObjectsAndNodeContainers) {
  struct Big {
    char bytes[2 * kMaxSmallBytes];  // beyond the pages' classes: operator new
  };
  auto small = std::allocate_shared<std::string>(SmallObjectAllocator<std::string>(), "shared");
  auto big = std::allocate_shared<Big>(SmallObjectAllocator<Big>());
  big->bytes[sizeof(Big::bytes) - 1] = 'x';
  EXPECT_EQ(*small, "shared");

  std::unordered_map<int, std::string, std::hash<int>, std::equal_to<int>,
                     SmallObjectAllocator<std::pair<const int, std::string>>>
      map;
  for (int i = 0; i < 1000; ++i) map.emplace(i, std::to_string(i));  // buckets outgrow the classes
  std::thread([&] { map.clear(); }).join();                          // nodes freed on another thread
  for (int i = 0; i < 1000; ++i) map.emplace(i, std::to_string(i * 2));
  EXPECT_EQ(map.at(999), "1998");
}

// The library changes no process-wide allocator state (the `rill` binary chooses glibc's
// settings at start-up, core/cli/malloc_tuning.h): after a run of tasks, glibc's fast bins
// are as the process had them, on by default.
TEST(SmallObjects, ARunOfTasksLeavesGlibcsMallocSettingsAlone) {
  if (!kSmallObjectCaches) GTEST_SKIP() << "built with AddressSanitizer, whose malloc is not glibc's";
  if (std::string(RILL_TEST_SANITIZER) == "thread")
    GTEST_SKIP() << "built with ThreadSanitizer, whose malloc is not glibc's";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.mxfast") != nullptr) {
    GTEST_SKIP() << "GLIBC_TUNABLES sets glibc.malloc.mxfast: fast bins are the user's choice here";
  }
  RunTasks(SchedulerOptions{.workers = 1}, [] {});
  // Past the 7 blocks of a size that glibc's per-thread cache holds, a freed 24-byte block
  // goes to a fast bin (and counts in fsmblks) while fast bins are on.
  const size_t before = mallinfo2().fsmblks;
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(std::malloc(24));
  for (void* p : blocks) std::free(p);
  EXPECT_GT(mallinfo2().fsmblks, before);
}

}  // namespace
}  // namespace rill::core
