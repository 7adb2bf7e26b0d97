// ops.h — the dist_grpc plugin's ops, registered by dist_grpc_plugin.cc.
//
//   send             trainer: push gradients X to their pservers (epmap), barrier, pull
//                    the parameters Out of the same iteration
//   recv             with Out: trainer, pull the parameters Out (a startup's first pull);
//                    without: the seed's name for listen_and_serv
//   listen_and_serv  pserver: serve until every trainer completed (pserver.h)
#ifndef RILL_DIST_GRPC_OPS_H_
#define RILL_DIST_GRPC_OPS_H_

#include <string>
#include <vector>

#include "client.h"
#include "rill/sdk.hpp"
#include "wire.h"

namespace rill::dist {

// Pulls parameters `names[i]` from `epmap[i]` at the session's iteration into the op's
// Out slot.
class ParameterFetcher {
 public:
  explicit ParameterFetcher(const OpInfo& op);
  void Fetch(KernelContext& ctx, int64_t iteration);
  const TransportOptions& options() const { return options_; }
  int32_t trainer_id() const { return trainer_id_; }

 private:
  TransportOptions options_;
  int32_t trainer_id_;
  std::vector<std::string> names_, epmap_;
};

// Throws unless `endpoint` is HOST:PORT.
void CheckEndpoint(const std::string& op_type, const std::string& endpoint);

// The bytes of a CPU tensor, or of SelectedRows (their value, with rows and height), to
// send; errors name `name`.
TensorBytes BytesOf(Tensor t, const std::string& name);
TensorBytes BytesOf(Variable v, const std::string& name);

void ListenAndServ(KernelContext& ctx);

void RegisterSend(Registrar& r);
void RegisterListenAndServ(Registrar& r);
void RegisterRecv(Registrar& r);

}  // namespace rill::dist

#endif  // RILL_DIST_GRPC_OPS_H_
