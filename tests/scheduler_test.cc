// The task scheduler's own guarantees (core/tasks/scheduler.h): task bodies, reuse of
// finished tasks across workers, releases batched per worker, and the end of a run and
// deadlocks found when workers go idle. Channel semantics are in channel_test.cc.
#include "core/tasks/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "channel.h"
#include "core/abi/host_api.h"
#include "core/errors.h"
#include "test_util.h"

namespace rill::core {
namespace {

constexpr int32_t kLodTensor = 7;

// Counts the live copies of itself, so a test sees every one destroyed exactly once.
struct Counted {
  explicit Counted(std::atomic<int>* live) : live(live) { ++*live; }
  Counted(const Counted& o) : live(o.live) { ++*live; }
  ~Counted() { --*live; }
  std::atomic<int>* live;
};

TEST(TaskBody, RunsAndDestroysAnInlineOrAHeapCallableOnce) {
  std::atomic<int> live{0};
  int runs = 0;
  {
    Counted c(&live);
    TaskBody small([c, &runs] { ++runs; });
    char big_pad[TaskBody::kInlineBytes] = {};
    TaskBody big([c, &runs, big_pad] { runs += 10 + big_pad[0]; });  // too big to keep inline
    TaskBody moved(std::move(small));
    moved();
    big();
    EXPECT_EQ(runs, 11);
    EXPECT_EQ(live.load(), 3);  // c, and one copy each in `moved` and `big` (none left in `small`)
    big = std::move(moved);
    EXPECT_EQ(live.load(), 2);
    big.Reset();
    EXPECT_EQ(live.load(), 1);
  }
  EXPECT_EQ(live.load(), 0);
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { ::rill::detail::HostSlot() = HostApiTable(); }
  static void Run(const std::function<void()>& main) {
    SchedulerOptions o;
    o.workers = 2;
    RunTasks(o, main);
  }
};

// Another thread cancels a run through its RunCanceller: the running main task stops at its
// next check, and RunTasks throws the canceller's error. A Cancel before the run starts
// ends it before the main task's body runs.
TEST_F(SchedulerTest, ACancellerStopsARunFromAnotherThread) {
  RunCanceller canceller;
  std::atomic<bool> started{false};
  std::thread interrupter([&] {
    while (!started.load()) std::this_thread::yield();
    canceller.Cancel("interrupted by the test", RILL_CANCELLED);
  });
  SchedulerOptions o;
  o.workers = 2;
  try {
    RunTasks(
        o,
        [&] {
          started = true;
          for (;;) ThrowIfTaskCancelled();  // a run that only a cancellation ends
        },
        &canceller);
    ADD_FAILURE() << "the run ended without the cancellation";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RILL_CANCELLED);
    EXPECT_EQ(std::string(e.what()), "interrupted by the test");
  }
  interrupter.join();

  RunCanceller early;
  early.Cancel("cancelled before it began", RILL_DEADLINE_EXCEEDED);
  bool ran = false;
  try {
    RunTasks(
        o, [&] { ran = true; }, &early);
    ADD_FAILURE() << "a cancelled run ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RILL_DEADLINE_EXCEEDED);
  }
  EXPECT_FALSE(ran);
}

// The calling thread's poll (SchedulerOptions::poll) while the task on that thread only
// computes: the task steps aside at an op boundary, the poll runs on the calling thread
// outside every task, and a poll that cancels ends the run with its error.
TEST_F(SchedulerTest, ThePollRunsOnTheCallingThreadWhileItsTaskComputes) {
  RunCanceller canceller;
  const std::thread::id caller = std::this_thread::get_id();
  int polls = 0;
  bool every_poll_on_the_caller_outside_tasks = true;
  SchedulerOptions o;
  o.workers = 1;
  o.poll_every = std::chrono::milliseconds(1);
  o.poll = [&] {
    every_poll_on_the_caller_outside_tasks &= std::this_thread::get_id() == caller && SleepingWorkers() == -1;
    if (++polls == 3) canceller.Cancel("cancelled by the third poll", RILL_CANCELLED);
  };
  int64_t ops = 0;
  try {
    RunTasks(
        o,
        [&] {
          OpBoundaries boundaries;
          for (;;) {  // ops that never park: only a poll ends the run
            boundaries.Check();
            ++ops;
          }
        },
        &canceller);
    ADD_FAILURE() << "the run ended without the poll's cancellation";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RILL_CANCELLED);
    EXPECT_EQ(std::string(e.what()), "cancelled by the third poll");
  }
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(every_poll_on_the_caller_outside_tasks);
  EXPECT_GT(ops, 0);
}

