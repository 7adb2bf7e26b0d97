#include "pserver.h"

#include <grpcpp/server_builder.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "parameter_server.grpc.pb.h"
#include "rill/sdk.hpp"
#include "trace.h"

namespace rill::dist {

// A call answered later (Fill): a Barrier's with a Reply once its iteration is
// optimized; a Step's with the parameters it pulls (`params`: their indices, in its
// order); an async GetVariable's with its parameter, once the update running is done.
struct ParameterServer::PendingCall {
  enum class Kind { kBarrier, kStep, kGet, kPrefetch };
  grpc::ServerUnaryReactor* reactor;
  grpc::ByteBuffer* response;
  Kind kind = Kind::kBarrier;
  int32_t trainer = 0;
  int64_t iteration = 0;
  std::vector<v1::GetRequest> pulls;
  std::vector<size_t> params;
  std::vector<int64_t> rows;  // kPrefetch: the rows asked of params[0]
};

std::string TrainingMode::Describe() const {
  if (sync) return "sync";
  return max_staleness < 0 ? "async" : "async, staleness at most " + std::to_string(max_staleness);
}

// Lock order: alive_mu (held while a callback runs) -> the server's mu_ -> count_mu.
struct ParameterServer::InFlight {
  std::mutex alive_mu;
  ParameterServer* server = nullptr;  // null once the server is gone
  std::mutex count_mu;
  std::condition_variable idle;
  int count = 0;
};

// Every method raw: requests are parsed by wire.h, responses built over tensor memory.
class ParameterServer::Service final
    : public v1::ParameterServer::WithRawCallbackMethod_SendVariable<
          v1::ParameterServer::WithRawCallbackMethod_GetVariable<
              v1::ParameterServer::WithRawCallbackMethod_Barrier<v1::ParameterServer::WithRawCallbackMethod_Complete<
                  v1::ParameterServer::WithRawCallbackMethod_Step<v1::ParameterServer::WithRawCallbackMethod_Prefetch<
                      v1::ParameterServer::WithRawCallbackMethod_OpenDataPath<
                          v1::ParameterServer::WithRawCallbackMethod_Status<v1::ParameterServer::Service>>>>>>>> {
 public:
  explicit Service(ParameterServer* server) : server_(server) {}

  grpc::ServerUnaryReactor* SendVariable(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    Answer answer = [reactor, response](const grpc::Status& status) {
      if (status.ok()) *response = EncodeMessage(v1::Reply());
      reactor->Finish(status);
    };
    if (grpc::Status status = server_->CheckToken(ctx); !status.ok()) {
      answer(status);
    } else {
      server_->OnSend(*request, std::move(answer));
    }
    return reactor;
  }
  grpc::ServerUnaryReactor* Barrier(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override {
    return MaybeLater(ctx, request, response, &ParameterServer::OnBarrier);
  }
  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override {
    return MaybeLater(ctx, request, response, &ParameterServer::OnStep);
  }
  grpc::ServerUnaryReactor* Prefetch(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    return MaybeLater(ctx, request, response, &ParameterServer::OnPrefetch);
  }
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    return Unary(ctx, [&] {
      grpc::Status status = server_->OnComplete(*request);
      if (status.ok()) *response = EncodeMessage(v1::Reply());
      return status;
    });
  }
  grpc::ServerUnaryReactor* OpenDataPath(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                         grpc::ByteBuffer* response) override {
    return Unary(ctx, [&] { return server_->OnOpenDataPath(response); });
  }
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                   grpc::ByteBuffer* response) override {
    return Unary(ctx, [&] { return server_->OnStatus(response); });
  }
  grpc::ServerUnaryReactor* GetVariable(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override {
    return MaybeLater(ctx, request, response, &ParameterServer::OnGet);
  }

 private:
  // The methods that may be answered later: `handle` (once the token passed) answers now
  // (returns true, with the status) or keeps the reactor to finish it itself.
  using Deferrable = bool (ParameterServer::*)(const grpc::ByteBuffer&, grpc::ByteBuffer*, grpc::ServerUnaryReactor*,
                                               grpc::Status*);
  grpc::ServerUnaryReactor* MaybeLater(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response, Deferrable handle) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    grpc::Status status = server_->CheckToken(ctx);
    if (!status.ok() || (server_->*handle)(*request, response, reactor, &status)) reactor->Finish(status);
    return reactor;
  }
  // The methods handled at once: `handle` (once the token passed) writes the answer.
  template <class F> grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, F&& handle) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    grpc::Status status = server_->CheckToken(ctx);
    if (status.ok()) status = handle();
    reactor->Finish(status);
    return reactor;
  }
  ParameterServer* server_;
};

