#include "client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/generic/generic_stub.h>

#include <algorithm>
#include <stdexcept>

#include "parameter_server.pb.h"
#include "rill/sdk.hpp"
#include "tls_check.h"
#include "trace.h"
#include "wire.h"

namespace rill::dist {
namespace {

std::string MethodName(const char* path) {
  const std::string p(path);
  return p.substr(p.rfind('/') + 1);
}

}  // namespace

std::string AboutCall(const RpcCall& call) {
  return "pserver " + call.endpoint + ": " + MethodName(call.method) + " " + call.subject + ": ";
}

TrainerSession& TrainerSession::Get() {
  static TrainerSession* session = new TrainerSession;  // outlives every op instance
  return *session;
}

int32_t TrainerSession::BindTrainerId(int32_t trainer_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (trainer_id_ >= 0 && trainer_id_ != trainer_id) {
    throw std::runtime_error("this process is trainer " + std::to_string(trainer_id_) + "; an op asks to be trainer " +
                             std::to_string(trainer_id));
  }
  trainer_id_ = trainer_id;
  return trainer_id_;
}

int32_t TrainerSession::trainer_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trainer_id_;
}

int64_t TrainerSession::iteration() const {
  std::lock_guard<std::mutex> lock(mu_);
  return iteration_;
}

int64_t TrainerSession::Advance() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++iteration_;
}

std::shared_ptr<grpc::Channel> TrainerSession::ChannelFor(const std::string& endpoint, const TransportOptions& options,
                                                          bool* first_contact) {
  std::lock_guard<std::mutex> lock(mu_);
  *first_contact = contacted_.count(endpoint) == 0;
  auto& channel = channels_[endpoint];
  if (!channel) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);  // tensors far above gRPC's 4 MiB default
    args.SetMaxSendMessageSize(-1);
    // Trainers usually start before their pservers listen: retry the connection every
    // 100 ms at first, not gRPC's default of 1 s.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    channel = grpc::CreateCustomChannel(endpoint, options.ChannelCredentials(), args);
  }
  return channel;
}

void TrainerSession::Call(std::vector<RpcCall>& calls, const TransportOptions& options) {
  struct Pending {
    grpc::ClientContext context;
    grpc::Status status;
    bool first_contact = false;
    std::unique_ptr<grpc::GenericStub> stub;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
  };
  // A completion queue the calling thread polls itself: the answers arrive on this
  // thread, with no hand-off from a gRPC thread and its wake-up.
  grpc::CompletionQueue cq;
  std::vector<Pending> pending(calls.size());
  // Each call's span in the profile (trace.h): from its start to its answer.
  const Tracer& tracer = TheTracer();
  const bool tracing = tracer.active();
  std::vector<int64_t> started(tracing ? calls.size() : 0), answered(tracing ? calls.size() : 0);
  const auto deadline = std::chrono::system_clock::now() + options.deadline;
  for (size_t i = 0; i < calls.size(); ++i) {
    Pending& p = pending[i];
    p.context.set_deadline(deadline);
    p.stub = std::make_unique<grpc::GenericStub>(ChannelFor(calls[i].endpoint, options, &p.first_contact));
    p.context.set_wait_for_ready((p.first_contact && options.wait_for_pserver) || calls[i].wait_for_ready);
    if (!options.token.empty()) p.context.AddMetadata(kTokenMetadataKey, options.token);
    p.reader = p.stub->PrepareUnaryCall(&p.context, calls[i].method, calls[i].request, &cq);
    if (tracing) started[i] = tracer.now();
    p.reader->StartCall();
    p.reader->Finish(&calls[i].response, &p.status, reinterpret_cast<void*>(i));
  }
  void* tag = nullptr;
  bool ok = false;
  for (size_t remaining = calls.size(); remaining > 0; --remaining) {
    cq.Next(&tag, &ok);  // every call ends by its deadline at the latest
    if (tracing) answered[reinterpret_cast<size_t>(tag)] = tracer.now();
  }
  for (size_t i = 0; tracing && i < calls.size(); ++i) {
    const std::string method = calls[i].method;
    tracer.record("rpc", method.substr(method.rfind('/') + 1) + " " + calls[i].endpoint, started[i], answered[i],
                  std::to_string(calls[i].request.Length()) + " bytes out, " +
                      std::to_string(calls[i].response.Length()) + " bytes in" +
                      (calls[i].subject.empty() ? "" : "; " + calls[i].subject));
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {}
  for (size_t i = 0; i < calls.size(); ++i) {
    const grpc::Status& s = calls[i].status = pending[i].status;
    const auto& tolerated = calls[i].tolerated;
    if (s.ok() || std::find(tolerated.begin(), tolerated.end(), s.error_code()) != tolerated.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      contacted_.insert(calls[i].endpoint);
      continue;
    }
    std::string what = AboutCall(calls[i]);
    // gRPC retries a handshake that fails until the deadline and then reports only the
    // deadline: a handshake of our own says why TLS did not connect.
    const bool unreached =
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || s.error_code() == grpc::StatusCode::UNAVAILABLE;
    const std::string tls_failure = unreached && pending[i].first_contact && !options.tls_ca_file.empty()
                                        ? ProbeTls(calls[i].endpoint, options.tls_ca_file, std::chrono::seconds(5))
                                        : "";
    if (!tls_failure.empty() && tls_failure.rfind("cannot connect", 0) != 0) {
      what += "TLS with " + calls[i].endpoint + " failed: " + tls_failure;
    } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      what += std::string(pending[i].first_contact ? "no pserver answered" : "no answer") + " within " +
              std::to_string(options.deadline.count()) + " ms (deadline; " + options.deadline_setting + ")";
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      what += "unavailable (" + s.error_message() + ")";
    } else if (s.error_code() == grpc::StatusCode::CANCELLED) {
      what += "the call was cancelled before the pserver answered: it stopped, or the connection broke (" +
              s.error_message() + ")";
    } else {
      what += s.error_message();
    }
    throw std::runtime_error(what);
  }
}

void TrainerSession::AddSender() {
  std::lock_guard<std::mutex> lock(mu_);
  ++senders_;
}

void TrainerSession::RemoveSender(const TransportOptions& options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--senders_ > 0) return;
  }
  // The training is over: tell its pservers, then start afresh for another one (a host
  // may run several trainings, one after the other, in one process).
  struct Reset {
    TrainerSession* s;
    ~Reset() {
      std::lock_guard<std::mutex> lock(s->mu_);
      s->trainer_id_ = -1;
      s->iteration_ = 0;
      s->contacted_.clear();
    }
  } reset{this};
  Complete(options);
}

void TrainerSession::Complete(const TransportOptions& options) {
  std::vector<RpcCall> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (contacted_.empty()) return;
    v1::CompleteRequest request;
    request.set_trainer_id(trainer_id_);
    for (const auto& endpoint : contacted_) {
      RpcCall c;
      c.endpoint = endpoint;
      c.method = kComplete;
      c.subject = "trainer " + std::to_string(trainer_id_);
      c.request = EncodeMessage(request);
      calls.push_back(std::move(c));
    }
  }
  Call(calls, options);
}

}  // namespace rill::dist
