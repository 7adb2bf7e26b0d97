// The trainer's ops: send (push gradients, barrier, pull parameters) and the parameter
// pull they share with recv.
#include <algorithm>
#include <cstring>
#include <future>
#include <set>

#include "ops.h"
#include "table_shard.h"
#include "wire.h"

namespace rill::dist {
namespace {

std::vector<std::string> CheckedEpmap(const OpInfo& op, size_t count, const char* slot) {
  auto epmap = op.Attr<std::vector<std::string>>("epmap");
  if (epmap.size() != count) {
    throw Error(op.type() + ": epmap has " + std::to_string(epmap.size()) + " endpoints for " + std::to_string(count) +
                " variables in " + slot + "; give one endpoint per variable");
  }
  for (const auto& e : epmap) CheckEndpoint(op.type(), e);
  return epmap;
}

class Send {
 public:
  explicit Send(const OpInfo& op)
      : fetcher_(op),
        grads_(op.InputNames("X")),
        epmap_(CheckedEpmap(op, grads_.size(), "X")),
        sharded_(op.InputNames("ShardedX")),
        shards_(op.Attr<std::vector<std::string>>("endpoints")),
        rejoin_(op.Attr<bool>("rejoin")) {
    if (!sharded_.empty() && shards_.empty()) {
      throw Error(op.type() + ": ShardedX needs endpoints, the pservers its tables are sharded over, in shard order");
    }
    if (op.OutputCount("Out") != 0 && op.OutputCount("Out") != grads_.size()) {
      throw Error(op.type() + ": Out pairs with X (the parameter of each gradient); got " +
                  std::to_string(op.OutputCount("Out")) + " for " + std::to_string(grads_.size()));
    }
    auto endpoints = op.Attr<std::vector<std::string>>("endpoints");
    std::set<std::string> all(endpoints.begin(), endpoints.end());
    for (const auto& e : epmap_) {
      if (!endpoints.empty() && all.count(e) == 0) {
        throw Error(op.type() + ": epmap endpoint '" + e + "' is not in endpoints");
      }
      all.insert(e);
    }
    endpoints_.assign(all.begin(), all.end());
    lag_.assign(endpoints_.size(), 0);
    TrainerSession::Get().AddSender();
  }
  ~Send() {
    try {
      TrainerSession::Get().RemoveSender(fetcher_.options());
    } catch (const std::exception& e) {
      Log(RILL_LOG_WARN, "telling the pservers this trainer completed: " + std::string(e.what()));
    }
  }

  void Compute(KernelContext& ctx) {
    ReportingFailure([&] { Step(ctx); });
  }

 private:
  // A gradient that goes in a step: its name and bytes (encoded for each try, with the
  // iteration the pserver takes it as).
  struct Gradient {
    std::string name;
    TensorBytes bytes;
  };

