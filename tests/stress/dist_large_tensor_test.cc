// A 1 GiB tensor through the pserver and back, in the messages and over the TCP data path
// beside them (label stress: ~6 GB of memory, seconds).
#include <gtest/gtest.h>

#include <future>

#include "client.h"
#include "pserver.h"
#include "rill/abi.h"
#include "tcp_data_path.h"
#include "transfer_util.h"

namespace rill::dist {
namespace {

void OneGibBothWays(bool beside) {
  const int64_t n = int64_t{1} << 28;  // float32: 1 GiB
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> param(n, 1.0f), grad(n), sent(n, 2.0f), fetched(n, 0.0f);
  sent[n - 1] = 4.0f;
  const std::shared_ptr<DataPath> pserver_path =
      beside ? ListenTcpDataPath("127.0.0.1:0", TransportOptions{}) : nullptr;
  DataPath* path = beside ? TcpTrainerDataPath(TransportOptions{}) : nullptr;
  ParameterServer ps("127.0.0.1:0", 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {n}}}, TransportOptions{},
                     pserver_path.get());
  auto view = [&] { return std::vector<TensorBytes>{TensorBytes{RILL_FP32, {n}, {}, param.data(), bytes}}; };
  ps.Start(view());
  auto serving = std::async(std::launch::async, [&] {
    PserverHooks hooks;
    hooks.gradient = [&](size_t) { return static_cast<void*>(grad.data()); };
    hooks.optimize = [&] {
      for (int64_t i = 0; i < n; ++i) param[i] -= 0.5f * grad[i];
    };
    hooks.parameters = view;
    ps.Serve(hooks);
  });
  TrainerSession& session = TrainerSession::Get();
  TransportOptions options;
  auto call = [&](const char* method, grpc::ByteBuffer request) {
    std::vector<RpcCall> calls(1);
    calls[0].endpoint = ps.endpoint();
    calls[0].method = method;
    calls[0].subject = "1 GiB";
    calls[0].request = std::move(request);
    session.Call(calls, options);
    return std::move(calls[0].response);
  };
  v1::OutOfBand route;
  if (beside) {
    ASSERT_TRUE(path->RouteTo(ps.endpoint(), &route));
  }
  {
    SliceLease lease;
    Outcome pushed;
    const TensorBytes t{RILL_FP32, {n}, {}, sent.data(), bytes};
    grpc::ByteBuffer request = EncodeVariable("w@GRAD", 0, 1, t, lease, beside ? &route : nullptr);
    if (beside) path->Send(route.peer_rank(), route.tag(), sent.data(), bytes, pushed.Done());
    call(kSendVariable, std::move(request));
    EXPECT_EQ(pushed.Get(std::chrono::seconds(60)), "");
  }
  v1::BarrierRequest barrier;
  barrier.set_iteration(1);
  call(kBarrier, EncodeMessage(barrier));
  v1::GetRequest get;
  get.set_name("w");
  get.set_iteration(1);
  if (beside) {
    ASSERT_TRUE(path->RouteTo(ps.endpoint(), get.mutable_out_of_band()));
  }
  const grpc::ByteBuffer body = call(kGetVariable, EncodeMessage(get));
  if (beside) {
    EXPECT_LT(body.Length(), 256u) << "the bytes came in the message";
  } else {
    EXPECT_GT(body.Length(), bytes);
    EXPECT_LT(body.Length(), bytes + 64) << "the header and framing are tens of bytes";
  }
  const v1::VariableHeader h = DecodeVariable(body, [&](const v1::VariableHeader& h) {
    EXPECT_EQ(h.tensor().dims(0), n);
    return static_cast<void*>(fetched.data());
  });
  if (beside) {
    ASSERT_TRUE(h.has_out_of_band());
    Outcome pulled;
    path->Receive(get.out_of_band().peer_rank(), get.out_of_band().tag(), fetched.data(), bytes, pulled.Done());
    EXPECT_EQ(pulled.Get(std::chrono::seconds(60)), "");
  }
  EXPECT_EQ(fetched[0], 0.0f);       // 1 - 0.5 * 2
  EXPECT_EQ(fetched[n - 1], -1.0f);  // 1 - 0.5 * 4
  call(kComplete, EncodeMessage(v1::CompleteRequest()));
  serving.get();
}

TEST(DistLarge, OneGibGradientInAndOneGibParameterBackInTheMessages) { OneGibBothWays(false); }

TEST(DistLarge, OneGibGradientInAndOneGibParameterBackBesideThem) { OneGibBothWays(true); }

}  // namespace
}  // namespace rill::dist
