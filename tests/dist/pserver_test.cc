// The pserver of dist_grpc, served for real on loopback and called over gRPC: one sync
// iteration, bad requests refused while the server goes on, a missing trainer, the token.
#include "pserver.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <thread>

#include "client.h"
#include "dist/live_pserver.h"
#include "rill/abi.h"

namespace rill::dist {
namespace {

using grpc::StatusCode;

grpc::ByteBuffer Grad(const std::string& name, int32_t trainer, int64_t iteration, std::vector<float>& values,
                      SliceLease& lease, int32_t dtype = RILL_FP32, std::vector<int64_t> dims = {2, 1}) {
  return EncodeVariable(name, trainer, iteration, TensorBytes{dtype, dims, {}, values.data(), values.size() * 4},
                        lease);
}

// SelectedRows of w: `rows` of the [2, 1] parameter, one value each.
grpc::ByteBuffer SparseGrad(int32_t trainer, int64_t iteration, std::vector<float>& values, std::vector<int64_t> rows,
                            SliceLease& lease, int64_t height = 2) {
  TensorBytes t{RILL_FP32, {static_cast<int64_t>(rows.size()), 1}, {}, values.data(), values.size() * 4};
  t.rows = std::move(rows);
  t.height = height;
  return EncodeVariable("w@GRAD", trainer, iteration, t, lease);
}

grpc::ByteBuffer Barrier(int32_t trainer, int64_t iteration) {
  v1::BarrierRequest r;
  r.set_trainer_id(trainer);
  r.set_iteration(iteration);
  return EncodeMessage(r);
}

grpc::ByteBuffer Get(const std::string& name, int32_t trainer, int64_t iteration) {
  v1::GetRequest r;
  r.set_name(name);
  r.set_trainer_id(trainer);
  r.set_iteration(iteration);
  return EncodeMessage(r);
}

grpc::ByteBuffer Complete(int32_t trainer) {
  v1::CompleteRequest r;
  r.set_trainer_id(trainer);
  return EncodeMessage(r);
}

std::vector<float> Floats(const grpc::ByteBuffer& body, int64_t* iteration = nullptr) {
  std::vector<float> out(2);
  const auto h = DecodeVariable(body, [&](const v1::VariableHeader& h) {
    EXPECT_EQ(h.name(), "w");
    return static_cast<void*>(out.data());
  });
  if (iteration != nullptr) *iteration = h.iteration();
  return out;
}

void ExpectStatus(const Reply& r, StatusCode code, const std::string& text) {
  EXPECT_EQ(r.status.error_code(), code) << r.status.error_message();
  EXPECT_NE(r.status.error_message().find(text), std::string::npos) << r.status.error_message();
}

TEST(DistPserver, AveragesTheTrainersGradientsOptimizesOnceAndServesTheResult) {
  Pserver ps(2);
  EXPECT_EQ(Floats(Call(ps.endpoint(), kGetVariable, Get("w", 0, 0)).body), (std::vector<float>{1, 2}));
  std::vector<float> g0 = {1, 1}, g1 = {3, 5};
  SliceLease lease;
  ASSERT_TRUE(Call(ps.endpoint(), kSendVariable, Grad("w@GRAD", 0, 1, g0, lease)).status.ok());
  ASSERT_TRUE(Call(ps.endpoint(), kSendVariable, Grad("w@GRAD", 1, 1, g1, lease)).status.ok());
  // Trainer 0's barrier is answered only once trainer 1 arrived and the iteration is
  // optimized.
  auto barrier0 = std::async(std::launch::async, [&] { return Call(ps.endpoint(), kBarrier, Barrier(0, 1)); });
  EXPECT_EQ(barrier0.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  ASSERT_TRUE(Call(ps.endpoint(), kBarrier, Barrier(1, 1)).status.ok());
  ASSERT_TRUE(barrier0.get().status.ok());
  const Reply r0 = Call(ps.endpoint(), kGetVariable, Get("w", 0, 1)),
              r1 = Call(ps.endpoint(), kGetVariable, Get("w", 1, 1));
  ASSERT_TRUE(r0.status.ok()) << r0.status.error_message();
  int64_t iteration = -1;
  // w - 0.5 * mean(g0, g1) = {1, 2} - 0.5 * {2, 3}
  EXPECT_EQ(Floats(r0.body, &iteration), (std::vector<float>{0, 0.5f}));
  EXPECT_EQ(iteration, 1);
  EXPECT_EQ(Floats(r1.body), (std::vector<float>{0, 0.5f}));
  ASSERT_TRUE(Call(ps.endpoint(), kComplete, Complete(0)).status.ok());
  ASSERT_TRUE(Call(ps.endpoint(), kComplete, Complete(1)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

// A step's answer: the parameters it pulled, in order.
std::vector<std::vector<float>> StepParameters(const grpc::ByteBuffer& body, int64_t* iteration = nullptr) {
  std::vector<std::vector<float>> out;
  for (ReceivedBytes& p : ParseStepReply(body)) {
    out.emplace_back(2);
    const auto h = DecodeVariable(std::move(p), [&](const v1::VariableHeader& h) {
      EXPECT_EQ(h.name(), "w");
      return static_cast<void*>(out.back().data());
    });
    if (iteration != nullptr) *iteration = h.iteration();
  }
  return out;
}

v1::GetRequest Pull(const std::string& name, int32_t trainer, int64_t iteration) {
  v1::GetRequest r;
  r.set_name(name);
  r.set_trainer_id(trainer);
  r.set_iteration(iteration);
  return r;
}

TEST(DistPserver, AStepSendsTheGradientsReachesTheBarrierAndPullsTheParametersInOneCall) {
  Pserver ps(2);
  const std::string e = ps.endpoint();
  std::vector<float> g0 = {1, 1}, g1 = {3, 5};
  SliceLease lease;
  // Trainer 0's step is answered only once trainer 1's arrived and the iteration is
  // optimized; then both get w - 0.5 * mean(g0, g1) = {1, 2} - 0.5 * {2, 3}.
  auto step0 = std::async(std::launch::async, [&] {
    return Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g0, lease)}, {Pull("w", 0, 1)}));
  });
  EXPECT_EQ(step0.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  const Reply r1 = Call(e, kStep, EncodeStep(1, 1, {Grad("w@GRAD", 1, 1, g1, lease)}, {Pull("w", 1, 1)}));
  const Reply r0 = step0.get();
  ASSERT_TRUE(r0.status.ok()) << r0.status.error_message();
  ASSERT_TRUE(r1.status.ok()) << r1.status.error_message();
  int64_t iteration = -1;
  EXPECT_EQ(StepParameters(r0.body, &iteration), (std::vector<std::vector<float>>{{0, 0.5f}}));
  EXPECT_EQ(iteration, 1);
  EXPECT_EQ(StepParameters(r1.body), (std::vector<std::vector<float>>{{0, 0.5f}}));
  for (int32_t t = 0; t < 2; ++t) ASSERT_TRUE(Call(e, kComplete, Complete(t)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, AStepWithAPartRefusedIsRefusedWholeAndTakesNothing) {
  Pserver ps(1);
  const std::string e = ps.endpoint();
  std::vector<float> g = {2, 2}, doubles = {1, 2, 3, 4};
  SliceLease lease;
  // Each refused for one of its parts; w@GRAD, good in each, is not kept.
  ExpectStatus(Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g, lease)}, {Pull("nope", 0, 1)})),
               StatusCode::NOT_FOUND, "unknown variable 'nope'; this pserver serves the parameters w");
  ExpectStatus(
      Call(e, kStep,
           EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g, lease), Grad("w@GRAD", 0, 1, g, lease)}, {Pull("w", 0, 1)})),
      StatusCode::ALREADY_EXISTS, "trainer 0 already sent 'w@GRAD' for iteration 1");
  ExpectStatus(
      Call(e, kStep,
           EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g, lease), Grad("v@GRAD", 0, 1, g, lease)}, {Pull("w", 0, 1)})),
      StatusCode::NOT_FOUND, "unknown variable 'v@GRAD'");
  ExpectStatus(
      Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, doubles, lease, RILL_FP64, {2, 1})}, {Pull("w", 0, 1)})),
      StatusCode::INVALID_ARGUMENT, "'w@GRAD' is fp64 [2,1]; the pserver expects fp32 [2,1]");
  ExpectStatus(Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 2, g, lease)}, {Pull("w", 0, 1)})),
               StatusCode::INVALID_ARGUMENT,
               "'w@GRAD' is trainer 0's of iteration 2, in trainer 0's step of iteration 1");
  ExpectStatus(Call(e, kStep, EncodeStep(0, 2, {}, {})), StatusCode::FAILED_PRECONDITION,
               "barrier of iteration 2 from trainer 0: the pserver is at iteration 1");
  grpc::Slice junk(std::string("\x1a\x05\x0a", 3));  // a gradient field longer than the message
  ExpectStatus(Call(e, kStep, grpc::ByteBuffer(&junk, 1)), StatusCode::INVALID_ARGUMENT, "malformed step");
  // The slot refused steps left empty takes the good step's gradient: w -= 0.5 * g.
  const Reply r = Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g, lease)}, {Pull("w", 0, 1)}));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(StepParameters(r.body), (std::vector<std::vector<float>>{{0, 1}}));
  ASSERT_TRUE(Call(e, kComplete, Complete(0)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, APrefetchAnswersTheRowsAskedInTheirOrderAndRefusesARowItDoesNotHold) {
  Pserver ps(1);
  const std::string e = ps.endpoint();
  v1::PrefetchRequest asked;
  asked.set_name("w");
  asked.add_rows(1);
  asked.add_rows(0);
  const Reply r = Call(e, kPrefetch, EncodeMessage(asked));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  v1::VariableMessage got;
  DecodeMessage(r.body, &got);
  EXPECT_EQ(std::vector<int64_t>(got.header().tensor().dims().begin(), got.header().tensor().dims().end()),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(
      std::vector<int64_t>(got.header().selected_rows().rows().begin(), got.header().selected_rows().rows().end()),
      (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(got.header().selected_rows().height(), 2);
  ASSERT_EQ(got.data().size(), 2 * sizeof(float));
  float values[2];
  std::memcpy(values, got.data().data(), sizeof(values));
  EXPECT_EQ(values[0], 2);  // w is {1, 2}
  EXPECT_EQ(values[1], 1);
  asked.set_rows(0, 2);
  ExpectStatus(Call(e, kPrefetch, EncodeMessage(asked)), StatusCode::INVALID_ARGUMENT,
               "Prefetch of 'w': row 2 is not one of its 2 rows on this pserver");
  asked.set_name("v");
  ExpectStatus(Call(e, kPrefetch, EncodeMessage(asked)), StatusCode::NOT_FOUND,
               "unknown table 'v'; this pserver serves the parameters w");
  ASSERT_TRUE(Call(e, kComplete, Complete(0)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, AsyncAppliesEachTrainersStepAloneAsItArrives) {
  TrainingMode async;
  async.sync = false;
  Pserver ps(2, {}, async);
  const std::string e = ps.endpoint();
  std::vector<float> g0 = {2, 2}, g1 = {4, 6};
  SliceLease lease;
  // No barrier: trainer 0's steps are answered while trainer 1 has sent nothing, each
  // with its own gradient applied as it is (w -= 0.5 * g, not averaged).
  Reply r = Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g0, lease)}, {Pull("w", 0, 1)}));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(StepParameters(r.body), (std::vector<std::vector<float>>{{0, 1}}));
  r = Call(e, kStep, EncodeStep(0, 2, {Grad("w@GRAD", 0, 2, g0, lease)}, {Pull("w", 0, 2)}));
  EXPECT_EQ(StepParameters(r.body), (std::vector<std::vector<float>>{{-1, 0}}));
  // Trainer 1 counts its own iterations from 1, and gets the parameters as they are now.
  r = Call(e, kStep, EncodeStep(1, 1, {Grad("w@GRAD", 1, 1, g1, lease)}, {Pull("w", 1, 1)}));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(StepParameters(r.body), (std::vector<std::vector<float>>{{-3, -3}}));
  const Reply get = Call(e, kGetVariable, Get("w", 1, 0));  // a pull at any time
  ASSERT_TRUE(get.status.ok()) << get.status.error_message();
  EXPECT_EQ(Floats(get.body), (std::vector<float>{-3, -3}));
  // What async training has not: a barrier, a step without every gradient, a step out of
  // the trainer's own order.
  ExpectStatus(Call(e, kBarrier, Barrier(1, 2)), StatusCode::FAILED_PRECONDITION,
               "this pserver trains asynchronously (async): it has no barrier");
  ExpectStatus(Call(e, kStep, EncodeStep(1, 2, {}, {Pull("w", 1, 2)})), StatusCode::INVALID_ARGUMENT,
               "trainer 1's step of iteration 2 lacks 'w@GRAD'; asynchronous training applies each step alone");
  ExpectStatus(Call(e, kStep, EncodeStep(1, 3, {Grad("w@GRAD", 1, 3, g1, lease)}, {})), StatusCode::FAILED_PRECONDITION,
               "the pserver takes its iteration 2 (asynchronous training)");
  for (int32_t t = 0; t < 2; ++t) ASSERT_TRUE(Call(e, kComplete, Complete(t)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, BoundedStalenessHoldsTheAnswerOfATrainerTooFarAhead) {
  TrainingMode bounded;
  bounded.sync = false;
  bounded.max_staleness = 1;
  Pserver ps(2, {}, bounded);
  const std::string e = ps.endpoint();
  std::vector<float> g = {2, 2};
  SliceLease lease;
  // Trainer 0 may be one step ahead of trainer 1 (which has taken none): step 1 is
  // answered, step 2 is applied but its answer waits for trainer 1's first step.
  ASSERT_TRUE(Call(e, kStep, EncodeStep(0, 1, {Grad("w@GRAD", 0, 1, g, lease)}, {Pull("w", 0, 1)})).status.ok());
  auto ahead = std::async(std::launch::async, [&] {
    return Call(e, kStep, EncodeStep(0, 2, {Grad("w@GRAD", 0, 2, g, lease)}, {Pull("w", 0, 2)}));
  });
  // Applied though held: a pull sees both of trainer 0's updates.
  const auto applied = [&] {
    const Reply r = Call(e, kGetVariable, Get("w", 1, 0));
    return r.status.ok() && Floats(r.body) == std::vector<float>{-1, 0};
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool seen = false;
  while (!(seen = applied()) && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  EXPECT_TRUE(seen) << "trainer 0's second update was not applied";
  EXPECT_EQ(ahead.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout) << "answered too early";
  const Reply r1 = Call(e, kStep, EncodeStep(1, 1, {Grad("w@GRAD", 1, 1, g, lease)}, {Pull("w", 1, 1)}));
  ASSERT_TRUE(r1.status.ok()) << r1.status.error_message();
  EXPECT_EQ(StepParameters(r1.body), (std::vector<std::vector<float>>{{-2, -1}}));
  const Reply r0 = ahead.get();
  ASSERT_TRUE(r0.status.ok()) << r0.status.error_message();
  EXPECT_EQ(StepParameters(r0.body), (std::vector<std::vector<float>>{{-2, -1}}));  // answered with what is now
  for (int32_t t = 0; t < 2; ++t) ASSERT_TRUE(Call(e, kComplete, Complete(t)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, SparseGradientsOfAllTrainersStaySparseAndAMixBecomesDense) {
  Pserver ps(2);
  SliceLease lease;
  const std::string e = ps.endpoint();
  auto step = [&](int64_t k) {
    auto other = std::async(std::launch::async, [&] { return Call(e, kBarrier, Barrier(1, k)); });
    EXPECT_TRUE(Call(e, kBarrier, Barrier(0, k)).status.ok());
    EXPECT_TRUE(other.get().status.ok());
    const Reply r = Call(e, kGetVariable, Get("w", 0, k));
    EXPECT_TRUE(Call(e, kGetVariable, Get("w", 1, k)).status.ok());
    return Floats(r.body);
  };
  // Iteration 1: trainer 0 touches row 1, trainer 1 rows 1 and 0: the rows of both, each
  // value halved: w[0] -= 0.5 * 6 / 2, w[1] -= 0.5 * (2 + 4) / 2.
  std::vector<float> a = {2}, b = {4, 6};
  ASSERT_TRUE(Call(e, kSendVariable, SparseGrad(0, 1, a, {1}, lease)).status.ok());
  ASSERT_TRUE(Call(e, kSendVariable, SparseGrad(1, 1, b, {1, 0}, lease)).status.ok());
  EXPECT_EQ(step(1), (std::vector<float>{-0.5f, 0.5f}));
  // Iteration 2: one dense, one sparse: summed densely, then averaged.
  std::vector<float> dense = {2, 2}, c = {4};
  ASSERT_TRUE(Call(e, kSendVariable, Grad("w@GRAD", 0, 2, dense, lease)).status.ok());
  ASSERT_TRUE(Call(e, kSendVariable, SparseGrad(1, 2, c, {0}, lease)).status.ok());
  EXPECT_EQ(step(2), (std::vector<float>{-0.5f - 0.5f * 3, 0.5f - 0.5f * 1}));
  for (int32_t t = 0; t < 2; ++t) ASSERT_TRUE(Call(e, kComplete, Complete(t)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, BadRequestsGetAnErrorAndTheServerGoesOnServing) {
  Pserver ps(1);
  SliceLease lease;
  std::vector<float> g = {2, 2}, one = {1};
  std::vector<float> doubles = {1, 2, 3, 4};  // as bytes: two float64s
  const std::string e = ps.endpoint();
  ExpectStatus(Call(e, kSendVariable, Grad("v@GRAD", 0, 1, g, lease)), StatusCode::NOT_FOUND,
               "unknown variable 'v@GRAD'; this pserver takes the gradients w@GRAD");
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 0, 1, doubles, lease, RILL_FP64, {2, 1})),
               StatusCode::INVALID_ARGUMENT, "'w@GRAD' is fp64 [2,1]; the pserver expects fp32 [2,1]");
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 0, 1, one, lease, RILL_FP32, {1})), StatusCode::INVALID_ARGUMENT,
               "fp32 [1]; the pserver expects fp32 [2,1]");
  ExpectStatus(Call(e, kSendVariable, SparseGrad(0, 1, one, {0}, lease, 3)), StatusCode::INVALID_ARGUMENT,
               "fp32 SelectedRows of height 3 with values [1,1]; the pserver expects fp32 [2,1]");
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 0, 1, one, lease, RILL_FP32, {1LL << 40})),
               StatusCode::INVALID_ARGUMENT, "declares 1099511627776 elements");
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 3, 1, g, lease)), StatusCode::INVALID_ARGUMENT,
               "trainer 3 is not one of this pserver's 1 trainers");
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 0, 4, g, lease)), StatusCode::FAILED_PRECONDITION,
               "the pserver collects iteration 1");
  grpc::Slice junk(std::string("\xff\xff\xff", 3));
  ExpectStatus(Call(e, kSendVariable, grpc::ByteBuffer(&junk, 1)), StatusCode::INVALID_ARGUMENT, "malformed");
  ExpectStatus(Call(e, kGetVariable, Get("nope", 0, 0)), StatusCode::NOT_FOUND, "serves the parameters w");
  ExpectStatus(Call(e, kGetVariable, Get("w", 0, 1)), StatusCode::FAILED_PRECONDITION,
               "(ask after the barrier of that iteration returns)");
  ExpectStatus(Call(e, kBarrier, Barrier(0, 2)), StatusCode::FAILED_PRECONDITION, "the pserver is at iteration 1");

  // After all of that, a well-formed iteration goes through.
  ASSERT_TRUE(Call(e, kSendVariable, Grad("w@GRAD", 0, 1, g, lease)).status.ok());
  ExpectStatus(Call(e, kSendVariable, Grad("w@GRAD", 0, 1, g, lease)), StatusCode::ALREADY_EXISTS,
               "trainer 0 already sent 'w@GRAD' for iteration 1 (is trainer id 0 used by two trainers? each needs its "
               "own, 0 to 0: RILL_TRAINER_ID)");
  ASSERT_TRUE(Call(e, kBarrier, Barrier(0, 1)).status.ok());
  const Reply r = Call(e, kGetVariable, Get("w", 0, 1));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(Floats(r.body), (std::vector<float>{0, 1}));
  ASSERT_TRUE(Call(e, kComplete, Complete(0)).status.ok());
  EXPECT_EQ(ps.Result(), "");
}