namespace {

grpc::Status Invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

ParameterServer::ParameterServer(std::string endpoint, int32_t fanin, std::vector<ParamSpec> params,
                                 TransportOptions options, DataPath* data_path, TrainingMode mode)
    : endpoint_(std::move(endpoint)),
      fanin_(fanin),
      params_(std::move(params)),
      options_(std::move(options)),
      data_path_(data_path),
      mode_(mode),
      in_flight_(std::make_shared<InFlight>()) {
  in_flight_->server = this;
  if (fanin_ < 1) throw std::runtime_error("Fanin must be at least 1, got " + std::to_string(fanin_));
  for (const auto& p : params_) {
    if (p.dtype != RILL_FP32 && p.dtype != RILL_FP64) {
      throw std::runtime_error("parameter '" + p.param + "' is " + DataTypeName(p.dtype) +
                               "; the pserver averages float32 and float64 gradients only");
    }
  }
  slots_.resize(params_.size());
  for (auto& s : slots_) s.resize(fanin_);
  trainers_.resize(fanin_);
}

ParameterServer::~ParameterServer() {
  if (!server_) return;
  if (data_path_) data_path_->ServePushes(nullptr);  // returns once no push is being handled
  const grpc::Status stopped(grpc::StatusCode::UNAVAILABLE, "pserver " + bound_endpoint_ + " stopped");
  FinishPending(stopped);
  bool transfers_ended;
  {
    std::unique_lock<std::mutex> count_lock(in_flight_->count_mu);
    transfers_ended =
        in_flight_->idle.wait_for(count_lock, std::chrono::seconds(1), [&] { return in_flight_->count == 0; });
  }
  {
    std::lock_guard<std::mutex> alive(in_flight_->alive_mu);
    in_flight_->server = nullptr;
  }
  // Transfers still running: a peer died mid-transfer. The data path may yet write into
  // their slots, so those outlive the server (this process ends on the error that got us
  // here); their calls are answered now.
  for (auto& per_grad : slots_) {
    for (auto& slot : per_grad) {
      if (!slot.answer_when_full) continue;
      slot.answer_when_full(stopped);
      (void)slot.data.release();
    }
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  if (!transfers_ended) params_lease_.Abandon();  // their callbacks no longer release it
}

DataPath::Done ParameterServer::Track(std::function<void(const std::string& error)> then) {
  {
    std::lock_guard<std::mutex> lock(in_flight_->count_mu);
    ++in_flight_->count;
  }
  return [state = in_flight_, then = std::move(then)](const std::string& error) {
    {
      std::lock_guard<std::mutex> alive(state->alive_mu);
      if (state->server) then(error);
    }
    std::lock_guard<std::mutex> lock(state->count_mu);
    if (--state->count == 0) state->idle.notify_all();
  };
}

grpc::Status ParameterServer::CheckRoute(const v1::OutOfBand& route) const {
  if (!data_path_) {
    return Invalid(
        "this pserver takes the bytes in the message (dist_grpc's listen_and_serv); the request "
        "routes them out of band (an MPI transport op): load the same transport on both sides");
  }
  const std::string why = data_path_->Refuses(route);
  return why.empty() ? grpc::Status::OK : Invalid(why);
}

namespace {

// Whether HOST:PORT names only this host: 127.0.0.0/8, ::1 or localhost.
bool IsLoopback(const std::string& endpoint) {
  std::string host = endpoint.substr(0, endpoint.rfind(':'));
  if (host.rfind("ipv4:", 0) == 0) host = host.substr(5);
  if (host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  return host == "localhost" || host == "[::1]" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

void ParameterServer::Start(std::vector<TensorBytes> initial_parameters, int64_t iteration,
                            Checkpointing checkpointing) {
  if (options_.token.empty() && !options_.insecure && !IsLoopback(endpoint_)) {
    throw std::runtime_error("pserver '" + endpoint_ + "' would listen beyond loopback without a shared token: " +
                             "any process that reaches it could send it values or stop it. Set RILL_DIST_TOKEN " +
                             "(with TLS: RILL_TLS_CERT and RILL_TLS_KEY), or RILL_DIST_INSECURE=1 to serve without");
  }
  published_ = std::move(initial_parameters);
  current_ = iteration;
  checkpointing_ = std::move(checkpointing);
  if (checkpointing_.restored >= 0) last_checkpoint_ = checkpointing_.restored;
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(endpoint_, options_.ServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // gRPC shares ports (SO_REUSEPORT) by default: a second pserver on a port in use would
  // silently take half the calls. One endpoint, one pserver.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    server_.reset();
    throw std::runtime_error("cannot listen on '" + endpoint_ + "' (address in use, or not an address of this host)");
  }
  bound_endpoint_ = endpoint_.substr(0, endpoint_.rfind(':') + 1) + std::to_string(port);
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = std::chrono::steady_clock::now();
  }
  if (data_path_) {
    data_path_->ServePushes([this](const std::string& request, DataPath::Answer answer) {
      grpc::Slice slice(request);
      OnSend(grpc::ByteBuffer(&slice, 1), [answer = std::move(answer)](const grpc::Status& status) {
        answer(status.ok() ? "" : status.error_message());
      });
    });
  }
}

grpc::Status ParameterServer::CheckToken(grpc::CallbackServerContext* ctx) const {
  if (options_.token.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  const auto it = md.find(kTokenMetadataKey);
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "pserver " + bound_endpoint_ +
                                                               " requires the shared token (RILL_DIST_TOKEN); the "
                                                               "call carried none");
  }
  if (std::string(it->second.data(), it->second.size()) != options_.token) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "pserver " + bound_endpoint_ +
                                                               " requires the shared token (RILL_DIST_TOKEN); the "
                                                               "call's token is not that one");
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServer::CheckTrainer(int32_t trainer) const {
  if (trainer < 0 || trainer >= fanin_) {
    return Invalid("trainer " + std::to_string(trainer) + " is not one of this pserver's " + std::to_string(fanin_) +
                   " trainers (0.." + std::to_string(fanin_ - 1) + ")");
  }
  if (trainers_[trainer].completed) return Invalid("trainer " + std::to_string(trainer) + " already completed");
  return grpc::Status::OK;
}

void ParameterServer::Seen(int32_t trainer, int64_t iteration) {
  trainers_[trainer].last_seen = std::chrono::steady_clock::now();
  trainers_[trainer].last_seen_iteration = iteration;
}

size_t ParameterServer::IndexOf(std::string ParamSpec::*field, const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].*field == name) return i;
  }
  return params_.size();
}

