// tests/dist/live_pserver.h — a pserver served for real on loopback, and a raw gRPC call
// to it: the pserver tests and the pserver fuzzer (tests/fuzz) drive the same one.
#ifndef RILL_TESTS_DIST_LIVE_PSERVER_H_
#define RILL_TESTS_DIST_LIVE_PSERVER_H_

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "options.h"
#include "pserver.h"
#include "rill/abi.h"

namespace rill::dist {

// One parameter w (float32 [2]) and a pserver whose optimize block is w -= 0.5 * grad.
class Pserver {
 public:
  explicit Pserver(int32_t fanin, TransportOptions options = {}, TrainingMode mode = {})
      : server_("127.0.0.1:0", fanin, {Spec()}, options, nullptr, mode) {
    server_.Start({Bytes()});
    serving_ = std::async(std::launch::async, [this] {
      PserverHooks hooks;
      hooks.gradient = [this](size_t) {
        sparse_rows_.reset();
        return static_cast<void*>(grad_.data());
      };
      hooks.sparse_gradient = [this](size_t, const std::vector<int64_t>& rows) {
        sparse_rows_ = std::make_unique<std::vector<int64_t>>(rows);
        sparse_values_.assign(rows.size(), 0);
        return static_cast<void*>(sparse_values_.data());
      };
      hooks.optimize = [this] {  // w -= 0.5 * grad, dense or by rows
        if (!sparse_rows_) {
          for (size_t i = 0; i < w_.size(); ++i) w_[i] -= 0.5f * grad_[i];
          return;
        }
        for (size_t r = 0; r < sparse_rows_->size(); ++r) w_[(*sparse_rows_)[r]] -= 0.5f * sparse_values_[r];
      };
      hooks.parameters = [this] { return std::vector<TensorBytes>{Bytes()}; };
      server_.Serve(hooks);
    });
  }
  const std::string& endpoint() const { return server_.endpoint(); }
  // Serve()'s outcome: "" when it returned, else its error.
  std::string Result(std::chrono::seconds timeout = std::chrono::seconds(10)) {
    if (serving_.wait_for(timeout) != std::future_status::ready) return "still serving";
    try {
      serving_.get();
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }

 private:
  // w: [2, 1], so a row is one element and SelectedRows of it are easy to write.
  static ParamSpec Spec() { return ParamSpec{"w", "w@GRAD", RILL_FP32, {2, 1}}; }
  TensorBytes Bytes() { return TensorBytes{RILL_FP32, {2, 1}, {}, w_.data(), sizeof(float) * 2}; }

  std::vector<float> w_ = {1, 2}, grad_ = {0, 0}, sparse_values_;
  std::unique_ptr<std::vector<int64_t>> sparse_rows_;  // the last gradient's rows if it was sparse
  ParameterServer server_;
  std::future<void> serving_;
};

struct Reply {
  grpc::Status status;
  grpc::ByteBuffer body;
};

// `method` of the pserver at `endpoint` with `request`, waiting at most `deadline`.
inline Reply Call(const std::string& endpoint, const char* method, const grpc::ByteBuffer& request,
                  const std::string& token = "", std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  if (!token.empty()) ctx.AddMetadata(kTokenMetadataKey, token);
  Reply r;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &r.body, [&](grpc::Status s) { done.set_value(s); });
  r.status = done.get_future().get();
  return r;
}

}  // namespace rill::dist

#endif  // RILL_TESTS_DIST_LIVE_PSERVER_H_