TEST(DistPserver, ATrainerMissingTheBarrierFailsTheServeNamingIt) {
  TransportOptions options;
  options.deadline = std::chrono::milliseconds(300);
  Pserver ps(2, options);
  SliceLease lease;
  std::vector<float> g = {1, 1};
  ASSERT_TRUE(Call(ps.endpoint(), kSendVariable, Grad("w@GRAD", 0, 1, g, lease)).status.ok());
  // Trainer 0's barrier waits for trainer 1, and is answered by the failure.
  ExpectStatus(Call(ps.endpoint(), kBarrier, Barrier(0, 1)), StatusCode::ABORTED, "trainer 1 (never connected)");
  const std::string error = ps.Result();
  EXPECT_NE(error.find("iteration 1: no barrier within 300 ms"), std::string::npos) << error;
  EXPECT_NE(error.find("trainer 1 (never connected)"), std::string::npos) << error;
}

TEST(DistPserver, AClientWithoutTheTokenIsRefused) {
  TransportOptions options;
  options.token = "s3cret";
  Pserver ps(1, options);
  ExpectStatus(Call(ps.endpoint(), kGetVariable, Get("w", 0, 0)), StatusCode::UNAUTHENTICATED,
               "requires the shared token (RILL_DIST_TOKEN); the call carried none");
  ExpectStatus(Call(ps.endpoint(), kGetVariable, Get("w", 0, 0), "wrong"), StatusCode::UNAUTHENTICATED,
               "requires the shared token (RILL_DIST_TOKEN); the call's token is not that one");
  EXPECT_TRUE(Call(ps.endpoint(), kGetVariable, Get("w", 0, 0), "s3cret").status.ok());
  EXPECT_TRUE(Call(ps.endpoint(), kComplete, Complete(0), "s3cret").status.ok());
  EXPECT_EQ(ps.Result(), "");
}