  // One iteration. Gradients whose bytes go by the data path go first, each by its own
  // request (their bytes dominate the call); then one Step call per pserver carries every
  // other gradient in its message, the barrier and the pulls of that pserver's
  // parameters, whose answer is the parameters once the pserver optimized the iteration.
  // A pserver that died and was started again from its checkpoint is rejoined (Rejoin).
  void Step(KernelContext& ctx) {
    const int64_t k = TrainerSession::Get().Advance();
    SliceLease lease;  // declared first: outlives the calls whose slices it counts
    std::vector<std::vector<Gradient>> in_step(endpoints_.size());
    std::vector<bool> beside(endpoints_.size(), false);  // a gradient went to it by the data path
    SendByDataPath(ctx, k, lease, in_step, beside);
    std::vector<std::vector<char>> parts;  // the sharded gradients' parts, sent in the steps
    for (size_t j = 0; j < sharded_.size(); ++j) SplitSharded(ctx, j, in_step, parts);
    std::vector<v1::OutOfBand> routes;
    std::vector<v1::GetRequest> pulls = fetcher_.Pulls(ctx, k, &routes);
    std::vector<std::vector<size_t>> pulled(endpoints_.size());  // per pserver, its pulls' indices
    for (size_t i = 0; i < pulls.size(); ++i) pulled[EndpointIndex(fetcher_.endpoint(i))].push_back(i);
    // Each pserver's step on its own: one that must be rejoined is sent again while the
    // others' steps are still answered (a trainer waiting for all of them first could wait
    // on another trainer that waits on it). The first on this thread, the others beside it.
    const auto step_with = [&](size_t e) {
      std::vector<v1::GetRequest> mine;
      for (size_t i : pulled[e]) mine.push_back(pulls[i]);
      return StepWith(e, k, in_step[e], mine, beside[e], lease);
    };
    std::vector<std::future<grpc::ByteBuffer>> others;
    for (size_t e = 1; e < endpoints_.size(); ++e) others.push_back(std::async(std::launch::async, step_with, e));
    std::vector<grpc::ByteBuffer> replies;
    replies.push_back(step_with(0));
    for (auto& f : others) replies.push_back(f.get());
    std::vector<ReceivedBytes> answers(pulls.size());
    for (size_t e = 0; e < endpoints_.size(); ++e) {
      std::vector<ReceivedBytes> got;
      try {
        got = ParseStepReply(replies[e]);
        if (got.size() != pulled[e].size()) {
          throw WireError("answered " + std::to_string(got.size()) + " of the " + std::to_string(pulled[e].size()) +
                          " parameters asked for");
        }
      } catch (const WireError& error) {
        fetcher_.Discard(routes);
        throw Error("pserver " + endpoints_[e] + ": Step iteration " + std::to_string(k - lag_[e]) +
                    ": bad answer: " + error.what());
      }
      for (size_t j = 0; j < got.size(); ++j) answers[pulled[e][j]] = std::move(got[j]);
    }
    fetcher_.Accept(ctx, k, answers, routes);
  }

  // Pserver e's step (its gradients and pulls, as iteration k - lag_[e]), sent again after
  // each rejoin; returns the answer.
  grpc::ByteBuffer StepWith(size_t e, int64_t k, const std::vector<Gradient>& gradients,
                            std::vector<v1::GetRequest> pulls, bool beside, SliceLease& lease) {
    for (int rejoins = 0;; ++rejoins) {
      const int64_t at = k - lag_[e];  // this step's iteration on that pserver
      std::vector<grpc::ByteBuffer> messages;
      for (const Gradient& g : gradients) {
        messages.push_back(EncodeVariable(g.name, fetcher_.trainer_id(), at, g.bytes, lease));
      }
      for (auto& p : pulls) p.set_iteration(at);
      std::vector<RpcCall> call(1);
      call[0].endpoint = endpoints_[e];
      call[0].method = kStep;
      call[0].subject = "iteration " + std::to_string(at);
      call[0].request = EncodeStep(fetcher_.trainer_id(), at, messages, pulls);
      if (rejoin_) {
        call[0].tolerated = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED,
                             grpc::StatusCode::FAILED_PRECONDITION};
      }
      TrainerSession::Get().Call(call, fetcher_.options());
      if (call[0].status.ok()) return std::move(call[0].response);
      Rejoin(e, k, call[0], beside, rejoins);
    }
  }