std::string ParameterServer::NamesOf(std::string ParamSpec::*field) const {
  std::string names;
  for (const auto& p : params_) names += (names.empty() ? "" : ", ") + p.*field;
  return names;
}

grpc::Status ParameterServer::AdmitGradient(const v1::VariableHeader& h, size_t* grad) {
  *grad = IndexOf(&ParamSpec::grad, h.name());
  if (*grad == params_.size()) {
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "unknown variable '" + h.name() + "'; this pserver takes the gradients " + NamesOf(&ParamSpec::grad));
  }
  if (auto s = CheckTrainer(h.trainer_id()); !s.ok()) return s;
  const int32_t trainer = h.trainer_id();
  Seen(trainer, h.iteration());
  const ParamSpec& p = params_[*grad];
  const std::vector<int64_t> dims(h.tensor().dims().begin(), h.tensor().dims().end());
  const bool sparse = h.has_selected_rows();
  // SelectedRows: rows of the parameter, so the same height and row shape.
  const bool shape_ok = sparse ? !p.dims.empty() && h.selected_rows().height() == p.dims[0] &&
                                     dims.size() == p.dims.size() &&
                                     std::equal(dims.begin() + 1, dims.end(), p.dims.begin() + 1)
                               : dims == p.dims;
  if (h.tensor().dtype() != p.dtype || !shape_ok) {
    const std::string got = sparse ? "SelectedRows of height " + std::to_string(h.selected_rows().height()) +
                                         " with values " + DimsText(dims)
                                   : DimsText(dims);
    return Invalid("'" + h.name() + "' is " + DataTypeName(h.tensor().dtype()) + " " + got + "; the pserver expects " +
                   DataTypeName(p.dtype) + " " + DimsText(p.dims) + " (parameter '" + p.param + "')");
  }
  if (stopped_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "pserver is stopping");
  if (!mode_.sync && h.iteration() != trainers_[trainer].barrier + 1) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "'" + h.name() + "' of iteration " + std::to_string(h.iteration()) + " from trainer " +
                            std::to_string(trainer) + ": the pserver takes its iteration " +
                            std::to_string(trainers_[trainer].barrier + 1) + " (asynchronous training)");
  }
  if (mode_.sync && (h.iteration() != current_ + 1 || optimizing_)) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "'" + h.name() + "' of iteration " + std::to_string(h.iteration()) + " from trainer " +
                            std::to_string(trainer) + ": the pserver collects iteration " +
                            std::to_string(current_ + 1) + (optimizing_ ? " and is optimizing it" : ""));
  }
  // The iteration collected, and this trainer id has sent this gradient or reached the
  // barrier already: a second trainer runs with the same id, as a trainer retries nothing.
  const std::string twice = " (is trainer id " + std::to_string(trainer) +
                            " used by two trainers? each needs its own, "
                            "0 to " +
                            std::to_string(trainers_.size() - 1) + ": RILL_TRAINER_ID)";
  if (trainers_[trainer].barrier >= h.iteration()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "'" + h.name() + "' of iteration " + std::to_string(h.iteration()) + " from trainer " +
                            std::to_string(trainer) + ", which already reached that iteration's barrier" + twice);
  }
  if (slots_[*grad][trainer].state != SlotState::EMPTY) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "trainer " + std::to_string(trainer) + " already sent '" +
                                                              h.name() + "' for iteration " +
                                                              std::to_string(h.iteration()) + twice);
  }
  return grpc::Status::OK;
}

