// data_path.h — a way for tensor bytes to travel beside the gRPC control messages.
//
// Without one, a variable's bytes ride in its VariableMessage. With one (dist_grpc: a TCP
// connection per trainer and pserver; dist_mpi: MPI), requests carry an OutOfBand route
// instead and the bytes move through the DataPath, straight from and into the tensors'
// memory:
//   trainer push:  SendVariable(header + route) || Send(bytes) to the pserver; the
//                  pserver validates the header, then Receive()s into its slot and
//                  answers the call once the bytes are in (or Discard()s them when it
//                  refuses the header).
//                  Or, where the DataPath Pushes(), the SendVariable request itself goes
//                  by Push() beside the bytes, and the answer comes back the same way:
//                  no gRPC call (the pserver's ServePushes handler takes it).
//   trainer pull:  GetVariable(name + route); the pserver answers with the header and
//                  Send()s the bytes; the trainer Receive()s them into its tensor (or,
//                  below MinBytes(), answers with the bytes in the message).
// Below MinBytes() a trainer that does not push sends the bytes in the message too.
// A receiver never takes bytes it did not validate a header for: a refused transfer is
// left unmatched or discarded (the trainer's run fails on the refusal), never received
// into a wrong buffer.
//
// Transfers complete asynchronously: `done` runs once, on a thread of the DataPath (never
// inside the call that started the transfer), with an empty string on success or the
// reason it failed. Memory passed to Send/Receive stays valid and untouched until then.
#ifndef RILL_DIST_PS_DATA_PATH_H_
#define RILL_DIST_PS_DATA_PATH_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/support/status.h>

#include "parameter_server.pb.h"

namespace rill::dist {

// Below a data path's MinBytes() the bytes go in the message even where it could take
// them: for small tensors its extra hop (two more threads to wake) costs more than the
// copy it saves. This is MPI's.
inline constexpr size_t kOutOfBandMinBytes = size_t{64} << 10;

class DataPath {
 public:
  using Done = std::function<void(const std::string& error)>;
  // How a pushed request is answered: "" for OK, else why it was refused.
  using Answer = std::function<void(const std::string& refusal)>;
  using PushHandler = std::function<void(const std::string& request, Answer answer)>;
  virtual ~DataPath() = default;

  // Trainer: a fresh route for one transfer with the pserver serving `endpoint` (true),
  // or false when that pserver takes the bytes in the messages; throws if it cannot be
  // reached.
  virtual bool RouteTo(const std::string& endpoint, v1::OutOfBand* route) = 0;
  // The smallest tensor worth the path (see kOutOfBandMinBytes).
  virtual size_t MinBytes() const { return kOutOfBandMinBytes; }
  // Trainer: whether a route to `endpoint` is at hand without opening anything.
  virtual bool Reaches(const std::string& endpoint) const {
    (void)endpoint;
    return true;
  }
  // Pserver: empty if a request's route reaches this process, else why not.
  virtual std::string Refuses(const v1::OutOfBand& route) const = 0;
  // Pserver: how a trainer opens this data path (the OpenDataPath call); UNIMPLEMENTED
  // where trainers need not ask.
  virtual grpc::Status Offer(v1::DataPathOffer* offer) {
    (void)offer;
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this data path is not opened by OpenDataPath");
  }
  // For messages: who `rank` is ("rank 3", "data connection 3").
  virtual std::string PeerName(int rank) const { return "rank " + std::to_string(rank); }
  // What the path is, for status reports: "tcp", "mpi".
  virtual std::string Name() const = 0;

  // Bytes to / from `rank` (the route's rank on a pserver, its peer_rank on a trainer),
  // matched by `tag`.
  virtual void Send(int rank, int tag, const void* data, size_t bytes, Done done) = 0;
  virtual void Receive(int rank, int tag, void* data, size_t bytes, Done done) = 0;
  // Bytes from `rank` with `tag` that will never be received (a refused header): dropped
  // when they come, where the data path has to take them off its way.
  virtual void Discard(int rank, int tag) { (void)rank, (void)tag; }

  // Trainer: whether SendVariable requests go by Push() instead of gRPC.
  virtual bool Pushes() const { return false; }
  // Trainer: a SendVariable `request` (its header carries `route`) and the bytes, to the
  // pserver of route.peer_rank(); `done` gets the pserver's answer.
  virtual void Push(const v1::OutOfBand& route, const std::string& request, const void* data, size_t bytes, Done done) {
    (void)route, (void)request, (void)data, (void)bytes;
    done("this data path does not push requests");
  }
  // Pserver: the SendVariable requests pushed to this process go to `handler` (null:
  // none; pushes wait). The handler runs on the DataPath's thread.
  virtual void ServePushes(PushHandler handler) { (void)handler; }
};

// Waits for a batch of transfers: Done() makes their callbacks, Wait() returns whether
// all ended (or one failed) before `deadline`, with the first error (empty when all
// succeeded). The state is shared with the callbacks, so a batch given up on may go away
// before they run.
class TransferBatch {
 public:
  DataPath::Done Done() {
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->pending;
    return [state = state_](const std::string& error) {
      std::lock_guard<std::mutex> lock(state->mu);
      if (!error.empty() && state->error.empty()) state->error = error;
      if (--state->pending == 0) state->finished.notify_all();
    };
  }
  // Returns at the first error too: the caller fails on it, and the transfers still
  // running are left to the DataPath.
  bool Wait(std::chrono::milliseconds deadline, std::string* error) {
    std::unique_lock<std::mutex> lock(state_->mu);
    const bool ended =
        state_->finished.wait_for(lock, deadline, [&] { return state_->pending == 0 || !state_->error.empty(); });
    *error = state_->error;
    return ended;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable finished;
    int pending = 0;
    std::string error;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace rill::dist

#endif  // RILL_DIST_PS_DATA_PATH_H_
