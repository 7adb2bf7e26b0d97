// Go's channel and select semantics, rule by rule, on the csp plugin's channels driven
// directly (host table in-process) from tasks of the core scheduler.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "channel.h"
#include "core/abi/host_api.h"
#include "core/errors.h"
#include "core/runtime/variable.h"
#include "core/tasks/scheduler.h"
#include "select.h"
#include "test_util.h"

namespace rill::csp {
namespace {

using namespace std::chrono_literals;
using core::RunTasks;

constexpr int32_t kLodTensor = 7;

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override { ::rill::detail::HostSlot() = core::HostApiTable(); }
};

rill::Variable V(core::Variable& v) { return rill::Variable(reinterpret_cast<RillVariable*>(&v)); }

void SetInt(core::Variable& v, int64_t x) {
  *static_cast<int64_t*>(v.GetMutableTensor()->Allocate(RILL_INT64, {1})) = x;
}
int64_t IntOf(const core::Variable& v) { return *v.GetTensor()->data_as<int64_t>(); }

void RunMain(const std::function<void()>& main, int workers = 2) {
  core::SchedulerOptions o;
  o.workers = workers;
  RunTasks(o, main);
}
void Go(std::function<void()> body) { core::SpawnTask(std::move(body), nullptr); }

void SendInt(Channel& ch, int64_t x) {
  core::Variable v;
  SetInt(v, x);
  ch.Send(V(v), false, nullptr, "test send");
}
// Receives; returns the value, or -1 when the channel is closed and drained.
int64_t RecvInt(Channel& ch) {
  core::Variable v;
  return ch.Recv(V(v), nullptr, "test recv") ? IntOf(v) : -1;
}

// Waits until the channel's description holds `state` (its waiters parked), yielding the
// thread meanwhile; fails the test after 10 s.
void WaitUntilDescribed(Channel& ch, const std::string& state) {
  if (!test::WaitUntil([&] { return ch.Describe().find(state) != std::string::npos; })) {
    ADD_FAILURE() << "still " << ch.Describe() << "; waited for " << state;
  }
}

// Waits until a worker of the run other than the caller's is asleep; fails the test after
// 10 s.
void WaitUntilTheOtherWorkerSleeps() {
  if (!test::WaitUntil([] { return core::SleepingWorkers() >= 1; })) {
    ADD_FAILURE() << "the other worker never went to sleep";
  }
}

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_F(ChannelTest, UnbufferedSendWaitsForItsReceiverAndMovesTheValue) {
  std::atomic<bool> sent{false};
  core::Variable value;
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 0);
    SetInt(value, 42);
    Go([&, ch] {
      ch->Send(V(value), false, nullptr, "send");
      sent = true;
    });
    WaitUntilDescribed(*ch, "1 senders and 0 receivers waiting");  // parked on the other worker
    EXPECT_FALSE(sent.load()) << "an unbuffered send completed with no receiver";
    EXPECT_EQ(RecvInt(*ch), 42);
  });
  EXPECT_TRUE(sent.load());
  EXPECT_FALSE(value.initialized()) << "the sent variable should have been moved";
}

// Ops borrow a channel from its variable; a waiting task holds it, so overwriting every
// variable that held the channel (here: dropping the only shared_ptr) while `wait` is
// parked in it leaves the channel alive for the send that completes the wait (ASan: no
// use-after-free). `wait` returns the value it received.
void ExpectAParkedWaiterKeepsItsChannelAlive(const std::function<int64_t(Channel*)>& wait) {
  int64_t got = 0;
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 0);
    std::weak_ptr<Channel> watch = ch;
    Channel* borrowed = ch.get();
    Go([&, borrowed] { got = wait(borrowed); });
    WaitUntilDescribed(*borrowed, "0 senders and 1 receivers waiting");  // the waiter is parked in it
    ch.reset();
    EXPECT_FALSE(watch.expired()) << "the parked waiter should hold the channel";
    SendInt(*borrowed, 7);
  });
  EXPECT_EQ(got, 7);
}

TEST_F(ChannelTest, AWaitingReceiverKeepsItsChannelAlive) {
  ExpectAParkedWaiterKeepsItsChannelAlive([](Channel* ch) { return RecvInt(*ch); });
}