void ParameterServer::OnSend(const grpc::ByteBuffer& request, Answer answer) {
  ReceivedBytes data;
  v1::VariableHeader header;
  try {
    header = ParseVariable(request, &data);
  } catch (const WireError& e) {
    answer(Invalid(std::string("malformed variable message: ") + e.what()));
    return;
  }
  const bool by_data_path = header.has_out_of_band();
  if (by_data_path) {
    if (auto s = CheckRoute(header.out_of_band()); !s.ok()) return answer(s);
  }
  size_t grad = 0;
  const int32_t trainer = header.trainer_id();
  const size_t bytes = TensorByteSize(header);
  void* into = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (grpc::Status s = AdmitGradient(header, &grad); !s.ok()) {
      lock.unlock();
      if (by_data_path) data_path_->Discard(header.out_of_band().rank(), header.out_of_band().tag());
      answer(s);
      return;
    }
    if (!by_data_path) {
      TakeInMessage(grad, header, std::move(data));
    } else {
      Slot& slot = slots_[grad][trainer];
      slot.gradient.sparse = header.has_selected_rows();
      slot.gradient.rows.assign(header.selected_rows().rows().begin(),
                                header.selected_rows().rows().end());  // empty if dense
      slot.state = SlotState::WRITING;
      if (slot.capacity < bytes) {
        slot.data.reset(new char[bytes]);
        slot.capacity = bytes;
      }
      slot.answer_when_full = std::move(answer);
      into = slot.data.get();
    }
  }
  if (!by_data_path) {
    answer(grpc::Status::OK);
    return;
  }
  // The header is good: take the bytes into the slot, then answer.
  const v1::OutOfBand& route = header.out_of_band();
  auto done = Track([this, grad, trainer, bytes, name = header.name(),
                     peer = data_path_->PeerName(route.rank())](const std::string& error) {
    Answer answer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[grad][trainer];
      slot.state = error.empty() ? SlotState::FULL : SlotState::EMPTY;
      if (error.empty()) {
        slot.gradient.bytes = ReceivedBytes::Borrowed(slot.data.get(), bytes);
        bytes_in_ += bytes;
      }
      answer.swap(slot.answer_when_full);
      changed_.notify_all();
    }
    answer(error.empty()
               ? grpc::Status::OK
               : grpc::Status(grpc::StatusCode::UNAVAILABLE, "receiving '" + name + "' from " + peer + ": " + error));
  });
  data_path_->Receive(route.rank(), route.tag(), into, bytes, std::move(done));
}

void ParameterServer::TakeInMessage(size_t grad, const v1::VariableHeader& header, ReceivedBytes data) {
  Slot& slot = slots_[grad][header.trainer_id()];
  slot.gradient.sparse = header.has_selected_rows();
  slot.gradient.rows.assign(header.selected_rows().rows().begin(),
                            header.selected_rows().rows().end());  // empty if dense
  // The bytes stay in gRPC's receive buffers until the iteration is averaged: the
  // average is the one pass that reads them.
  bytes_in_ += data.size();
  slot.gradient.bytes = std::move(data);
  slot.state = SlotState::FULL;
}

grpc::Status ParameterServer::AdmitBarrier(int32_t trainer, int64_t iteration) {
  if (auto s = CheckTrainer(trainer); !s.ok()) return s;
  Seen(trainer, iteration);
  const TrainerState& t = trainers_[trainer];
  if (!mode_.sync && iteration != t.barrier + 1) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "step of iteration " + std::to_string(iteration) + " from trainer " + std::to_string(trainer) +
                            ": the pserver takes its iteration " + std::to_string(t.barrier + 1) +
                            " (asynchronous training)");
  }
  if (mode_.sync && (iteration != current_ + 1 || t.barrier == iteration)) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "barrier of iteration " + std::to_string(iteration) + " from trainer " +
                            std::to_string(trainer) + ": the pserver is at iteration " + std::to_string(current_ + 1) +
                            (t.barrier == iteration ? " and has it already" : ""));
  }
  for (const auto& per_grad : slots_) {
    if (per_grad[trainer].state == SlotState::WRITING) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "barrier while a gradient of trainer " + std::to_string(trainer) + " is still arriving");
    }
  }
  if (stopped_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "pserver is stopping");
  return grpc::Status::OK;
}

bool ParameterServer::OnBarrier(const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                                grpc::ServerUnaryReactor* reactor, grpc::Status* status) {
  v1::BarrierRequest r;
  try {
    DecodeMessage(request, &r);
  } catch (const WireError& e) {
    *status = Invalid(e.what());
    return true;
  }
  if (!mode_.sync) {
    *status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                           "this pserver trains asynchronously (" + mode_.Describe() +
                               "): it has no barrier; a trainer's Step is its iteration");
    return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (*status = AdmitBarrier(r.trainer_id(), r.iteration()); !status->ok()) return true;
  trainers_[r.trainer_id()].barrier = r.iteration();
  pending_.push_back(
      PendingCall{reactor, response, PendingCall::Kind::kBarrier, r.trainer_id(), r.iteration(), {}, {}, {}});
  changed_.notify_all();
  return false;  // answered once the iteration is optimized
}