// Without a token, any process that reaches a pserver can stop it (Complete): beyond
// loopback, listening without one takes RILL_DIST_INSECURE=1.
TEST(DistPserver, ListeningBeyondLoopbackTakesATokenOrInsecure) {
  float w = 0;
  const auto start = [&](const std::string& endpoint, const TransportOptions& options) {
    ParameterServer ps(endpoint, 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {1}}}, options);
    try {
      ps.Start({TensorBytes{RILL_FP32, {1}, {}, &w, 4}});
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TransportOptions open;
  EXPECT_NE(start("0.0.0.0:0", open).find("pserver '0.0.0.0:0' would listen beyond loopback without a shared token"),
            std::string::npos);
  EXPECT_EQ(start("127.0.0.1:0", open), "") << "loopback needs no token";
  TransportOptions with_token;
  with_token.token = "s3cret";
  EXPECT_EQ(start("0.0.0.0:0", with_token), "");
  TransportOptions insecure;
  insecure.insecure = true;
  EXPECT_EQ(start("0.0.0.0:0", insecure), "") << "RILL_DIST_INSECURE=1";
}

TEST(DistPserver, AnEndpointInUseIsAClearError) {
  Pserver first(1);
  ParameterServer second(first.endpoint(), 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {1}}}, TransportOptions{});
  float w = 0;
  try {
    second.Start({TensorBytes{RILL_FP32, {1}, {}, &w, 4}});
    ADD_FAILURE() << "bound an endpoint in use";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on '" + first.endpoint() + "'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(Call(first.endpoint(), kComplete, Complete(0)).status.ok());
  EXPECT_EQ(first.Result(), "");
}

}  // namespace
}  // namespace rill::dist