// The same for a select: while it waits it holds every channel its cases borrowed.
TEST_F(ChannelTest, AWaitingSelectKeepsItsChannelsAlive) {
  ExpectAParkedWaiterKeepsItsChannelAlive([](Channel* ch) -> int64_t {
    core::Variable out;
    const std::vector<SelectCase> cases = {{SelectCase::kRecv, ch, V(out).handle()}};
    EXPECT_EQ(RunSelect(cases, nullptr, "test select"), 0u);
    return IntOf(out);
  });
}

TEST_F(ChannelTest, CopyLeavesTheSentVariableAsItWas) {
  RunMain([] {
    auto ch = Channel::Make(kLodTensor, 1);
    core::Variable v;
    SetInt(v, 7);
    ch->Send(V(v), true, nullptr, "send");
    EXPECT_EQ(IntOf(v), 7);
    EXPECT_EQ(RecvInt(*ch), 7);
  });
}

// An unbuffered copy hands a scalar over as its bytes (written into the receiver's own
// scalar in place), whichever side waited: the receiver ends up holding what a tensor copy
// would have given it, and never writes into memory another tensor shares.
TEST_F(ChannelTest, UnbufferedCopiesReplaceWhateverTheReceiverHeld) {
  for (const bool receiver_waits : {true, false}) {
    SCOPED_TRACE(receiver_waits ? "the receiver waited" : "the sender waited");
    // Receives one copied send of `value` into `into`, on one worker, with the side that
    // runs first waiting for the other.
    const auto hand_over = [&](core::Variable& value, core::Variable& into) {
      RunMain(
          [&] {
            auto ch = Channel::Make(kLodTensor, 0);
            if (receiver_waits) {
              Go([&, ch] { ch->Send(V(value), /*copy=*/true, nullptr, "send"); });
              EXPECT_TRUE(ch->Recv(V(into), nullptr, "recv"));
            } else {
              Go([&, ch] { EXPECT_TRUE(ch->Recv(V(into), nullptr, "recv")); });
              ch->Send(V(value), /*copy=*/true, nullptr, "send");
            }
          },
          /*workers=*/1);
    };
    core::Variable i64;
    SetInt(i64, 41);

    core::Variable empty;
    hand_over(i64, empty);
    EXPECT_EQ(empty.GetTensor()->Describe(), "int64[1] {41}");
    EXPECT_EQ(i64.GetTensor()->Describe(), "int64[1] {41}") << "a copied send leaves its value";

    core::Variable other_dtype_with_lod;
    other_dtype_with_lod.GetMutableTensor()->Allocate(RILL_FP32, {2, 2});
    other_dtype_with_lod.GetMutableTensor()->mutable_lod() = {{0, 1, 2}};
    hand_over(i64, other_dtype_with_lod);
    EXPECT_EQ(other_dtype_with_lod.GetTensor()->Describe(), "int64[1] {41}");
    EXPECT_TRUE(other_dtype_with_lod.GetTensor()->lod().empty()) << "the value sent had no LoD";

    core::Variable scalar_with_lod;
    SetInt(scalar_with_lod, 3);
    scalar_with_lod.GetMutableTensor()->mutable_lod() = {{0, 1}};
    hand_over(i64, scalar_with_lod);
    EXPECT_EQ(scalar_with_lod.GetTensor()->Describe(), "int64[1] {41}");
    EXPECT_TRUE(scalar_with_lod.GetTensor()->lod().empty()) << "the value sent had no LoD";

    core::Variable shared;
    SetInt(shared, 100);
    const core::Tensor alias = *shared.GetTensor();  // shares the memory
    hand_over(i64, shared);
    EXPECT_EQ(shared.GetTensor()->Describe(), "int64[1] {41}");
    EXPECT_EQ(alias.Describe(), "int64[1] {100}") << "a receive wrote into memory another tensor shares";

    core::Variable in_place;
    SetInt(in_place, -1);
    const void* memory = in_place.GetTensor()->data();
    hand_over(i64, in_place);
    EXPECT_EQ(in_place.GetTensor()->Describe(), "int64[1] {41}");
    EXPECT_EQ(in_place.GetTensor()->data(), memory) << "a scalar receiver's own memory should be rewritten";

    core::Variable with_lod;  // not a scalar by var_scalar's rule: copied as a tensor, LoD and all
    SetInt(with_lod, 5);
    with_lod.GetMutableTensor()->mutable_lod() = {{0, 1}};
    core::Variable got_lod;
    hand_over(with_lod, got_lod);
    EXPECT_EQ(got_lod.GetTensor()->Describe(), "int64[1] {5}");
    EXPECT_EQ(got_lod.GetTensor()->lod(), (core::LoD{{0, 1}}));

    core::Variable wide;
    float* w = static_cast<float*>(wide.GetMutableTensor()->Allocate(RILL_FP32, {3}));
    w[0] = 1, w[1] = 2, w[2] = 3;
    core::Variable got_wide;
    SetInt(got_wide, 9);
    hand_over(wide, got_wide);
    EXPECT_EQ(got_wide.GetTensor()->Describe(), "fp32[3] {1, 2, 3}");
    EXPECT_EQ(wide.GetTensor()->Describe(), "fp32[3] {1, 2, 3}");
  }
}

