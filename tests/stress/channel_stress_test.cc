// Stress (label "stress", not in the default run): many producers and consumers over one
// channel, closed when the producers are done. Every value must arrive exactly once.
// Run it under TSan too: ctest --test-dir build-tsan -L stress.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "channel.h"
#include "core/abi/host_api.h"
#include "core/runtime/variable.h"
#include "core/tasks/scheduler.h"

namespace rill::csp {
namespace {

constexpr int32_t kLodTensor = 7;

RillVariable* H(core::Variable& v) { return reinterpret_cast<RillVariable*>(&v); }

void RunScenario(int producers, int consumers, int64_t each, int64_t capacity) {
  ::rill::detail::HostSlot() = core::HostApiTable();
  const int64_t total = producers * each;
  std::vector<std::atomic<int>> seen(static_cast<size_t>(total));
  std::atomic<int64_t> sum{0};
  core::RunTasks(core::SchedulerOptions{}, [&] {
    auto ch = Channel::Make(kLodTensor, capacity);
    auto done = Channel::Make(kLodTensor, producers + consumers);
    const auto signal = [done] {
      core::Variable v;
      v.GetMutableTensor()->Allocate(RILL_INT64, {1});
      done->Send(rill::Variable(H(v)), false, nullptr, "done");
    };
    for (int p = 0; p < producers; ++p) {
      core::SpawnTask(
          [=] {
            for (int64_t i = 0; i < each; ++i) {
              core::Variable v;
              *static_cast<int64_t*>(v.GetMutableTensor()->Allocate(RILL_INT64, {1})) = p * each + i;
              ch->Send(rill::Variable(H(v)), false, nullptr, "produce");
            }
            signal();
          },
          nullptr);
    }
    for (int c = 0; c < consumers; ++c) {
      core::SpawnTask(
          [&, ch, signal] {
            core::Variable v;
            while (ch->Recv(rill::Variable(H(v)), nullptr, "consume")) {
              const int64_t x = *v.GetTensor()->data_as<int64_t>();
              seen[static_cast<size_t>(x)].fetch_add(1);
              sum += x;
            }
            signal();
          },
          nullptr);
    }
    core::Variable token;
    for (int p = 0; p < producers; ++p) done->Recv(rill::Variable(H(token)), nullptr, "wait");
    ch->Close();
    for (int c = 0; c < consumers; ++c) done->Recv(rill::Variable(H(token)), nullptr, "wait");
  });
  int64_t missing = 0, duplicated = 0;
  for (auto& s : seen) {
    missing += s.load() == 0;
    duplicated += s.load() > 1;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(sum.load(), total * (total - 1) / 2);
}

TEST(ChannelStress, ManyProducersAndConsumersUnbuffered) { RunScenario(64, 64, 20000, 0); }
TEST(ChannelStress, ManyProducersAndConsumersCapacity1) { RunScenario(64, 64, 20000, 1); }
TEST(ChannelStress, ManyProducersAndConsumersCapacity64) { RunScenario(64, 16, 20000, 64); }

}  // namespace
}  // namespace rill::csp

namespace rill::csp {
namespace {

// Unbuffered ping-pong between two tasks, many round trips: every hand-off must wake
// its partner (a lost wake-up ends in the deadlock error).
TEST(ChannelStress, PingPongRoundTrips) {
  ::rill::detail::HostSlot() = core::HostApiTable();
  for (int run = 0; run < 20000; ++run) {
    const int rounds = run < 19990 ? run % 7 + 1 : 200000;  // many short runs, a few long
    core::RunTasks(core::SchedulerOptions{}, [rounds] {
      auto ping = Channel::Make(kLodTensor, 0);
      auto pong = Channel::Make(kLodTensor, 0);
      core::SpawnTask(
          [ping, pong] {
            core::Variable v;
            while (ping->Recv(rill::Variable(H(v)), nullptr, "echo recv")) {
              pong->Send(rill::Variable(H(v)), false, nullptr, "echo send");
            }
          },
          nullptr);
      core::Variable ball;
      *static_cast<int64_t*>(ball.GetMutableTensor()->Allocate(RILL_INT64, {1})) = 1;
      for (int i = 0; i < rounds; ++i) {
        ping->Send(rill::Variable(H(ball)), false, nullptr, "main send");
        ASSERT_TRUE(pong->Recv(rill::Variable(H(ball)), nullptr, "main recv"));
      }
      ping->Close();
    });
  }
}

}  // namespace
}  // namespace rill::csp
