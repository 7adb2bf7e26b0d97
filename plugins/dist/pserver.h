// pserver.h — the parameter server behind listen_and_serv and listen_and_serv_mpi.
//
// Contract (sync mode, TrainingMode::sync):
//  - Start() binds exactly the endpoint given (port 0: a free port, see endpoint()) and
//    serves at once: the parameters published before it are iteration 0.
//  - Serve() runs on the op's thread. For k = 1, 2, ...: it waits until every trainer not
//    yet completed sent Barrier(k); writes, through `hooks`, each gradient averaged over
//    the trainers that sent it for k (SelectedRows from all of them stay SelectedRows: the
//    rows of all, values scaled by 1 / trainers; a mix becomes dense); runs `hooks.optimize` once; publishes
//    `hooks.parameters()`; then answers the Barrier(k) calls, which wait for it, and
//    GetVariable(k). A Step(k) is a trainer's SendVariable(k) calls with their bytes in
//    the message, its Barrier(k) and its GetVariable(k) calls in one: taken whole or
//    refused whole, and answered with the parameters once iteration k is published. It returns when every trainer sent
//    Complete, and throws when the deadline passes with trainers missing (naming them).
//  - Async mode (TrainingMode::sync false): no barrier. Each trainer's Step(k) is applied
//    alone, in arrival order: its gradients (with any it sent by SendVariable for k) are
//    written as they are, not averaged, the optimize block runs, the parameters are
//    published, and the step is answered with the parameters it pulls. A step must carry
//    (or follow) every gradient this pserver takes. With max_staleness S >= 0, the answer
//    to a trainer's step k waits until every other trainer still training had its step
//    k - S taken (bounded staleness; the gradient is applied at once all the same).
//    Barrier calls are refused; GetVariable answers the parameters as they are (after the
//    update running, if one is). A trainer's iterations are its own: 1, 2, ... as it steps.
//    Serve() returns when every trainer completed, and throws when the deadline passes
//    with no step from trainers that have not completed (naming them).
//  - Prefetch (a distributed lookup table's rows): rows of a parameter, copied from the
//    published parameters: at once, or, while an update runs, once it is published.
//  - Checkpoints: with hooks.checkpoint, every hooks.checkpoint_every iterations (sync:
//    iterations; async: updates) Serve()'s thread writes one after publishing the
//    parameters and answering the trainers, before the next update. A server started
//    with a restored checkpoint's parameters and iteration (Start) goes on from there;
//    Status tells trainers (TrainerStatus.next_step) which iteration it takes next from
//    each, so a trainer rejoins it (send_op.cc).
//  - A bad request (malformed, unknown variable or trainer, dtype or dims other than the
//    parameter's, wrong iteration, duplicate, bad token) gets an error status for that
//    call only; the server goes on serving the others.
//
// Invariants, all under mu_:
//  - A received gradient stays where it arrived (gRPC's receive buffers, or the slot's
//    memory for a DataPath) until the iteration is averaged; averaging is the one copy.
//    The host's variables are touched only by Serve()'s thread.
//  - A slot goes EMPTY -> FULL (gRPC), or EMPTY -> WRITING (the DataPath writes outside
//    the lock) -> FULL; a trainer's barrier is refused while one of its slots is WRITING,
//    and sends after its barrier are refused, so Serve() reads FULL slots that nobody writes.
//  - Response slices (and DataPath sends) read the published parameters; Serve() waits
//    until all of them released it (params_lease_) before the optimize block may change
//    them.
//  - With a DataPath, a SendVariable whose header carries a route is answered once its
//    bytes arrived in the slot (WRITING until then); one refused after its route was
//    checked has its bytes discarded. Transfer callbacks hold in_flight_, not the server:
//    once the server is gone they do nothing. OpenDataPath hands out the DataPath's offer.
//  - Status is answered at once from the state under mu_ (v1::ServerStatus): what each
//    trainer is doing, the iteration, the counters below, uptime.
#ifndef RILL_DIST_PS_PSERVER_H_
#define RILL_DIST_PS_PSERVER_H_

#include <grpcpp/server.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "average.h"
#include "data_path.h"
#include "options.h"
#include "wire.h"