TEST_F(ChannelTest, BufferedIsFifoAndBlocksOnlyWhenFull) {
  std::atomic<bool> fourth_sent{false};
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 3);
    for (int i = 0; i < 3; ++i) SendInt(*ch, i);  // would deadlock if any blocked
    Go([&, ch] {
      SendInt(*ch, 3);
      fourth_sent = true;
    });
    WaitUntilDescribed(*ch, "3 buffered, 1 senders and 0 receivers waiting");
    EXPECT_FALSE(fourth_sent.load()) << "a send into a full buffer did not block";
    for (int i = 0; i < 4; ++i) EXPECT_EQ(RecvInt(*ch), i);
  });
  EXPECT_TRUE(fourth_sent.load());
}

// The buffer grows as values arrive, and values keep their order across each growth,
// including when the ring has wrapped (head past slot 0) before it grows.
TEST_F(ChannelTest, ABufferGrowsAsValuesArriveAndStaysFifo) {
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 1000);
    int64_t sent = 0, received = 0;
    for (int round = 0; round < 6; ++round) {
      for (int i = 0; i < 10 << round; ++i) SendInt(*ch, sent++);
      for (int i = 0; i < 3 << round; ++i) EXPECT_EQ(RecvInt(*ch), received++);
    }
    while (sent < 1000 + received) SendInt(*ch, sent++);  // full: would deadlock past capacity
    EXPECT_NE(ch->Describe().find("1000 buffered"), std::string::npos) << ch->Describe();
    while (received < sent) EXPECT_EQ(RecvInt(*ch), received++);
  });
}

TEST_F(ChannelTest, CloseWakesEveryBlockedReceiverAndSender) {
  std::atomic<int> receivers_closed{0}, senders_failed{0};
  RunMain([&] {
    auto empty = Channel::Make(kLodTensor, 0);
    auto full = Channel::Make(kLodTensor, 1);
    auto done = Channel::Make(kLodTensor, 10);
    SendInt(*full, 0);
    for (int i = 0; i < 3; ++i) {
      Go([&, empty, done] {
        if (RecvInt(*empty) == -1) ++receivers_closed;
        SendInt(*done, 1);
      });
      Go([&, full, done] {
        if (ErrorOf([&] { SendInt(*full, 1); }).find("send on a closed channel") != std::string::npos) ++senders_failed;
        SendInt(*done, 1);
      });
    }
    WaitUntilDescribed(*empty, "0 senders and 3 receivers waiting");  // all six blocked
    WaitUntilDescribed(*full, "3 senders and 0 receivers waiting");
    empty->Close();
    full->Close();
    for (int i = 0; i < 6; ++i) RecvInt(*done);
  });
  EXPECT_EQ(receivers_closed.load(), 3);
  EXPECT_EQ(senders_failed.load(), 3);
}

