// The trainer's client against a pserver that cancels a call instead of answering it: the
// error names the pserver and the call, and says what happened, at once.
#include "client.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include "wire.h"

namespace rill::dist {
namespace {

// Takes every call and cancels it instead of answering, as a pserver's gRPC does with calls
// it drops.
class Cancels final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    class Cancelled final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Cancelled(grpc::GenericCallbackServerContext* ctx) : ctx_(ctx) { StartRead(&request_); }
      void OnReadDone(bool) override { ctx_->TryCancel(); }
      void OnCancel() override { Finish(grpc::Status::CANCELLED); }
      void OnDone() override { delete this; }

     private:
      grpc::GenericCallbackServerContext* ctx_;
      grpc::ByteBuffer request_;
    };
    return new Cancelled(ctx);
  }
};

TEST(DistClient, ACallThePserverCancelsSaysSoNamingThePserver) {
  Cancels service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  std::vector<RpcCall> calls(1);
  calls[0].endpoint = endpoint;
  calls[0].method = kBarrier;
  calls[0].subject = "iteration 1";
  calls[0].request = EncodeMessage(v1::BarrierRequest());
  TransportOptions options;
  options.deadline = std::chrono::milliseconds(10000);
  const auto start = std::chrono::steady_clock::now();
  try {
    TrainerSession::Get().Call(calls, options);
    ADD_FAILURE() << "a call nobody answered succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("pserver " + endpoint + ": Barrier iteration 1: the call was cancelled"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // not the deadline
}

}  // namespace
}  // namespace rill::dist