bool ParameterServer::OnStep(const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                             grpc::ServerUnaryReactor* reactor, grpc::Status* status) {
  ParsedStep step;
  try {
    step = ParseStep(request);
  } catch (const WireError& e) {
    *status = Invalid(std::string("malformed step: ") + e.what());
    return true;
  }
  const int32_t trainer = step.trainer_id;
  const std::string of_step =
      "trainer " + std::to_string(trainer) + "'s step of iteration " + std::to_string(step.iteration);
  for (const auto& [header, data] : step.gradients) {
    if (header.has_out_of_band()) {
      *status = Invalid("'" + header.name() + "' in " + of_step +
                        " routes its bytes out of band; a step carries its gradients' bytes (send the others by "
                        "SendVariable before the step)");
      return true;
    }
    if (header.trainer_id() != trainer || header.iteration() != step.iteration) {
      *status = Invalid("'" + header.name() + "' is trainer " + std::to_string(header.trainer_id()) +
                        "'s of iteration " + std::to_string(header.iteration()) + ", in " + of_step);
      return true;
    }
  }
  PendingCall pending{reactor, response, PendingCall::Kind::kStep, trainer, step.iteration, std::move(step.parameters),
                      {},      {}};
  for (const auto& pull : pending.pulls) {
    if (pull.trainer_id() != trainer || pull.iteration() != step.iteration) {
      *status = Invalid("the pull of '" + pull.name() + "' is trainer " + std::to_string(pull.trainer_id()) +
                        "'s of iteration " + std::to_string(pull.iteration()) + ", in " + of_step);
      return true;
    }
    if (pull.has_out_of_band()) {
      if (*status = CheckRoute(pull.out_of_band()); !status->ok()) return true;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& pull : pending.pulls) {
    pending.params.push_back(IndexOf(&ParamSpec::param, pull.name()));
    if (pending.params.back() == params_.size()) {
      *status = grpc::Status(
          grpc::StatusCode::NOT_FOUND,
          "unknown variable '" + pull.name() + "'; this pserver serves the parameters " + NamesOf(&ParamSpec::param));
      return true;
    }
  }
  if (*status = AdmitBarrier(trainer, step.iteration); !status->ok()) return true;
  // Every gradient or none: one refused leaves the slots the step filled empty again.
  std::vector<size_t> taken;
  const auto refuse = [&](grpc::Status why) {
    for (size_t g : taken) {
      bytes_in_ -= slots_[g][trainer].gradient.bytes.size();
      slots_[g][trainer].gradient.bytes = ReceivedBytes();
      slots_[g][trainer].state = SlotState::EMPTY;
    }
    *status = std::move(why);
    return true;
  };
  for (auto& [header, data] : step.gradients) {
    size_t grad = 0;
    if (grpc::Status s = AdmitGradient(header, &grad); !s.ok()) return refuse(std::move(s));
    TakeInMessage(grad, header, std::move(data));
    taken.push_back(grad);
  }
  if (!mode_.sync) {  // applied alone: it brings every gradient, or sent it before
    for (size_t g = 0; g < params_.size(); ++g) {
      if (slots_[g][trainer].state != SlotState::FULL) {
        return refuse(Invalid(of_step + " lacks '" + params_[g].grad +
                              "'; asynchronous training applies each step alone, so every step sends every "
                              "gradient this pserver takes (" +
                              NamesOf(&ParamSpec::grad) + ")"));
      }
    }
  }
  trainers_[trainer].barrier = step.iteration;
  (mode_.sync ? pending_ : steps_).push_back(std::move(pending));
  changed_.notify_all();
  return false;  // answered once the iteration is optimized
}

grpc::Status ParameterServer::OnComplete(const grpc::ByteBuffer& request) {
  v1::CompleteRequest r;
  try {
    DecodeMessage(request, &r);
  } catch (const WireError& e) {
    return Invalid(e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = CheckTrainer(r.trainer_id()); !s.ok()) return s;
  Seen(r.trainer_id(), trainers_[r.trainer_id()].last_seen_iteration);
  trainers_[r.trainer_id()].completed = true;
  changed_.notify_all();
  return grpc::Status::OK;
}

bool ParameterServer::OnGet(const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                            grpc::ServerUnaryReactor* reactor, grpc::Status* status) {
  v1::GetRequest r;
  try {
    DecodeMessage(request, &r);
  } catch (const WireError& e) {
    *status = Invalid(e.what());
    return true;
  }
  if (r.has_out_of_band()) {
    if (*status = CheckRoute(r.out_of_band()); !status->ok()) return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const size_t param = IndexOf(&ParamSpec::param, r.name());
  if (param == params_.size()) {
    *status = grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "unknown variable '" + r.name() + "'; this pserver serves the parameters " + NamesOf(&ParamSpec::param));
    return true;
  }
  if (*status = CheckTrainer(r.trainer_id()); !status->ok()) return true;
  Seen(r.trainer_id(), r.iteration());
  if (stopped_) {
    *status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "pserver is stopping");
    return true;
  }
  if (!mode_.sync && optimizing_) {  // the parameters as they are once the update running is done
    pending_.push_back(
        PendingCall{reactor, response, PendingCall::Kind::kGet, r.trainer_id(), r.iteration(), {r}, {param}, {}});
    return false;
  }
  if (r.iteration() == current_ || !mode_.sync) {
    Respond(param, r.trainer_id(), r, response);
    *status = grpc::Status::OK;
    return true;
  }
  *status =
      grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                   "'" + r.name() + "' of iteration " + std::to_string(r.iteration()) + " for trainer " +
                       std::to_string(r.trainer_id()) + ": the pserver holds iteration " + std::to_string(current_) +
                       (r.iteration() == current_ + 1 ? " (ask after the barrier of that iteration returns)" : ""));
  return true;
}

