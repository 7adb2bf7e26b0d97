// client.h — a trainer's side of the parameter-server protocol (parameter_server.proto).
//
// Contract:
//  - One TrainerSession per process (Get()) holds the trainer id, the iteration the trainer
//    is at and one gRPC channel per pserver endpoint, shared by every send and recv op.
//  - Every call carries the options' deadline. The first call to an endpoint waits for
//    the pserver to come up (until the deadline); later calls fail at once when it is
//    gone, so a dead pserver is reported as soon as it is noticed.
//  - Call() runs a batch concurrently (every pserver at once) and returns when all have
//    ended; the first failure (other than a call's `tolerated` statuses) is thrown, naming
//    the endpoint, the method and the variable.
//    Tensor bytes sent by a batch are not touched after Call() returns.
//  - When the last send op instance goes away (the trainer's run ended), every pserver
//    the session talked to is told the trainer completed, and the session starts afresh
//    (no trainer id, iteration 0) for a next training in the same process.
#ifndef RILL_DIST_PS_CLIENT_H_
#define RILL_DIST_PS_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/support/byte_buffer.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "options.h"

namespace rill::dist {

// The method paths of service rill.dist.v1.ParameterServer.
inline constexpr const char* kSendVariable = "/rill.dist.v1.ParameterServer/SendVariable";
inline constexpr const char* kGetVariable = "/rill.dist.v1.ParameterServer/GetVariable";
inline constexpr const char* kBarrier = "/rill.dist.v1.ParameterServer/Barrier";
inline constexpr const char* kComplete = "/rill.dist.v1.ParameterServer/Complete";
inline constexpr const char* kStep = "/rill.dist.v1.ParameterServer/Step";
inline constexpr const char* kPrefetch = "/rill.dist.v1.ParameterServer/Prefetch";
inline constexpr const char* kOpenDataPath = "/rill.dist.v1.ParameterServer/OpenDataPath";
inline constexpr const char* kStatus = "/rill.dist.v1.ParameterServer/Status";

struct RpcCall {
  std::string endpoint;
  const char* method = nullptr;
  std::string subject;  // what the call is about, for errors: a variable, "iteration 3"
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  // Statuses the caller handles itself: Call() leaves them in `status` instead of throwing.
  std::vector<grpc::StatusCode> tolerated;
  // Waits (within the deadline) for the pserver to be reachable, as a first contact does,
  // instead of failing at once when it is not.
  bool wait_for_ready = false;
  grpc::Status status;
};

// How an error about `call` begins: "pserver HOST:PORT: Method subject: ". The same
// whether the call went over gRPC or was pushed by a DataPath.
std::string AboutCall(const RpcCall& call);

class TrainerSession {
 public:
  static TrainerSession& Get();

  // Fixes the trainer id on first use; a later different id is an error.
  int32_t BindTrainerId(int32_t trainer_id);
  int32_t trainer_id() const;
  // The iteration whose parameters the trainer holds; Advance() starts the next one.
  int64_t iteration() const;
  int64_t Advance();

  void Call(std::vector<RpcCall>& calls, const TransportOptions& options);

  // Send ops register while they exist; the last one leaving ends the session.
  void AddSender();
  void RemoveSender(const TransportOptions& options);

 private:
  std::shared_ptr<grpc::Channel> ChannelFor(const std::string& endpoint, const TransportOptions& options,
                                            bool* first_contact);
  void Complete(const TransportOptions& options);

  mutable std::mutex mu_;
  int32_t trainer_id_ = -1;
  int64_t iteration_ = 0;
  int senders_ = 0;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
  std::set<std::string> contacted_;
};

}  // namespace rill::dist

#endif  // RILL_DIST_PS_CLIENT_H_
