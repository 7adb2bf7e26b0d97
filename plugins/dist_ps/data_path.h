// data_path.h — a way for tensor bytes to travel beside the gRPC control messages.
//
// Without one (dist_grpc), a variable's bytes ride in its VariableMessage. With one
// (dist_mpi), requests carry an OutOfBand route instead and the bytes move through the
// DataPath, straight from and into the tensors' memory:
//   trainer push:  SendVariable(header + route) || Send(bytes) to the pserver's rank; the
//                  pserver validates the header, then Receive()s into its slot and
//                  answers the call once the bytes are in.
//   trainer pull:  GetVariable(name + route); the pserver answers with the header and
//                  Send()s the bytes; the trainer Receive()s them into its tensor.
// A receiver never takes bytes it did not validate a header for: a refused push is left
// unmatched (the trainer's run fails on the refusal), never received into a wrong buffer.
//
// Transfers complete asynchronously: `done` runs once, on a thread of the DataPath, with
// an empty string on success or the reason it failed. Memory passed to Send/Receive stays
// valid and untouched until then.
#ifndef RILL_DIST_PS_DATA_PATH_H_
#define RILL_DIST_PS_DATA_PATH_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "parameter_server.pb.h"

namespace rill::dist {

class DataPath {
 public:
  using Done = std::function<void(const std::string& error)>;
  virtual ~DataPath() = default;

  // Trainer: a fresh route for one transfer with the pserver serving `endpoint`; throws
  // if no process of the job serves it.
  virtual v1::OutOfBand RouteTo(const std::string& endpoint) = 0;
  // Pserver: empty if a request's route reaches this process, else why not.
  virtual std::string Refuses(const v1::OutOfBand& route) const = 0;

  // Bytes to / from the process of rank `rank`, matched by `tag`.
  virtual void Send(int rank, int tag, const void* data, size_t bytes, Done done) = 0;
  virtual void Receive(int rank, int tag, void* data, size_t bytes, Done done) = 0;
};

// Waits for a batch of transfers: Done() makes their callbacks, Wait() returns whether
// all ended before `deadline`, with the first error (empty when all succeeded). The state
// is shared with the callbacks, so a batch given up on may go away before they run.
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
  bool Wait(std::chrono::milliseconds deadline, std::string* error) {
    std::unique_lock<std::mutex> lock(state_->mu);
    const bool all = state_->finished.wait_for(lock, deadline, [&] { return state_->pending == 0; });
    *error = state_->error;
    return all;
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