bool ParameterServer::OnPrefetch(const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                                 grpc::ServerUnaryReactor* reactor, grpc::Status* status) {
  v1::PrefetchRequest r;
  try {
    DecodeMessage(request, &r);
  } catch (const WireError& e) {
    *status = Invalid(e.what());
    return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const size_t param = IndexOf(&ParamSpec::param, r.name());
  if (param == params_.size()) {
    *status = grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "unknown table '" + r.name() + "'; this pserver serves the parameters " + NamesOf(&ParamSpec::param));
    return true;
  }
  if (*status = CheckTrainer(r.trainer_id()); !status->ok()) return true;
  const int64_t height = params_[param].dims.empty() ? 0 : params_[param].dims[0];
  for (int64_t row : r.rows()) {
    if (row < 0 || row >= height) {
      *status = Invalid("Prefetch of '" + r.name() + "': row " + std::to_string(row) + " is not one of its " +
                        std::to_string(height) + " rows on this pserver");
      return true;
    }
  }
  Seen(r.trainer_id(), r.iteration());
  if (stopped_) {
    *status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "pserver is stopping");
    return true;
  }
  std::vector<int64_t> rows(r.rows().begin(), r.rows().end());
  if (optimizing_) {  // the rows as they are once the update running is done
    pending_.push_back(PendingCall{
        reactor, response, PendingCall::Kind::kPrefetch, r.trainer_id(), r.iteration(), {}, {param}, std::move(rows)});
    return false;
  }
  *response = RowsOf(param, r.trainer_id(), rows);
  *status = grpc::Status::OK;
  return true;
}

grpc::ByteBuffer ParameterServer::RowsOf(size_t param, int32_t trainer, const std::vector<int64_t>& rows) {
  const TensorBytes& table = published_[param];
  const int64_t height = table.dims.empty() ? 0 : table.dims[0];
  const size_t row_bytes = height > 0 ? table.bytes / static_cast<size_t>(height) : 0;
  v1::VariableMessage message;
  v1::VariableHeader* h = message.mutable_header();
  h->set_name(params_[param].param);
  h->set_trainer_id(trainer);
  h->set_iteration(current_);
  h->mutable_tensor()->set_dtype(table.dtype);
  h->mutable_tensor()->add_dims(static_cast<int64_t>(rows.size()));
  for (size_t d = 1; d < table.dims.size(); ++d) h->mutable_tensor()->add_dims(table.dims[d]);
  h->mutable_selected_rows()->mutable_rows()->Add(rows.begin(), rows.end());
  h->mutable_selected_rows()->set_height(height);
  std::string* data = message.mutable_data();
  data->resize(rows.size() * row_bytes);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(data->data() + i * row_bytes, static_cast<const char*>(table.data) + rows[i] * row_bytes, row_bytes);
  }
  bytes_out_ += data->size();
  return EncodeMessage(message);
}

grpc::Status ParameterServer::OnOpenDataPath(grpc::ByteBuffer* response) {
  if (!data_path_) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this pserver takes the tensor bytes in the messages");
  }
  v1::DataPathOffer offer;
  grpc::Status status = data_path_->Offer(&offer);
  if (status.ok()) *response = EncodeMessage(offer);
  return status;
}

grpc::Status ParameterServer::OnStatus(grpc::ByteBuffer* response) {
  v1::ServerStatus status;
  status.set_endpoint(bound_endpoint_);
  status.set_fanin(fanin_);
  for (const auto& p : params_) status.add_parameters(p.param);
  status.set_data_path(data_path_ ? data_path_->Name() : "messages");
  status.set_mode(mode_.Describe());
  status.set_checkpoint_path(checkpointing_.path);
  status.set_checkpoint_every(checkpointing_.every);
  status.set_restored_iteration(checkpointing_.restored);
  const auto now = std::chrono::steady_clock::now();
  const auto ms = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    status.set_iteration(current_);
    status.set_optimizing(optimizing_);
    status.set_uptime_ms(ms(now - started_));
    status.set_bytes_in(bytes_in_);
    status.set_bytes_out(bytes_out_);
    status.set_barrier_waits(barrier_waits_);
    status.set_barrier_wait_ms(ms(barrier_waited_));
    status.set_last_checkpoint(last_checkpoint_);
    for (size_t i = 0; i < trainers_.size(); ++i) {
      const TrainerState& t = trainers_[i];
      v1::TrainerStatus* out = status.add_trainers();
      out->set_trainer_id(static_cast<int32_t>(i));
      out->set_iteration(std::max<int64_t>(t.last_seen_iteration, 0));
      out->set_last_heard_ms_ago(t.last_seen_iteration < 0 ? -1 : ms(now - t.last_seen));
      out->set_next_step(mode_.sync ? current_ + 1 : t.barrier + 1);
      if (t.completed) {
        out->set_state(v1::TrainerStatus::COMPLETED);
      } else if (t.last_seen_iteration < 0) {
        out->set_state(v1::TrainerStatus::NOT_CONNECTED);
      } else if (mode_.sync ? t.barrier == current_ + 1 : t.barrier > t.answered) {
        // async: its step is queued, or applied with its answer held (staleness)
        out->set_state(v1::TrainerStatus::AT_BARRIER);
        out->set_iteration(t.barrier);
      } else {
        out->set_state(v1::TrainerStatus::TRAINING);
      }
    }
  }
  *response = EncodeMessage(status);
  return grpc::Status::OK;
}