TEST_F(ChannelTest, ValuesBufferedBeforeCloseAreStillReceivedThenZeroValue) {
  RunMain([] {
    auto ch = Channel::Make(kLodTensor, 2);
    SendInt(*ch, 10);
    SendInt(*ch, 20);
    ch->Close();
    EXPECT_EQ(RecvInt(*ch), 10);
    EXPECT_EQ(RecvInt(*ch), 20);
    core::Variable out;
    out.GetMutableTensor()->Allocate(RILL_FP32, {2, 3});
    for (int i = 0; i < 6; ++i) out.GetMutableTensor()->data_as<float>()[i] = 5.f;
    EXPECT_FALSE(ch->Recv(V(out), nullptr, "recv"));  // closed and drained: at once
    const core::Tensor& t = *out.GetTensor();
    EXPECT_EQ(t.dims().ToVector(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t.dtype(), RILL_FP32);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data_as<float>()[i], 0.f);
  });
}

TEST_F(ChannelTest, SendOnClosedAndDoubleCloseAreErrors) {
  RunMain([] {
    auto ch = Channel::Make(kLodTensor, 1);
    ch->Close();
    EXPECT_EQ(ErrorOf([&] { SendInt(*ch, 1); }), "send on a closed channel");
    EXPECT_EQ(ErrorOf([&] { ch->Close(); }), "close of a closed channel");
  });
}

TEST_F(ChannelTest, ElementTypesAreChecked) {
  RunMain([] {
    auto fp32 = Channel::Make(RILL_FP32, 1);
    EXPECT_EQ(ErrorOf([&] { SendInt(*fp32, 1); }), "this channel carries fp32 tensors; the value is int64");
    auto of_channels = Channel::Make(16, 1);
    EXPECT_NE(ErrorOf([&] { SendInt(*of_channels, 1); }).find("this channel carries channels"), std::string::npos);
    core::Variable empty;
    EXPECT_NE(ErrorOf([&] { fp32->Send(V(empty), false, nullptr, "send"); }).find("holds nothing"), std::string::npos);
  });
  EXPECT_NE(ErrorOf([] { Channel::Make(8, 0); }).find("data_type 8 is not supported"), std::string::npos);
  EXPECT_NE(ErrorOf([] { Channel::Make(kLodTensor, -1); }).find("capacity -1 is out of range"), std::string::npos);
}

// A buffered value replaces whatever the receiving variable held (a tensor with LoD,
// selected rows, a tensor sharing memory with another, which is left alone), and a copied
// send leaves its own value as it was.
TEST_F(ChannelTest, BufferedValuesReplaceWhateverTheReceiverHeld) {
  RunMain([] {
    auto ch = Channel::Make(kLodTensor, 8);
    core::Variable i8, f64, flag, wide;
    *static_cast<int8_t*>(i8.GetMutableTensor()->Allocate(RILL_INT8, {1})) = -7;
    *static_cast<double*>(f64.GetMutableTensor()->Allocate(RILL_FP64, {1})) = 2.5;
    *static_cast<bool*>(flag.GetMutableTensor()->Allocate(RILL_BOOL, {1})) = true;
    float* w = static_cast<float*>(wide.GetMutableTensor()->Allocate(RILL_FP32, {3}));
    w[0] = 1, w[1] = 2, w[2] = 3;
    for (core::Variable* v : {&i8, &f64, &flag, &wide, &i8, &f64}) ch->Send(V(*v), /*copy=*/true, nullptr, "send");
    EXPECT_EQ(i8.GetTensor()->Describe(), "int8[1] {-7}") << "a copied send leaves its value";

    core::Variable empty;
    ASSERT_TRUE(ch->Recv(V(empty), nullptr, "recv"));
    EXPECT_EQ(empty.GetTensor()->Describe(), "int8[1] {-7}");

    core::Variable with_lod;
    with_lod.GetMutableTensor()->Allocate(RILL_FP32, {2, 2});
    with_lod.GetMutableTensor()->mutable_lod() = {{0, 1, 2}};
    ASSERT_TRUE(ch->Recv(V(with_lod), nullptr, "recv"));
    EXPECT_EQ(with_lod.GetTensor()->Describe(), "fp64[1] {2.5}");
    EXPECT_TRUE(with_lod.GetTensor()->lod().empty()) << "the value sent had no LoD";

    core::Variable rows;
    rows.GetMutableSelectedRows();
    ASSERT_TRUE(ch->Recv(V(rows), nullptr, "recv"));
    ASSERT_NE(rows.GetTensor(), nullptr) << rows.Describe();
    EXPECT_EQ(rows.GetTensor()->Describe(), "bool[1] {true}");

    core::Variable any;
    ASSERT_TRUE(ch->Recv(V(any), nullptr, "recv"));
    EXPECT_EQ(any.GetTensor()->Describe(), "fp32[3] {1, 2, 3}") << "not a scalar: a tensor of its own";

    core::Variable shared;
    *static_cast<int8_t*>(shared.GetMutableTensor()->Allocate(RILL_INT8, {1})) = 100;
    const core::Tensor alias = *shared.GetTensor();  // shares the memory
    ASSERT_TRUE(ch->Recv(V(shared), nullptr, "recv"));
    EXPECT_EQ(shared.GetTensor()->Describe(), "int8[1] {-7}");
    EXPECT_EQ(alias.Describe(), "int8[1] {100}") << "a receive wrote into memory another tensor shares";

    core::Variable scalar_before;
    *static_cast<double*>(scalar_before.GetMutableTensor()->Allocate(RILL_FP64, {1})) = -1;
    ASSERT_TRUE(ch->Recv(V(scalar_before), nullptr, "recv"));
    EXPECT_EQ(scalar_before.GetTensor()->Describe(), "fp64[1] {2.5}");
  });
}

