// A 1 GiB tensor through the pserver and back (label stress: ~6 GB of memory, seconds).
#include <gtest/gtest.h>

#include <future>

#include "client.h"
#include "pserver.h"
#include "rill/abi.h"

namespace rill::dist {
namespace {

TEST(DistLarge, OneGibGradientInAndOneGibParameterBack) {
  const int64_t n = int64_t{1} << 28;  // float32: 1 GiB
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> param(n, 1.0f), grad(n), sent(n, 2.0f), fetched(n, 0.0f);
  sent[n - 1] = 4.0f;
  ParameterServer ps("127.0.0.1:0", 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {n}}}, TransportOptions{});
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
  {
    SliceLease lease;
    call(kSendVariable, EncodeVariable("w@GRAD", 0, 1, TensorBytes{RILL_FP32, {n}, {}, sent.data(), bytes}, lease));
  }
  v1::BarrierRequest barrier;
  barrier.set_iteration(1);
  call(kBarrier, EncodeMessage(barrier));
  v1::GetRequest get;
  get.set_name("w");
  get.set_iteration(1);
  const grpc::ByteBuffer body = call(kGetVariable, EncodeMessage(get));
  EXPECT_GT(body.Length(), bytes);
  EXPECT_LT(body.Length(), bytes + 64) << "the header and framing are tens of bytes";
  DecodeVariable(body, [&](const v1::VariableHeader& h) {
    EXPECT_EQ(h.tensor().dims(0), n);
    return static_cast<void*>(fetched.data());
  });
  EXPECT_EQ(fetched[0], 0.0f);       // 1 - 0.5 * 2
  EXPECT_EQ(fetched[n - 1], -1.0f);  // 1 - 0.5 * 4
  call(kComplete, EncodeMessage(v1::CompleteRequest()));
  serving.get();
}

}  // namespace
}  // namespace rill::dist