  // After pserver `e` failed this step's call (`failed`): waits (within the deadline,
  // through gRPC's reconnection) for it to answer a Status call. A pserver that was started again from its
  // checkpoint takes from this trainer an iteration before this step's: the step goes to it
  // as that iteration, and so do the later ones (lag_); the updates it lost, between its
  // checkpoint and its death, are not applied again. Returns to have the step sent again;
  // throws the call's error where that cannot be: the pserver did not come back, did not
  // restart, or this step sent it gradients by the data path (whose bytes the restarted
  // pserver never got).
  void Rejoin(size_t e, int64_t k, const RpcCall& failed, bool beside, int rejoins) {
    const std::string error = AboutCall(failed) + failed.status.error_message();
    if (beside) {
      throw Error(error +
                  " (a pserver started again is rejoined only by steps whose gradients all travel in the "
                  "step, under the data path's size)");
    }
    if (rejoins >= kRejoins) throw Error(error + " (after rejoining it " + std::to_string(rejoins) + " times)");
    const TransportOptions& options = fetcher_.options();
    // Asked while the pserver is down, the call waits for it to come back, as a first call
    // waits for a pserver to come up (gRPC's reconnection, with its backoff).
    std::vector<RpcCall> ask(1);
    ask[0].endpoint = endpoints_[e];
    ask[0].method = kStatus;
    ask[0].request = EncodeMessage(v1::StatusRequest());
    ask[0].wait_for_ready = true;
    ask[0].tolerated = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::DEADLINE_EXCEEDED,
                        grpc::StatusCode::CANCELLED};
    TrainerSession::Get().Call(ask, options);
    if (!ask[0].status.ok()) {
      throw Error(error + "; it did not answer again within " + std::to_string(options.deadline.count()) + " ms (" +
                  options.deadline_setting + "): " + ask[0].status.error_message());
    }
    v1::ServerStatus status;
    DecodeMessage(ask[0].response, &status);
    const int32_t trainer = fetcher_.trainer_id();
    if (trainer >= status.trainers_size()) throw Error(error);
    const int64_t next = status.trainers(trainer).next_step(), at = k - lag_[e];
    if (next == at && failed.status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) return;  // back as it was
    if (next >= at || status.restored_iteration() < 0) throw Error(error);
    lag_[e] += at - next;
    if (status.mode() != "sync") {  // its update count restored; each trainer's steps count from 1 again
      Log(RILL_LOG_WARN, "pserver " + endpoints_[e] + " was started again from its checkpoint after " +
                             std::to_string(status.restored_iteration()) + " updates (asynchronous): this step, " +
                             "trainer " + std::to_string(trainer) + "'s iteration " + std::to_string(k) +
                             ", goes to it as its step " + std::to_string(next) +
                             "; the updates it applied after that checkpoint were lost");
      return;
    }
    Log(RILL_LOG_WARN, "pserver " + endpoints_[e] + " was started again from its checkpoint of iteration " +
                           std::to_string(status.restored_iteration()) + ": this step, trainer " +
                           std::to_string(trainer) + "'s iteration " + std::to_string(k) + ", goes to it as " +
                           std::to_string(next) + "; its updates of iterations " + std::to_string(next) + ".." +
                           std::to_string(at - 1) + " were lost");
  }

  // ShardedX[j], the SelectedRows gradient of a table row-sharded over shards_
  // (table_shard.h), split into one part per shard (the rows it holds, as its row numbers,
  // with their values; none, for a shard the batch did not touch), each into that
  // pserver's step. The parts' values are copied into `parts` (a part's buffer stays where
  // it is as `parts` grows: moving a vector keeps its buffer).
  void SplitSharded(KernelContext& ctx, size_t j, std::vector<std::vector<Gradient>>& in_step,
                    std::vector<std::vector<char>>& parts) {
    const std::string& name = sharded_[j];
    Variable v = ctx.InputVar("ShardedX", j);
    if (!v.IsSelectedRows()) {
      throw Error("'" + name + "' is the gradient of a table sharded over the pservers and must be SelectedRows " +
                  "(lookup_table's is_sparse), not " + (v.IsTensor() ? "a dense tensor" : "empty"));
    }
    const TensorBytes whole = BytesOf(v, name);
    const size_t count = whole.rows.size(), shards = shards_.size();
    const size_t row_bytes = count > 0 ? whole.bytes / count : 0;
    std::vector<std::vector<size_t>> of(shards);  // per shard, the indices of its rows
    for (size_t i = 0; i < count; ++i) {
      const int64_t r = whole.rows[i];
      if (r < 0 || r >= whole.height) {
        throw Error("'" + name + "' has row " + std::to_string(r) + ", outside its height " +
                    std::to_string(whole.height));
      }
      of[ShardOf(r, shards)].push_back(i);
    }
    for (size_t p = 0; p < shards; ++p) {
      std::vector<char>& bytes = parts.emplace_back(of[p].size() * row_bytes);
      TensorBytes part = whole;
      part.dims[0] = static_cast<int64_t>(of[p].size());
      part.lod.clear();
      part.rows.clear();
      for (size_t n = 0; n < of[p].size(); ++n) {
        const size_t i = of[p][n];
        part.rows.push_back(RowInShard(whole.rows[i], shards));
        std::memcpy(bytes.data() + n * row_bytes, static_cast<const char*>(whole.data) + i * row_bytes, row_bytes);
      }
      part.data = bytes.data();
      part.bytes = bytes.size();
      part.height = ShardHeight(whole.height, p, shards);
      in_step[EndpointIndex(shards_[p])].push_back(Gradient{name, std::move(part)});
    }
  }