TEST_F(ChannelTest, AThreadOutsideTheSchedulerCanReceiveFromATask) {
  auto ch = Channel::Make(kLodTensor, 0);
  int64_t got = 0;
  std::thread outside([&] { got = RecvInt(*ch); });
  // Let it block first: a thread outside the scheduler is not counted by deadlock
  // detection, so a task parked on it alone would look deadlocked.
  WaitUntilDescribed(*ch, "0 senders and 1 receivers waiting");
  RunMain([&] { SendInt(*ch, 5); });
  outside.join();
  EXPECT_EQ(got, 5);
}

// ---- select ----------------------------------------------------------------------------

std::vector<SelectCase> RecvCases(const std::vector<std::shared_ptr<Channel>>& chans,
                                  std::vector<core::Variable>& outs) {
  std::vector<SelectCase> cases;
  for (size_t i = 0; i < chans.size(); ++i) {
    cases.push_back(SelectCase{SelectCase::kRecv, chans[i].get(), reinterpret_cast<RillVariable*>(&outs[i])});
  }
  return cases;
}

TEST_F(ChannelTest, SelectChoosesUniformlyAmongReadyCases) {
  // A false alarm once in a million runs (the suite runs three times per CI, so 0.1% was
  // seen), with enough trials to catch a smaller bias than 30,000 trials at 0.1% did: a
  // bias of cell probabilities d_i is flagged once 3 * kTrials * sum(d_i^2) passes 27.6.
  constexpr int kTrials = 100000;
  constexpr int kCases = 3;
  std::vector<int> hits(kCases, 0);
  RunMain([&] {
    std::vector<std::shared_ptr<Channel>> chans;
    for (int i = 0; i < kCases; ++i) chans.push_back(Channel::Make(kLodTensor, 1));
    std::vector<core::Variable> outs(kCases);
    auto cases = RecvCases(chans, outs);
    cases.push_back(SelectCase{SelectCase::kDefault, nullptr, nullptr});
    for (auto& c : chans) SendInt(*c, 1);
    for (int t = 0; t < kTrials; ++t) {
      const size_t k = RunSelect(cases, nullptr, "select");
      ASSERT_LT(k, static_cast<size_t>(kCases)) << "default taken while every case was ready";
      ++hits[k];
      SendInt(*chans[k], 1);  // ready again
    }
  });
  // Chi-square with 2 degrees of freedom; 27.6 is the 1e-6 critical value (-2 ln 1e-6).
  const double expected = static_cast<double>(kTrials) / kCases;
  double chi2 = 0;
  for (int h : hits) chi2 += (h - expected) * (h - expected) / expected;
  EXPECT_LT(chi2, 27.6) << hits[0] << " " << hits[1] << " " << hits[2];
}