// ... and while the calling thread waits for work: its task is parked and another worker
// runs the only task that can run, which passes no op boundary.
TEST_F(SchedulerTest, ThePollRunsWhileTheCallingThreadWaitsForWork) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> polls{0};
  std::atomic<bool> a_poll_off_the_caller{false};
  SchedulerOptions o;
  o.workers = 2;
  o.poll_every = std::chrono::milliseconds(1);
  o.poll = [&] {
    if (std::this_thread::get_id() != caller) a_poll_off_the_caller = true;
    ++polls;
  };
  bool three_polls_seen = false;
  RunTasks(
      o,
      [&] {
        auto done = csp::Channel::Make(kLodTensor, 0);
        std::atomic<bool> started{false};
        SpawnTask(
            [&, done] {
              started = true;
              // No op boundary: while this runs, only the calling thread's wait can poll.
              three_polls_seen = test::WaitUntil([&] { return polls.load() >= 3; });
              Variable one;
              *static_cast<int64_t*>(one.GetMutableTensor()->Allocate(RILL_INT64, {1})) = 1;
              done->Send(rill::Variable(reinterpret_cast<RillVariable*>(&one)), false, nullptr, "send");
            },
            nullptr);
        // Busy until the go block started, so that it runs on the other worker.
        while (!started.load()) std::this_thread::yield();
        Variable got;
        done->Recv(rill::Variable(reinterpret_cast<RillVariable*>(&got)), nullptr, "recv");
      },
      nullptr);
  EXPECT_TRUE(three_polls_seen) << "the calling thread, waiting for work, never polled";
  EXPECT_FALSE(a_poll_off_the_caller.load());
}

TEST_F(SchedulerTest, EveryGoBlockRunsOnceWhileTasksAreReusedAcrossWorkers) {
  constexpr int kRounds = 20, kPerRound = 1000;  // rounds reuse the tasks of the last ones
  std::atomic<int> ran{0};
  std::atomic<int> live{0};
  Run([&] {
    auto done = csp::Channel::Make(kLodTensor, kPerRound);
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < kPerRound; ++i) {
        SpawnTask(
            [&ran, done, c = Counted(&live)] {
              ++ran;
              Variable one;
              *static_cast<int64_t*>(one.GetMutableTensor()->Allocate(RILL_INT64, {1})) = 1;
              done->Send(rill::Variable(reinterpret_cast<RillVariable*>(&one)), false, nullptr, "send");
            },
            nullptr);
      }
      Variable got;
      for (int i = 0; i < kPerRound; ++i)
        done->Recv(rill::Variable(reinterpret_cast<RillVariable*>(&got)), nullptr, "recv");
    }
  });
  EXPECT_EQ(ran.load(), kRounds * kPerRound);
  EXPECT_EQ(live.load(), 0) << "a finished task kept its body";
}

// The main task never parks here, so its worker is busy: each round's tasks can only run
// on the other one, which has gone to sleep by then (or has yet to start) and must be woken
// (once, however many tasks are readied while it wakes up).
TEST_F(SchedulerTest, ASleepingWorkerIsWokenForTasksReadiedWhileTheOtherIsBusy) {
  constexpr int kRounds = 20, kTasks = 50;
  int rounds_done = 0;
  std::vector<std::atomic<int>> runs(kRounds);  // outlives the run's tasks
  Run([&] {
    for (int round = 0; round < kRounds; ++round) {
      ASSERT_TRUE(test::WaitUntil([] { return SleepingWorkers() == 1; })) << "the other worker never went to sleep";
      std::atomic<int>& ran = runs[round];
      for (int i = 0; i < kTasks; ++i) SpawnTask([&ran] { ++ran; }, nullptr);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (ran.load() < kTasks && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      if (ran.load() < kTasks) return;
      ++rounds_done;
    }
  });
  EXPECT_EQ(rounds_done, kRounds) << "tasks readied while the other worker was busy were never run";
}

// The threads of this process, as the kernel lists them.
size_t ProcessThreads() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory();
  return n;
}

