// Requests to a live pserver (dist_ps, served on loopback for one trainer): the first
// byte picks the RPC, the rest is its request body, sent as the raw message. The pserver
// answers or refuses each and goes on serving; when a run of it ends (the trainer's
// Complete, or an iteration without a barrier for its 100 ms deadline) a new one starts.
#include <grpcpp/support/byte_buffer.h>

#include <future>
#include <memory>
#include <string>

#include "client.h"
#include "dist/live_pserver.h"
#include "fuzz_target.h"

namespace {

// The pserver now serving and a channel to it, kept across inputs: a new channel per call
// (a TCP connection and an HTTP/2 handshake) was most of an input's time.
struct Live {
  std::unique_ptr<rill::dist::Pserver> server;
  std::unique_ptr<grpc::GenericStub> stub;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace std::chrono_literals;
  static const char* const kMethods[] = {rill::dist::kSendVariable, rill::dist::kGetVariable,  rill::dist::kBarrier,
                                         rill::dist::kComplete,     rill::dist::kOpenDataPath, rill::dist::kStep,
                                         rill::dist::kPrefetch};
  constexpr size_t kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);
  static Live* live = new Live;
  if (size == 0) return 0;
  if (live->server != nullptr && live->server->Result(0s) != "still serving") live->server.reset();
  if (live->server == nullptr) {
    rill::dist::TransportOptions options;
    options.deadline = 100ms;
    live->server = std::make_unique<rill::dist::Pserver>(1, options);
    live->stub = std::make_unique<grpc::GenericStub>(
        grpc::CreateChannel(live->server->endpoint(), grpc::InsecureChannelCredentials()));
  }
  grpc::Slice body(data + 1, size - 1);
  grpc::ByteBuffer request(&body, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 100ms);
  std::promise<grpc::Status> done;
  live->stub->UnaryCall(&ctx, kMethods[data[0] % kMethodCount], grpc::StubOptions(), &request, &response,
                        [&](grpc::Status s) { done.set_value(std::move(s)); });
  done.get_future().wait();
  return 0;
}