TEST_F(ChannelTest, SelectTakesDefaultOnlyWhenNothingIsReady) {
  RunMain([] {
    auto a = Channel::Make(kLodTensor, 1);
    auto closed = Channel::Make(kLodTensor, 0);
    std::vector<core::Variable> outs(2);
    auto cases = RecvCases({a, closed}, outs);
    cases.insert(cases.begin(), SelectCase{SelectCase::kDefault, nullptr, nullptr});
    EXPECT_EQ(RunSelect({cases[0], cases[1]}, nullptr, "select"), 0u) << "nothing ready: default";
    SendInt(*a, 3);
    EXPECT_EQ(RunSelect({cases[0], cases[1]}, nullptr, "select"), 1u) << "a ready: not default";
    EXPECT_EQ(IntOf(outs[0]), 3);
    closed->Close();
    SetInt(outs[1], 9);
    EXPECT_EQ(RunSelect({cases[0], cases[2]}, nullptr, "select"), 1u) << "a closed channel is ready";
    EXPECT_EQ(IntOf(outs[1]), 0) << "receive from closed gives the zero value";
  });
}

TEST_F(ChannelTest, SelectSendCaseWinsOverDefaultOnABufferedChannel) {
  RunMain([] {
    auto ch = Channel::Make(kLodTensor, 1);
    core::Variable x;
    SetInt(x, 8);
    std::vector<SelectCase> cases = {{SelectCase::kSend, ch.get(), reinterpret_cast<RillVariable*>(&x)},
                                     {SelectCase::kDefault, nullptr, nullptr}};
    EXPECT_EQ(RunSelect(cases, nullptr, "select"), 0u);
    EXPECT_EQ(RecvInt(*ch), 8);
  });
}

TEST_F(ChannelTest, BlockedSelectCompletesExactlyOneCase) {
  RunMain([] {
    for (int round = 0; round < 200; ++round) {
      auto a = Channel::Make(kLodTensor, 1);
      auto b = Channel::Make(kLodTensor, 1);
      std::vector<core::Variable> outs(2);
      auto cases = RecvCases({a, b}, outs);
      Go([a, b] {
        SendInt(*a, 1);
        SendInt(*b, 2);
      });
      const size_t k = RunSelect(cases, nullptr, "select");
      EXPECT_EQ(IntOf(outs[k]), static_cast<int64_t>(k + 1));
      // The other value is still there: exactly one case took one value.
      EXPECT_EQ(RecvInt(k == 0 ? *b : *a), static_cast<int64_t>(k == 0 ? 2 : 1));
    }
  });
}

// More cases than a select keeps on the stack (PerCase's 8), some channels named twice:
// polled, then blocked until a sender comes.
TEST_F(ChannelTest, ASelectOfManyCasesPollsAndBlocks) {
  RunMain([] {
    constexpr int kChannels = 10;
    std::vector<std::shared_ptr<Channel>> chans;
    for (int i = 0; i < kChannels; ++i) chans.push_back(Channel::Make(kLodTensor, 1));
    for (int i = 0; i < 3; ++i) chans.push_back(chans[static_cast<size_t>(i)]);  // 13 cases, 10 channels
    std::vector<core::Variable> outs(chans.size());
    auto cases = RecvCases(chans, outs);
    SendInt(*chans[7], 70);
    EXPECT_EQ(RunSelect(cases, nullptr, "select"), 7u) << "the one ready case";
    EXPECT_EQ(IntOf(outs[7]), 70);
    Go([c = chans[9]] { SendInt(*c, 90); });
    EXPECT_EQ(RunSelect(cases, nullptr, "select"), 9u) << "blocked until the sender came";
    EXPECT_EQ(IntOf(outs[9]), 90);
    SendInt(*chans[1], 10);
    const size_t k = RunSelect(cases, nullptr, "select");
    EXPECT_TRUE(k == 1 || k == 11) << k << ": channel 1 is cases 1 and 11";
    EXPECT_EQ(IntOf(outs[k]), 10);
  });
}

// A few cases (kept on the stack), one channel named twice and in between another: each
// channel is locked once, and the case that runs is one of the twice-named one's.
TEST_F(ChannelTest, ASelectOfAFewCasesNamingAChannelTwiceLocksItOnce) {
  RunMain([] {
    auto a = Channel::Make(kLodTensor, 1);
    auto b = Channel::Make(kLodTensor, 1);
    std::vector<std::shared_ptr<Channel>> chans = {b, a, b};
    std::vector<core::Variable> outs(chans.size());
    auto cases = RecvCases(chans, outs);
    SendInt(*b, 5);
    const size_t k = RunSelect(cases, nullptr, "select");
    EXPECT_TRUE(k == 0 || k == 2) << k;
    EXPECT_EQ(IntOf(outs[k]), 5);
    Go([a] { SendInt(*a, 6); });
    EXPECT_EQ(RunSelect(cases, nullptr, "select"), 1u) << "blocked until the sender came";
    EXPECT_EQ(IntOf(outs[1]), 6);
  });
}