// A run with only ever one task ready runs on the calling thread: it starts no other,
// however many workers it may have.
TEST_F(SchedulerTest, ARunWithOneTaskReadyAtATimeStartsNoThread) {
  const size_t before = ProcessThreads();
  size_t during = 0;
  SchedulerOptions o;
  o.workers = 8;
  RunTasks(o, [&] { during = ProcessThreads(); });
  EXPECT_EQ(during, before);
}

// A burst of tasks readied at once, each waiting until all of them run, ends only if every
// one gets a worker of its own at the same time: workers keep starting while tasks wait.
TEST_F(SchedulerTest, ABurstOfReadyTasksGetsEveryWorker) {
  constexpr int kWorkers = 6;
  std::atomic<int> running{0}, all_met{0};
  SchedulerOptions o;
  o.workers = kWorkers;
  RunTasks(o, [&] {
    for (int i = 0; i < kWorkers - 1; ++i) {
      SpawnTask(
          [&] {
            ++running;
            if (test::WaitUntil([&] { return running.load() == kWorkers - 1; })) ++all_met;
          },
          nullptr);
    }
    ASSERT_TRUE(test::WaitUntil([&] { return all_met.load() == kWorkers - 1; }))
        << running.load() << " of " << kWorkers - 1 << " tasks ran at once";
  });
}

TEST_F(SchedulerTest, ReleaseLaterDropsInBatchesAndEverythingBeforeTheRunEnds) {
  std::atomic<int> live{0};
  ReleaseLater(std::make_shared<Counted>(&live));  // outside a task: at once
  EXPECT_EQ(live.load(), 0);
  int after_one = -1, after_batch = -1;
  Run([&] {
    // The main task does not park in between, so it stays on one worker, whose list starts
    // empty in a new run.
    ReleaseLater(std::make_shared<Counted>(&live));
    after_one = live.load();
    for (size_t i = 1; i < kReleaseBatch; ++i) ReleaseLater(std::make_shared<Counted>(&live));
    after_batch = live.load();
    for (int i = 0; i < 1000; ++i) {
      SpawnTask([&live] { ReleaseLater(std::make_shared<Counted>(&live)); }, nullptr);
    }
  });
  EXPECT_EQ(after_one, 1) << "dropped before its batch was full";
  EXPECT_EQ(after_batch, 0) << "a full batch was not dropped";
  EXPECT_EQ(live.load(), 0) << "something released later outlived the run";

  int with_one_worker = -1;  // no lines to save between workers: at once
  SchedulerOptions one;
  one.workers = 1;
  RunTasks(one, [&] {
    ReleaseLater(std::make_shared<Counted>(&live));
    with_one_worker = live.load();
  });
  EXPECT_EQ(with_one_worker, 0);
}

TEST_F(SchedulerTest, ADeadlockCountsOnlyTheTasksStillAlive) {
  std::string err;
  try {
    Run([] {
      for (int i = 0; i < 500; ++i) SpawnTask([] {}, nullptr);  // end, and stay for reuse
      auto never = csp::Channel::Make(kLodTensor, 0);
      SpawnTask(
          [never] {
            Variable v;
            never->Recv(rill::Variable(reinterpret_cast<RillVariable*>(&v)), nullptr, "go recv");
          },
          nullptr);
      Variable v;
      never->Recv(rill::Variable(reinterpret_cast<RillVariable*>(&v)), nullptr, "main recv");
    });
  } catch (const std::exception& e) {
    err = e.what();
  }
  EXPECT_EQ(err.rfind("deadlock: all 2 tasks are blocked: ", 0), 0u) << err;
  EXPECT_NE(err.find("main: main recv"), std::string::npos) << err;
  EXPECT_NE(err.find("task: go recv"), std::string::npos) << err;
}

}  // namespace
}  // namespace rill::core
