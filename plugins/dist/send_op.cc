// The trainer's ops: send (push gradients, barrier, pull parameters) and the parameter
// pull they share with recv.
#include <algorithm>
#include <set>

#include "ops.h"
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
      : fetcher_(op), grads_(op.InputNames("X")), epmap_(CheckedEpmap(op, grads_.size(), "X")) {
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
  // One iteration. Gradients whose bytes go by the data path go first, each by its own
  // request (their bytes dominate the call); then one Step call per pserver carries every
  // other gradient in its message, the barrier and the pulls of that pserver's
  // parameters, whose answer is the parameters once the pserver optimized the iteration.
  void Step(KernelContext& ctx) {
    const int64_t k = TrainerSession::Get().Advance();
    SliceLease lease;  // declared first: outlives the calls whose slices it counts
    std::vector<std::vector<grpc::ByteBuffer>> in_step(endpoints_.size());
    SendByDataPath(ctx, k, lease, in_step);
    std::vector<v1::OutOfBand> routes;
    const std::vector<v1::GetRequest> pulls = fetcher_.Pulls(ctx, k, &routes);
    std::vector<RpcCall> calls(endpoints_.size());
    std::vector<std::vector<size_t>> pulled(endpoints_.size());  // per call, the pulls' indices
    for (size_t e = 0; e < endpoints_.size(); ++e) {
      std::vector<v1::GetRequest> mine;
      for (size_t i = 0; i < pulls.size(); ++i) {
        if (fetcher_.endpoint(i) != endpoints_[e]) continue;
        mine.push_back(pulls[i]);
        pulled[e].push_back(i);
      }
      calls[e].endpoint = endpoints_[e];
      calls[e].method = kStep;
      calls[e].subject = "iteration " + std::to_string(k);
      calls[e].request = EncodeStep(fetcher_.trainer_id(), k, in_step[e], mine);
    }
    TrainerSession::Get().Call(calls, fetcher_.options());
    std::vector<ReceivedBytes> answers(pulls.size());
    for (size_t e = 0; e < endpoints_.size(); ++e) {
      std::vector<ReceivedBytes> got;
      try {
        got = ParseStepReply(calls[e].response);
        if (got.size() != pulled[e].size()) {
          throw WireError("answered " + std::to_string(got.size()) + " of the " + std::to_string(pulled[e].size()) +
                          " parameters asked for");
        }
      } catch (const WireError& e_) {
        fetcher_.Discard(routes);
        throw Error(AboutCall(calls[e]) + "bad answer: " + e_.what());
      }
      for (size_t j = 0; j < got.size(); ++j) answers[pulled[e][j]] = std::move(got[j]);
    }
    fetcher_.Accept(ctx, k, answers, routes);
  }

  // The gradients at or above the data path's MinBytes go by it: each as a SendVariable
  // header whose bytes follow by the path, or pushed whole where the path pushes
  // requests; the pserver answers once the bytes are in. Every other gradient's message
  // is added to its pserver's step (in_step, by endpoints_ index).
  void SendByDataPath(KernelContext& ctx, int64_t k, SliceLease& lease,
                      std::vector<std::vector<grpc::ByteBuffer>>& in_step) {
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
        const size_t e = std::lower_bound(endpoints_.begin(), endpoints_.end(), epmap_[i]) - endpoints_.begin();
        in_step[e].push_back(EncodeVariable(grads_[i], fetcher_.trainer_id(), k, bytes, lease));
        continue;
      }
      RpcCall call;
      call.endpoint = epmap_[i];
      call.method = kSendVariable;
      call.subject = "'" + grads_[i] + "'";
      call.request = EncodeVariable(grads_[i], fetcher_.trainer_id(), k, bytes, lease, &route);
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

  ParameterFetcher fetcher_;
  std::vector<std::string> grads_, epmap_, endpoints_;
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

namespace {

// The trainer id asked for, fixed by the transport where it decides (MPI: by rank), and
// the transport's DataPath.
int32_t JoinAsTrainer(const OpInfo& op, const TransportOptions& options, DataPath** data_path) {
  return ReportingFailure([&] {
    int32_t id = ResolveTrainerId(op.Attr<int64_t>("trainer_id"));
    const Transport& transport = ThisTransport();
    *data_path = transport.join_as_trainer ? transport.join_as_trainer(&id, options) : nullptr;
    return TrainerSession::Get().BindTrainerId(std::max(id, 0));
  });
}

}  // namespace

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
           .Output("Out", "the parameters to fetch back, X[i]'s parameter at i",
                   RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Attr("endpoints", std::vector<std::string>{},
                 "every pserver endpoint (HOST:PORT) to barrier; default: those of epmap")
           .RequiredAttr("epmap", RILL_ATTR_STRINGS, "the pserver endpoint of each X (and Out)")
           .Attr("sync_mode", true,
                 "synchronous training; false: asynchronous, each step applied alone as it arrives (the "
                 "trainer's side is the same step: the pserver's listen_and_serv decides)")
           .Attr("trainer_id", int64_t{-1}, "this trainer's index in [0, Fanin); " + t.trainer_id_doc)
           .Attr("deadline_ms", int64_t{0}, "deadline of every RPC in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.StatefulKernel<Send>(t.send.c_str(), RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::dist