TEST_F(ChannelTest, SelectsOverTheSameChannelsInOppositeOrderDoNotDeadlock) {
  constexpr int kRounds = 5000;
  int64_t done = 0;
  RunMain([&] {
    auto a = Channel::Make(kLodTensor, 0);
    auto b = Channel::Make(kLodTensor, 0);
    auto finished = Channel::Make(kLodTensor, 2);
    // Each side offers both directions; every round one of the two pairings happens.
    const auto side = [&](std::shared_ptr<Channel> first, std::shared_ptr<Channel> second) {
      for (int i = 0; i < kRounds; ++i) {
        core::Variable out, x;
        SetInt(x, i);
        std::vector<SelectCase> cases = {{SelectCase::kSend, first.get(), reinterpret_cast<RillVariable*>(&x)},
                                         {SelectCase::kRecv, second.get(), reinterpret_cast<RillVariable*>(&out)}};
        RunSelect(cases, nullptr, "select");
      }
      SendInt(*finished, 1);
    };
    Go([=] { side(a, b); });
    Go([=] { side(b, a); });
    done = RecvInt(*finished) + RecvInt(*finished);
  });
  EXPECT_EQ(done, 2);
}

// ---- tasks: deadlock, errors, clean end -----------------------------------------------

// While a task runs ops (the executor holds an OpBoundaries), a partner it readies waits
// in its worker's runnext instead of waking a sleeping worker. It still runs while its
// waker keeps the CPU: after kDeferredWakeOps op boundaries the wake-up is made, and a
// waker that ends hands its worker to the partner.
void ExpectReadiedPartnerRuns(bool waker_keeps_running) {
  std::atomic<bool> received{false};
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 0);
    Go([&, ch] {
      RecvInt(*ch);
      received = true;
    });
    WaitUntilDescribed(*ch, "0 senders and 1 receivers waiting");
    WaitUntilTheOtherWorkerSleeps();
    const auto wait_for_receiver = [&] {
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (!received.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    };
    if (waker_keeps_running) {
      core::OpBoundaries ops;
      SendInt(*ch, 1);  // readies the receiver into this worker's runnext
      for (int i = 0; i < core::OpBoundaries::kDeferredWakeOps; ++i) ops.Check();
      wait_for_receiver();  // never parks: the receiver needs the other worker
      EXPECT_TRUE(received.load()) << "the receiver waited while its waker ran ops";
    } else {
      Go([ch] {
        core::OpBoundaries ops;
        SendInt(*ch, 1);
      });
      wait_for_receiver();  // this (main) task holds one worker; the waker ended on the other
      EXPECT_TRUE(received.load()) << "the receiver waited after its waker ended";
    }
  });
}

// The two tasks of a hand-off stay on one worker: an idle worker does not take a partner
// from its waker's runnext while the waker stays busy for a short while (300 us, well under
// the 1 ms after which it may), though the deferred wake-up has been made. Taking it split
// producer/consumer pairs across workers, 2-3x slower. Counted over trials, as a noisy
// machine may stall the waker's thread past the bound now and then.
TEST_F(ChannelTest, AReadiedPartnerStaysWithItsBrieflyBusyWaker) {
  constexpr int kTrials = 10;
  int stayed = 0;
  RunMain([&] {
    for (int trial = 0; trial < kTrials; ++trial) {
      auto ch = Channel::Make(kLodTensor, 0);
      auto reply = Channel::Make(kLodTensor, 1);  // the receiver never waits on its reply
      std::atomic<bool> ran{false};
      Go([&, ch, reply] {
        RecvInt(*ch);
        ran = true;
        SendInt(*reply, 1);
      });
      WaitUntilDescribed(*ch, "0 senders and 1 receivers waiting");
      WaitUntilTheOtherWorkerSleeps();
      {
        core::OpBoundaries ops;
        SendInt(*ch, 1);  // readies the receiver into this worker's runnext
        const auto until = std::chrono::steady_clock::now() + 300us;
        while (std::chrono::steady_clock::now() < until) ops.Check();  // makes the deferred wake-up
      }
      if (!ran.load()) ++stayed;
      RecvInt(*reply);  // parks: the receiver runs here now if it has not yet
    }
  });
  EXPECT_GE(stayed, kTrials - 2) << "an idle worker took the readied partner from its busy waker";
}