void ParameterServer::Respond(size_t param, int32_t trainer, const v1::GetRequest& request,
                              grpc::ByteBuffer* response) {
  const TensorBytes& value = published_[param];
  bytes_out_ += value.bytes;
  // Small tensors ride in the answer even when asked for by the data path: one hop less.
  if (!request.has_out_of_band() || value.bytes < data_path_->MinBytes()) {
    *response = EncodeVariable(params_[param].param, trainer, current_, value, params_lease_);
    return;
  }
  const v1::OutOfBand& route = request.out_of_band();
  *response = EncodeVariable(params_[param].param, trainer, current_, value, params_lease_, &route);
  params_lease_.Acquire();
  data_path_->Send(
      route.rank(), route.tag(), value.data, value.bytes,
      Track([this, name = params_[param].param, peer = data_path_->PeerName(route.rank())](const std::string& error) {
        if (!error.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          if (transfer_error_.empty()) transfer_error_ = "sending '" + name + "' to " + peer + ": " + error;
          changed_.notify_all();
        }
        params_lease_.Release();
      }));
}

void ParameterServer::FinishPending(const grpc::Status& status) {
  std::vector<PendingCall> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto* calls : {&pending_, &steps_, &held_}) {
      pending.insert(pending.end(), calls->begin(), calls->end());
      calls->clear();
    }
  }
  for (auto& p : pending) p.reactor->Finish(status);
}

void ParameterServer::Fill(PendingCall& call) {
  switch (call.kind) {
    case PendingCall::Kind::kBarrier: *call.response = EncodeMessage(v1::Reply()); return;
    case PendingCall::Kind::kGet: Respond(call.params[0], call.trainer, call.pulls[0], call.response); return;
    case PendingCall::Kind::kPrefetch: *call.response = RowsOf(call.params[0], call.trainer, call.rows); return;
    case PendingCall::Kind::kStep: {
      std::vector<grpc::ByteBuffer> parameters(call.params.size());
      for (size_t i = 0; i < call.params.size(); ++i)
        Respond(call.params[i], call.trainer, call.pulls[i], &parameters[i]);
      *call.response = EncodeStepReply(parameters);
      return;
    }
  }
}

void ParameterServer::AwaitParametersReleased(std::unique_lock<std::mutex>& lock, int64_t k) {
  lock.unlock();
  const bool released = params_lease_.WaitReleased(options_.deadline);
  lock.lock();
  if (!released) {
    throw std::runtime_error("pserver " + bound_endpoint_ + ": iteration " + std::to_string(k) +
                             ": the parameters of iteration " + std::to_string(current_) +
                             " were not all taken by the trainers within " + std::to_string(options_.deadline.count()) +
                             " ms (RILL_RPC_DEADLINE_MS)");
  }
}

bool ParameterServer::MayAnswer(int32_t trainer, int64_t iteration) const {
  if (mode_.max_staleness < 0) return true;
  for (size_t u = 0; u < trainers_.size(); ++u) {
    if (static_cast<int32_t>(u) == trainer || trainers_[u].completed) continue;
    if (trainers_[u].barrier < iteration - mode_.max_staleness) return false;
  }
  return true;
}

bool ParameterServer::AllCompleted() const {
  for (const auto& t : trainers_) {
    if (!t.completed) return false;
  }
  return true;
}

bool ParameterServer::AllArrived() const {
  bool any = false;
  for (const auto& t : trainers_) {
    if (t.completed) continue;
    if (t.barrier != current_ + 1) return false;
    any = true;
  }
  return any;
}

std::string ParameterServer::Missing() const {
  std::ostringstream os;
  bool first = true;
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < trainers_.size(); ++i) {
    const TrainerState& t = trainers_[i];
    if (t.completed || (mode_.sync && t.barrier == current_ + 1)) continue;
    os << (first ? "" : "; ") << "trainer " << i;
    if (t.last_seen_iteration < 0) {
      os << " (never connected)";
    } else {
      os << " (last heard from " << std::chrono::duration_cast<std::chrono::milliseconds>(now - t.last_seen).count()
         << " ms ago, at iteration " << t.last_seen_iteration << ")";
    }
    first = false;
  }
  return os.str();
}

void ParameterServer::Serve(const PserverHooks& hooks) {
  try {
    if (mode_.sync) {
      ServeIterations(hooks);
    } else {
      ServeSteps(hooks);
    }
  } catch (const std::exception& e) {
    // Trainers waiting for parameters learn why instead of waiting for their deadline.
    FinishPending(grpc::Status(grpc::StatusCode::ABORTED, e.what()));
    throw;
  }
}