namespace rill::dist {

struct ParamSpec {
  std::string param, grad;
  int32_t dtype = -1;  // float32 or float64
  std::vector<int64_t> dims;
};

// How the trainers' gradients are applied: see the contract above.
struct TrainingMode {
  bool sync = true;
  int64_t max_staleness = -1;    // async: -1, no bound
  std::string Describe() const;  // "sync", "async", "async, staleness at most 2"
};

struct PserverHooks {
  // Memory for the averaged gradient `index` (the host's variable, dtype and dims of the param).
  std::function<void*(size_t index)> gradient;
  // When every trainer sent gradient `index` as SelectedRows: the host's variable made
  // SelectedRows with these rows; memory for their values [rows, ...].
  std::function<void*(size_t index, const std::vector<int64_t>& rows)> sparse_gradient;
  std::function<void()> optimize;
  // The parameters as they are now, in ParamSpec order.
  std::function<std::vector<TensorBytes>()> parameters;
  // Set: called with the iteration every `checkpoint_every` iterations (Checkpointing),
  // after that iteration's parameters are published, on Serve()'s thread; writes the
  // checkpoint. Updates wait while it runs.
  std::function<void(int64_t iteration)> checkpoint;
  int64_t checkpoint_every = 0;
};

// Where a pserver checkpoints, and what it restored, for Status.
struct Checkpointing {
  std::string path;  // empty: none
  int64_t every = 0;
  int64_t restored = -1;  // the iteration restored at start, or -1
};

class ParameterServer {
 public:
  // `data_path` (not owned; may be null): requests with a route move their bytes by it.
  ParameterServer(std::string endpoint, int32_t fanin, std::vector<ParamSpec> params, TransportOptions options,
                  DataPath* data_path = nullptr, TrainingMode mode = {});
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // Serves `initial_parameters` as those of `iteration` (a restored checkpoint's; sync:
  // the trainers' next step is iteration + 1; async: it counts updates).
  void Start(std::vector<TensorBytes> initial_parameters, int64_t iteration = 0, Checkpointing checkpointing = {});
  const std::string& endpoint() const { return bound_endpoint_; }
  void Serve(const PserverHooks& hooks);

 private:
  class Service;
  enum class SlotState { EMPTY, WRITING, FULL };
  struct Slot {
    SlotState state = SlotState::EMPTY;
    ReceivedGradient gradient;     // FULL: its bytes in gRPC's buffers, or over `data`
    std::unique_ptr<char[]> data;  // where a DataPath writes the bytes
    size_t capacity = 0;
    std::function<void(const grpc::Status&)> answer_when_full;  // WRITING by the DataPath: its call
  };
  struct PendingCall;
  struct InFlight;
  struct TrainerState {
    int64_t barrier = 0;   // last iteration it reached the barrier of (async: whose step was taken)
    int64_t answered = 0;  // async: last iteration whose step was answered
    bool completed = false;
    int64_t last_seen_iteration = -1;
    std::chrono::steady_clock::time_point last_seen{};
  };