TEST_F(ChannelTest, AReadiedPartnerRunsAfterItsWakersNextOps) { ExpectReadiedPartnerRuns(true); }
TEST_F(ChannelTest, AReadiedPartnerRunsOnceItsWakerEnds) { ExpectReadiedPartnerRuns(false); }

TEST_F(ChannelTest, ALoneReceiveIsADeadlockNamingTheWait) {
  const std::string err = ErrorOf([] {
    RunMain([] {
      auto ch = Channel::Make(kLodTensor, 0);
      RecvInt(*ch);
    });
  });
  EXPECT_EQ(err, "deadlock: all 1 tasks are blocked: main: test recv");
}

TEST_F(ChannelTest, TasksWaitingOnEachOtherAreADeadlock) {
  const std::string err = ErrorOf([] {
    RunMain([] {
      auto a = Channel::Make(kLodTensor, 0);
      auto b = Channel::Make(kLodTensor, 0);
      Go([a, b] {
        RecvInt(*a);
        SendInt(*b, 1);
      });
      RecvInt(*b);
      SendInt(*a, 1);
    });
  });
  EXPECT_NE(err.find("deadlock: all 2 tasks are blocked"), std::string::npos) << err;
}

// Main ends once every block has reported that it is about to block on `never`: each is
// then parked there, or parks after the run ended, and either way wakes cancelled.
TEST_F(ChannelTest, MainEndingStopsBlockedTasksCleanly) {
  constexpr int kBlocks = 1000;
  std::atomic<int> cancelled{0};
  RunMain([&] {
    auto never = Channel::Make(kLodTensor, 0);
    auto ready = Channel::Make(kLodTensor, kBlocks);
    for (int i = 0; i < kBlocks; ++i) {
      Go([&, never, ready] {
        SendInt(*ready, 1);
        if (ErrorOf([&] { RecvInt(*never); }) == "the main block ended") ++cancelled;
      });
    }
    for (int i = 0; i < kBlocks; ++i) RecvInt(*ready);
  });
  EXPECT_EQ(cancelled.load(), kBlocks);
}

TEST_F(ChannelTest, AFailingTaskFailsTheRun) {
  const std::string err = ErrorOf([] {
    RunMain([] {
      auto never = Channel::Make(kLodTensor, 0);
      Go([] { throw core::Error("boom", RILL_INTERNAL); });  // as the host throws it
      RecvInt(*never);                                       // woken by the failure, not a deadlock
    });
  });
  EXPECT_EQ(err, "boom");
}

TEST_F(ChannelTest, ManyProducersAndConsumersConserveEveryValue) {
  constexpr int kProducers = 8, kConsumers = 8, kEach = 2000;
  std::atomic<int64_t> sum{0}, count{0};
  RunMain([&] {
    auto ch = Channel::Make(kLodTensor, 16);
    auto done = Channel::Make(kLodTensor, kProducers + kConsumers);
    for (int p = 0; p < kProducers; ++p) {
      Go([=] {
        for (int i = 1; i <= kEach; ++i) SendInt(*ch, i);
        SendInt(*done, 1);
      });
    }
    for (int c = 0; c < kConsumers; ++c) {
      Go([&, ch, done] {
        for (int64_t v; (v = RecvInt(*ch)) != -1;) {
          sum += v;
          ++count;
        }
        SendInt(*done, 1);
      });
    }
    for (int p = 0; p < kProducers; ++p) RecvInt(*done);
    ch->Close();
    for (int c = 0; c < kConsumers; ++c) RecvInt(*done);
  });
  EXPECT_EQ(count.load(), int64_t{kProducers} * kEach);
  EXPECT_EQ(sum.load(), int64_t{kProducers} * kEach * (kEach + 1) / 2);
}

}  // namespace
}  // namespace rill::csp