void ParameterServer::ServeIterations(const PserverHooks& hooks) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const auto give_up = std::chrono::steady_clock::now() + options_.deadline;
    const Tracer& tracer = TheTracer();  // the wait is a span in the profile, if one is taken
    const bool tracing = tracer.active();
    const int64_t waited_from = tracing ? tracer.now() : 0;
    const auto wait_began = std::chrono::steady_clock::now();
    if (!changed_.wait_until(lock, give_up,
                             [&] { return AllArrived() || AllCompleted() || !transfer_error_.empty(); })) {
      throw std::runtime_error("pserver " + bound_endpoint_ + ": iteration " + std::to_string(current_ + 1) +
                               ": no barrier within " + std::to_string(options_.deadline.count()) +
                               " ms (RILL_RPC_DEADLINE_MS) from " + Missing());
    }
    if (!transfer_error_.empty()) throw std::runtime_error("pserver " + bound_endpoint_ + ": " + transfer_error_);
    if (AllCompleted()) break;
    optimizing_ = true;
    const int64_t k = current_ + 1;
    ++barrier_waits_;
    barrier_waited_ += std::chrono::steady_clock::now() - wait_began;
    if (tracing) {
      tracer.record("barrier", "waiting for the trainers' barriers", waited_from, tracer.now(),
                    "iteration " + std::to_string(k));
    }
    std::vector<std::vector<const ReceivedGradient*>> parts(params_.size());
    for (size_t g = 0; g < params_.size(); ++g) {
      for (int32_t t = 0; t < fanin_; ++t) {
        if (!trainers_[t].completed && trainers_[t].barrier == k && slots_[g][t].state == SlotState::FULL) {
          parts[g].push_back(&slots_[g][t].gradient);
        }
      }
    }
    AwaitParametersReleased(lock, k);  // no response still reads the parameters
    lock.unlock();
    for (size_t g = 0; g < params_.size(); ++g) {
      if (parts[g].empty()) {
        throw std::runtime_error("pserver " + bound_endpoint_ + ": iteration " + std::to_string(k) +
                                 ": no trainer sent '" + params_[g].grad + "'");
      }
      WriteAverage(
          params_[g].dtype, params_[g].dims, parts[g], [&] { return hooks.gradient(g); },
          [&](const std::vector<int64_t>& rows) { return hooks.sparse_gradient(g, rows); });
    }
    hooks.optimize();
    std::vector<TensorBytes> now = hooks.parameters();
    lock.lock();
    published_ = std::move(now);
    current_ = k;
    optimizing_ = false;
    for (auto& per_grad : slots_) {
      for (auto& slot : per_grad) {
        slot.state = SlotState::EMPTY;
        slot.gradient.bytes = ReceivedBytes();  // gRPC's receive buffers go back
      }
    }
    std::vector<PendingCall> ready;
    ready.swap(pending_);
    for (auto& p : ready) Fill(p);
    lock.unlock();
    for (auto& p : ready) p.reactor->Finish(grpc::Status::OK);
    lock.lock();
    MaybeCheckpoint(hooks, lock);
  }
}

void ParameterServer::MaybeCheckpoint(const PserverHooks& hooks, std::unique_lock<std::mutex>& lock) {
  if (!hooks.checkpoint || hooks.checkpoint_every <= 0 || current_ % hooks.checkpoint_every != 0 ||
      current_ == last_checkpoint_) {
    return;
  }
  const int64_t k = current_;  // no update runs but on this thread: the parameters stay k's
  lock.unlock();
  hooks.checkpoint(k);
  lock.lock();
  last_checkpoint_ = k;
}

void ParameterServer::ServeSteps(const PserverHooks& hooks) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto answerable = [&] {
    return std::any_of(held_.begin(), held_.end(),
                       [&](const PendingCall& c) { return MayAnswer(c.trainer, c.iteration); });
  };
  while (true) {
    const auto give_up = std::chrono::steady_clock::now() + options_.deadline;
    if (!changed_.wait_until(lock, give_up, [&] {
          return !steps_.empty() || answerable() || AllCompleted() || !transfer_error_.empty();
        })) {
      throw std::runtime_error("pserver " + bound_endpoint_ + ": no step within " +
                               std::to_string(options_.deadline.count()) + " ms (RILL_RPC_DEADLINE_MS) from " +
                               Missing());
    }
    if (!transfer_error_.empty()) throw std::runtime_error("pserver " + bound_endpoint_ + ": " + transfer_error_);
    if (!steps_.empty()) {
      PendingCall step = std::move(steps_.front());
      steps_.erase(steps_.begin());
      const int32_t t = step.trainer;
      optimizing_ = true;
      AwaitParametersReleased(lock, step.iteration);  // no response still reads the parameters
      std::vector<const ReceivedGradient*> part(1);
      lock.unlock();
      for (size_t g = 0; g < params_.size(); ++g) {
        part[0] = &slots_[g][t].gradient;  // FULL since the step was taken; nobody writes it
        WriteAverage(
            params_[g].dtype, params_[g].dims, part, [&] { return hooks.gradient(g); },
            [&](const std::vector<int64_t>& rows) { return hooks.sparse_gradient(g, rows); });
      }
      hooks.optimize();
      std::vector<TensorBytes> now = hooks.parameters();
      lock.lock();
      published_ = std::move(now);
      ++current_;
      optimizing_ = false;
      for (auto& per_grad : slots_) {
        per_grad[t].state = SlotState::EMPTY;
        per_grad[t].gradient.bytes = ReceivedBytes();
      }
      held_.push_back(std::move(step));
    } else if (held_.empty() && AllCompleted()) {
      break;
    }
    // Answer the gets that waited for the update, and every step the staleness bound lets go.
    std::vector<PendingCall> ready;
    ready.swap(pending_);
    for (auto it = held_.begin(); it != held_.end();) {
      if (!MayAnswer(it->trainer, it->iteration)) {
        ++it;
        continue;
      }
      trainers_[it->trainer].answered = it->iteration;
      ready.push_back(std::move(*it));
      it = held_.erase(it);
    }
    for (auto& c : ready) Fill(c);
    lock.unlock();
    for (auto& c : ready) c.reactor->Finish(grpc::Status::OK);
    lock.lock();
    MaybeCheckpoint(hooks, lock);
  }
}

}  // namespace rill::dist