  void ServeIterations(const PserverHooks& hooks);
  void ServeSteps(const PserverHooks& hooks);  // async mode
  // Writes a checkpoint (hooks.checkpoint) when the iteration is due one; `lock` holds mu_
  // and is released while it is written.
  void MaybeCheckpoint(const PserverHooks& hooks, std::unique_lock<std::mutex>& lock);
  // Async: whether the step of `trainer` at `iteration` may be answered (staleness bound).
  bool MayAnswer(int32_t trainer, int64_t iteration) const;
  // Fills a pending call's response from the published parameters (under mu_).
  void Fill(PendingCall& call);
  // Waits (holding `lock` on mu_ between waits) until no response reads the published
  // parameters; throws naming iteration `k` if that takes past the deadline.
  void AwaitParametersReleased(std::unique_lock<std::mutex>& lock, int64_t k);
  grpc::Status CheckToken(grpc::CallbackServerContext* ctx) const;
  // A SendVariable request from gRPC or pushed by the DataPath; answered now, or once its
  // bytes arrived by the DataPath.
  using Answer = std::function<void(const grpc::Status&)>;
  void OnSend(const grpc::ByteBuffer& request, Answer answer);
  grpc::Status CheckRoute(const v1::OutOfBand& route) const;
  // Whether the gradient `h` is one this server takes now (under mu_); *grad: its index.
  grpc::Status AdmitGradient(const v1::VariableHeader& h, size_t* grad);
  // A callback for a DataPath transfer that runs `then` unless the server is gone.
  DataPath::Done Track(std::function<void(const std::string& error)> then);
  // Answers now (returns true, with *status) or keeps the call for after the optimize.
  bool OnBarrier(const grpc::ByteBuffer& request, grpc::ByteBuffer* response, grpc::ServerUnaryReactor* reactor,
                 grpc::Status* status);
  // The same for a Step: its gradients and barrier taken now, or the whole step refused.
  bool OnStep(const grpc::ByteBuffer& request, grpc::ByteBuffer* response, grpc::ServerUnaryReactor* reactor,
              grpc::Status* status);
  // Whether `trainer` may reach the barrier of `iteration` now (under mu_).
  grpc::Status AdmitBarrier(int32_t trainer, int64_t iteration);
  // Fills the slot of an admitted gradient whose bytes came in its message (under mu_).
  void TakeInMessage(size_t grad, const v1::VariableHeader& header, ReceivedBytes data);
  grpc::Status OnComplete(const grpc::ByteBuffer& request);
  // Answers now (returns true, with *status) or, async while an update runs, after it.
  bool OnGet(const grpc::ByteBuffer& request, grpc::ByteBuffer* response, grpc::ServerUnaryReactor* reactor,
             grpc::Status* status);
  // Rows of a parameter (a table's shard): answered now, or after the update running.
  bool OnPrefetch(const grpc::ByteBuffer& request, grpc::ByteBuffer* response, grpc::ServerUnaryReactor* reactor,
                  grpc::Status* status);
  // The answer to a Prefetch of `rows` of param `param`, copied from the published
  // parameters (under mu_, while no update runs).
  grpc::ByteBuffer RowsOf(size_t param, int32_t trainer, const std::vector<int64_t>& rows);
  grpc::Status OnOpenDataPath(grpc::ByteBuffer* response);
  grpc::Status OnStatus(grpc::ByteBuffer* response);
  grpc::Status CheckTrainer(int32_t trainer) const;
  void Seen(int32_t trainer, int64_t iteration);
  bool AllArrived() const;
  bool AllCompleted() const;
  std::string Missing() const;
  // The index of the param whose `field` (&ParamSpec::param or ::grad) is `name`, else
  // params_.size(); and every such name, for messages.
  size_t IndexOf(std::string ParamSpec::*field, const std::string& name) const;
  std::string NamesOf(std::string ParamSpec::*field) const;
  void Respond(size_t param, int32_t trainer, const v1::GetRequest& request, grpc::ByteBuffer* response);
  void FinishPending(const grpc::Status& status);

  const std::string endpoint_;
  const int32_t fanin_;
  const std::vector<ParamSpec> params_;
  const TransportOptions options_;
  DataPath* const data_path_;
  const TrainingMode mode_;
  std::shared_ptr<InFlight> in_flight_;
  std::string bound_endpoint_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  SliceLease params_lease_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t current_ = 0;      // iterations optimized; the parameters published are of this one
  bool optimizing_ = false;  // between the barrier of current_+1 and its publication
  bool stopped_ = false;
  std::vector<TensorBytes> published_;
  std::vector<std::vector<Slot>> slots_;  // [grad][trainer]
  std::vector<TrainerState> trainers_;
  std::vector<PendingCall> pending_;  // sync: answered after the next optimize; async: GetVariable calls
  std::vector<PendingCall> steps_;    // async: steps taken, not yet applied, in arrival order
  std::vector<PendingCall> held_;     // async: steps applied, their answers held (staleness)
  std::string transfer_error_;        // a DataPath send of the parameters that failed
  // For Status: counted as they happen, never reset.
  std::chrono::steady_clock::time_point started_{};
  uint64_t bytes_in_ = 0, bytes_out_ = 0;  // tensor bytes of gradients taken, parameters served
  int64_t barrier_waits_ = 0;              // iterations Serve() waited for every trainer's barrier
  Checkpointing checkpointing_;
  int64_t last_checkpoint_ = -1;
  std::chrono::steady_clock::duration barrier_waited_{};
};

}  // namespace rill::dist

#endif  // RILL_DIST_PS_PSERVER_H_