  size_t EndpointIndex(const std::string& endpoint) const {
    return std::lower_bound(endpoints_.begin(), endpoints_.end(), endpoint) - endpoints_.begin();
  }

  // The gradients at or above the data path's MinBytes go by it: each as a SendVariable
  // header whose bytes follow by the path, or pushed whole where the path pushes
  // requests; the pserver answers once the bytes are in (beside[e]: pserver e got one).
  // Every other gradient goes in its pserver's step (in_step, by endpoints_ index).
  void SendByDataPath(KernelContext& ctx, int64_t k, SliceLease& lease, std::vector<std::vector<Gradient>>& in_step,
                      std::vector<bool>& beside) {
    TransferBatch transfers;
    DataPath* data_path = fetcher_.data_path();
    const bool pushed = data_path && data_path->Pushes();
    std::vector<RpcCall> calls;
    for (size_t i = 0; i < grads_.size(); ++i) {
      const TensorBytes bytes = BytesOf(ctx.InputVar("X", i), grads_[i]);
      v1::OutOfBand route;
      if (!data_path || bytes.bytes < data_path->MinBytes() || !data_path->RouteTo(epmap_[i], &route)) {
        if (pushed && data_path && bytes.bytes >= data_path->MinBytes()) {
          throw Error("pserver " + epmap_[i] + ": SendVariable '" + grads_[i] +
                      "': the data path pushes requests but has no route to the pserver");
        }
        in_step[EndpointIndex(epmap_[i])].push_back(Gradient{grads_[i], bytes});
        continue;
      }
      beside[EndpointIndex(epmap_[i])] = true;
      RpcCall call;
      call.endpoint = epmap_[i];
      call.method = kSendVariable;
      call.subject = "'" + grads_[i] + "'";
      call.request =
          EncodeVariable(grads_[i], fetcher_.trainer_id(), k - lag_[EndpointIndex(epmap_[i])], bytes, lease, &route);
      if (!pushed) {
        data_path->Send(route.peer_rank(), route.tag(), bytes.data, bytes.bytes, transfers.Done());
        calls.push_back(std::move(call));
        continue;
      }
      const std::string what = AboutCall(call);
      data_path->Push(
          route, Flatten(call.request), bytes.data, bytes.bytes,
          [done = transfers.Done(), what](const std::string& error) { done(error.empty() ? error : what + error); });
    }
    if (!calls.empty()) TrainerSession::Get().Call(calls, fetcher_.options());
    if (data_path)
      AwaitTransfers(transfers, fetcher_.options(), "sending the gradients of iteration " + std::to_string(k));
  }

  static constexpr int kRejoins = 3;  // times one step rejoins a pserver before giving up
  ParameterFetcher fetcher_;
  std::vector<std::string> grads_, epmap_, endpoints_;
  std::vector<std::string> sharded_, shards_;  // ShardedX; the pservers its tables are sharded over, in order
  // Per pserver (endpoints_ order): how many iterations it lost to a restart, so this
  // trainer's iteration k is its iteration k - lag.
  std::vector<int64_t> lag_;
  const bool rejoin_;  // the pservers checkpoint: wait for one that is gone to come back
};

}  // namespace

void CheckEndpoint(const std::string& who, const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0) throw Error(who + ": endpoint '" + endpoint + "' is not HOST:PORT");
  const std::string port = endpoint.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    throw Error(who + ": endpoint '" + endpoint + "': port '" + port + "' is not in 1..65535");
  }
}

void AwaitTransfers(TransferBatch& batch, const TransportOptions& options, const std::string& what) {
  std::string error;
  if (!batch.Wait(options.deadline, &error)) {
    throw Error(what + ": not done within " + std::to_string(options.deadline.count()) + " ms (RILL_RPC_DEADLINE_MS)" +
                (error.empty() ? "" : "; " + error));
  }
  if (!error.empty()) throw Error(what + ": " + error);
}

