// options.h — how the parameter-server ops reach each other: deadlines, identity, credentials.
//
// Each setting comes from the op's attribute and can be overridden per process by the
// environment, so one transpiled program runs unchanged under `rill launch` or by hand:
//   RILL_RPC_DEADLINE_MS  every RPC and every wait (default: the op's deadline_ms, 120000)
//   RILL_TRAINER_ID       this trainer's index in [0, Fanin) (default: the op's trainer_id)
//   RILL_DIST_TOKEN       a shared secret; a pserver with one refuses clients without it.
//                         A pserver listening beyond loopback needs one (anyone who reaches
//                         it could otherwise stop it), unless RILL_DIST_INSECURE=1
//   RILL_TLS_CERT / RILL_TLS_KEY   PEM files: the pserver serves TLS with them
//   RILL_TLS_CA           PEM file: clients use TLS and trust this root
//   RILL_DATA_PATH        dist_grpc: "tcp" (default) moves tensors of 1 MiB and more over a
//                         TCP connection beside the calls; "message" keeps them in the
//                         calls. With TLS they always stay in the (encrypted) calls.
//   RILL_DATA_PORT        dist_grpc pserver: the port its TCP data path listens on (default 0:
//                         one the kernel picks), for hosts whose firewall opens named ports
// A malformed value is an error naming the variable.
#ifndef RILL_DIST_PS_OPTIONS_H_
#define RILL_DIST_PS_OPTIONS_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <memory>
#include <string>

namespace rill::dist {

struct TransportOptions {
  std::chrono::milliseconds deadline{120000};
  std::string deadline_setting = "RILL_RPC_DEADLINE_MS";  // where `deadline` is set, for messages
  std::string token;
  bool insecure = false;  // RILL_DIST_INSECURE=1: a pserver may listen beyond loopback without a token
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  bool tcp_data_path = true;  // RILL_DATA_PATH; whether dist_grpc may use one (never with TLS)
  uint16_t data_port = 0;     // RILL_DATA_PORT
  // Whether a first call to a pserver waits, until the deadline, for one that does not
  // listen yet (trainers start before their pservers); `rill status` asks once.
  bool wait_for_pserver = true;

  // Attribute values (deadline_ms <= 0: the default) with the environment's overrides.
  static TransportOptions Resolve(int64_t deadline_ms_attr);

  std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() const;
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const;
};

// The trainer index asked for: RILL_TRAINER_ID if set, else the attribute; -1 if neither
// (dist_grpc then takes 0, dist_mpi the trainer's place among the job's ranks).
int32_t ResolveTrainerId(int64_t trainer_id_attr);

// The metadata key that carries the shared token.
inline constexpr const char* kTokenMetadataKey = "rill-dist-token";

}  // namespace rill::dist

#endif  // RILL_DIST_PS_OPTIONS_H_
