// ops.h — the parameter-server ops, compiled into each transport plugin (dist_grpc,
// dist_mpi), which registers them under its own names with RegisterOps:
//
//   send             trainer: push gradients X to their pservers (epmap), barrier, pull
//                    the parameters Out of the same iteration
//   recv             with Out: trainer, pull the parameters Out (a startup's first pull);
//                    without: the seed's name for listen_and_serv
//   listen_and_serv  pserver: serve until every trainer completed (pserver.h)
//   prefetch         trainer: the rows its batch looks up of a table row-sharded over the
//                    pservers (a distributed lookup table)
//
// A Transport says how the bytes move: in the gRPC messages (no DataPath), or by the
// DataPath a trainer or pserver gets when it joins (dist_grpc: TCP, dist_mpi: MPI).
#ifndef RILL_DIST_PS_OPS_H_
#define RILL_DIST_PS_OPS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client.h"
#include "data_path.h"
#include "rill/sdk.hpp"
#include "wire.h"

namespace rill::dist {

struct Transport {
  std::string name;            // for docs and errors: "gRPC", "MPI"
  std::string doc;             // how the bytes travel, for the ops' docs
  std::string trainer_id_doc;  // what trainer_id -1 means
  std::string send, recv, listen_and_serv, prefetch;
  // Null: the bytes travel in the messages. Otherwise the DataPath of a trainer, given
  // the trainer id asked for (-1: none), which it may fix (*trainer_id) ...
  std::function<DataPath*(int32_t* trainer_id, const TransportOptions& options)> join_as_trainer;
  // ... and of the pserver serving `endpoint`, held while it serves; null: in the messages.
  std::function<std::shared_ptr<DataPath>(const std::string& endpoint, const TransportOptions& options)>
      join_as_pserver;
  // Told when one of these ops fails (the process is about to end with the error).
  std::function<void()> failed;
};

// Registers send, recv, listen_and_serv and prefetch under `transport`'s names.
void RegisterOps(Registrar& r, const Transport& transport);

// The transport this plugin registered.
const Transport& ThisTransport();

// Runs an op's `body`; if it throws, tells the transport first (Transport::failed).
template <class F> decltype(auto) ReportingFailure(F&& body) {
  try {
    return body();
  } catch (...) {
    if (ThisTransport().failed) ThisTransport().failed();
    throw;
  }
}

// Pulls parameters `names[i]` from `epmap[i]` at the session's iteration into the op's
// Out slot.
class ParameterFetcher {
 public:
  explicit ParameterFetcher(const OpInfo& op);
  // Pulls every parameter by its own GetVariable call.
  void Fetch(KernelContext& ctx, int64_t iteration);
  // The pulls' requests, for a caller that sends them its own way (a step); routes[i]:
  // where pull i's bytes come by the data path (tag 0: in the answer).
  std::vector<v1::GetRequest> Pulls(KernelContext& ctx, int64_t iteration, std::vector<v1::OutOfBand>* routes);
  // Takes answers[i], pull i's VariableMessage, into Out[i], and the bytes that come by
  // the data path; throws naming the pserver and the parameter of a bad answer.
  void Accept(KernelContext& ctx, int64_t iteration, std::vector<ReceivedBytes>& answers,
              const std::vector<v1::OutOfBand>& routes);
  // Drops the bytes on their way by the data path for pulls from..end, not to be taken.
  void Discard(const std::vector<v1::OutOfBand>& routes, size_t from = 0);
  const std::string& endpoint(size_t i) const { return epmap_[i]; }
  const TransportOptions& options() const { return options_; }
  int32_t trainer_id() const { return trainer_id_; }
  DataPath* data_path() const { return data_path_; }

 private:
  TransportOptions options_;
  DataPath* data_path_ = nullptr;
  int32_t trainer_id_;
  std::vector<std::string> names_, epmap_;
};

// Waits for `batch` within the options' deadline; throws naming `what` if it fails.
void AwaitTransfers(TransferBatch& batch, const TransportOptions& options, const std::string& what);

// Throws, beginning with `who`, unless `endpoint` is HOST:PORT with a port in 1..65535.
void CheckEndpoint(const std::string& who, const std::string& endpoint);

// The bytes of a CPU tensor, or of SelectedRows (their value, with rows and height), to
// send; errors name `name`.
TensorBytes BytesOf(Tensor t, const std::string& name);
TensorBytes BytesOf(Variable v, const std::string& name);

void ListenAndServ(KernelContext& ctx);

// The trainer id of a trainer op (its trainer_id attribute, resolved, fixed by the
// transport where it decides: MPI, by rank), bound to the session; *data_path, when
// asked for: the transport's DataPath (null: in the messages).
int32_t JoinAsTrainer(const OpInfo& op, const TransportOptions& options, DataPath** data_path = nullptr);

void RegisterSend(Registrar& r);
void RegisterListenAndServ(Registrar& r);
void RegisterRecv(Registrar& r);
void RegisterPrefetch(Registrar& r);

}  // namespace rill::dist

#endif  // RILL_DIST_PS_OPS_H_