TensorBytes BytesOf(Tensor t, const std::string& name) {
  if (!t.initialized()) throw Error("'" + name + "' holds no tensor to send");
  if (t.device_type() != RILL_CPU) throw Error("'" + name + "' is not on the CPU");
  TensorBytes b;
  b.dtype = t.dtype();
  b.dims = t.dims();
  b.lod = t.lod();
  b.data = t.raw_data();
  b.bytes = static_cast<size_t>(t.numel()) * DataTypeSize(t.dtype());
  return b;
}

// A dense tensor, or SelectedRows (its value, with rows and height).
TensorBytes BytesOf(Variable v, const std::string& name) {
  if (!v.IsSelectedRows()) return BytesOf(v.tensor(), name);
  const Variable::SelectedRows sr = v.selected_rows();
  TensorBytes b = BytesOf(sr.value, name);
  b.rows.assign(sr.rows, sr.rows + sr.count);
  b.height = sr.height;
  return b;
}

int32_t JoinAsTrainer(const OpInfo& op, const TransportOptions& options, DataPath** data_path) {
  return ReportingFailure([&] {
    int32_t id = ResolveTrainerId(op.Attr<int64_t>("trainer_id"));
    const Transport& transport = ThisTransport();
    DataPath* path = transport.join_as_trainer ? transport.join_as_trainer(&id, options) : nullptr;
    if (data_path != nullptr) *data_path = path;
    return TrainerSession::Get().BindTrainerId(std::max(id, 0));
  });
}

ParameterFetcher::ParameterFetcher(const OpInfo& op)
    : options_(TransportOptions::Resolve(op.Attr<int64_t>("deadline_ms"))),
      trainer_id_(JoinAsTrainer(op, options_, &data_path_)),
      names_(op.OutputNames("Out")) {
  if (!names_.empty()) epmap_ = CheckedEpmap(op, names_.size(), "Out");
}

namespace {

bool KnownLarge(Tensor t, size_t min_bytes) {
  return t.initialized() && static_cast<size_t>(t.numel()) * DataTypeSize(t.dtype()) >= min_bytes;
}

}  // namespace

std::vector<v1::GetRequest> ParameterFetcher::Pulls(KernelContext& ctx, int64_t iteration,
                                                    std::vector<v1::OutOfBand>* routes) {
  std::vector<v1::GetRequest> pulls(names_.size());
  routes->assign(names_.size(), v1::OutOfBand());
  for (size_t i = 0; i < names_.size(); ++i) {
    v1::GetRequest& get = pulls[i];
    get.set_name(names_[i]);
    get.set_trainer_id(trainer_id_);
    get.set_iteration(iteration);
    // The pserver answers small tensors in the message anyway: a route is worth opening a
    // data path for only when the parameter is known to be large (it was pulled before).
    if (data_path_ && (data_path_->Reaches(epmap_[i]) || KnownLarge(ctx.Output("Out", i), data_path_->MinBytes())) &&
        data_path_->RouteTo(epmap_[i], &(*routes)[i])) {
      *get.mutable_out_of_band() = (*routes)[i];
    }
  }
  return pulls;
}

void ParameterFetcher::Discard(const std::vector<v1::OutOfBand>& routes, size_t from) {
  for (size_t j = from; j < routes.size(); ++j) {
    if (routes[j].tag() != 0) data_path_->Discard(routes[j].peer_rank(), routes[j].tag());
  }
}

void ParameterFetcher::Accept(KernelContext& ctx, int64_t iteration, std::vector<ReceivedBytes>& answers,
                              const std::vector<v1::OutOfBand>& routes) {
  TransferBatch transfers;
  for (size_t i = 0; i < names_.size(); ++i) {
    Tensor out = ctx.Output("Out", i);
    void* into = nullptr;
    try {
      const v1::VariableHeader h = DecodeVariable(std::move(answers[i]), [&](const v1::VariableHeader& h) {
        if (h.name() != names_[i]) throw WireError("asked for '" + names_[i] + "', got '" + h.name() + "'");
        if (h.has_out_of_band() && !data_path_) throw WireError("its bytes went by a data path this trainer has not");
        into =
            out.Allocate(h.tensor().dtype(), std::vector<int64_t>(h.tensor().dims().begin(), h.tensor().dims().end()));
        return into;
      });
      if (h.has_out_of_band()) {
        data_path_->Receive(routes[i].peer_rank(), routes[i].tag(), into, TensorByteSize(h), transfers.Done());
      }
      std::vector<std::vector<uint64_t>> lod;
      for (const auto& level : h.tensor().lod()) lod.emplace_back(level.offsets().begin(), level.offsets().end());
      if (!lod.empty()) out.set_lod(lod);
    } catch (const WireError& e) {
      // Bytes on their way for this pull and the ones after it are not taken: drop them.
      Discard(routes, i);
      throw Error("pserver " + epmap_[i] + " sent a bad '" + names_[i] + "': " + e.what());
    }
  }
  if (data_path_)
    AwaitTransfers(transfers, options_, "pulling the parameters of iteration " + std::to_string(iteration));
}

void ParameterFetcher::Fetch(KernelContext& ctx, int64_t iteration) {
  std::vector<v1::OutOfBand> routes;
  const std::vector<v1::GetRequest> pulls = Pulls(ctx, iteration, &routes);
  std::vector<RpcCall> calls(names_.size());
  for (size_t i = 0; i < names_.size(); ++i) {
    calls[i].endpoint = epmap_[i];
    calls[i].method = kGetVariable;
    calls[i].subject = "'" + names_[i] + "'";
    calls[i].request = EncodeMessage(pulls[i]);
  }
  TrainerSession::Get().Call(calls, options_);
  std::vector<ReceivedBytes> answers;
  for (auto& call : calls) answers.emplace_back(call.response);
  Accept(ctx, iteration, answers, routes);
}

void RegisterSend(Registrar& r) {
  const Transport& t = ThisTransport();
  r.Op(OpSchema(t.send)
           .Doc("Trainer side of sync parameter-server training (" + t.name +
                "): sends each gradient X[i] to the "
                "pserver epmap[i], then a barrier to every pserver, then fetches each parameter Out[i] of "
                "the same iteration from epmap[i] once the pservers ran their optimize blocks, all in one "
                "round trip per pserver (its Step call). When the "
                "trainer's run ends, every pserver it used is told the trainer completed. Every RPC and "
                "transfer has a deadline (deadline_ms, or RILL_RPC_DEADLINE_MS); a pserver that is gone or "
                "silent is an error naming its endpoint. " +
                t.doc)
           .Input("X", "the gradients to send: dense, or SelectedRows (sparse)", RILL_SLOT_DUPLICABLE)
           .Input("ShardedX",
                  "gradients (SelectedRows) of tables row-sharded over endpoints (row r on endpoints[r % P] as "
                  "its row r / P; see prefetch): each pserver gets the rows it holds, in its step",
                  RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Output("Out", "the parameters to fetch back, X[i]'s parameter at i",
                   RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Attr("endpoints", std::vector<std::string>{},
                 "every pserver endpoint (HOST:PORT) to barrier, in shard order (ShardedX); default: those of "
                 "epmap")
           .RequiredAttr("epmap", RILL_ATTR_STRINGS, "the pserver endpoint of each X (and Out)")
           .Attr("sync_mode", true,
                 "synchronous training; false: asynchronous, each step applied alone as it arrives (the "
                 "trainer's side is the same step: the pserver's listen_and_serv decides)")
           .Attr("trainer_id", int64_t{-1}, "this trainer's index in [0, Fanin); " + t.trainer_id_doc)
           .Attr("rejoin", false,
                 "the pservers checkpoint and are started again when they die: a pserver that fails a step is "
                 "waited for (within the deadline) and rejoined from the iteration it restored; false: the "
                 "failure is the op's error at once")
           .Attr("deadline_ms", int64_t{0}, "deadline of every RPC in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.StatefulKernel<Send>(t.send.c_str(), RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::dist
