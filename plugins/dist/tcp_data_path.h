// tcp_data_path.h — dist_grpc's DataPath: tensor bytes over one TCP connection per trainer
// and pserver, beside the gRPC calls that carry their headers (data_path.h says how the
// protocol uses it; tcp_connection.h how a connection moves them).
//
// Contract:
//  - A pserver's path listens on its endpoint's host, at RILL_DATA_PORT or a port the kernel
//    picks. A
//    trainer opens it by an OpenDataPath call, so the pserver's token check and the call's
//    deadline apply: the answer holds the port, a connection number and a one-time 16-byte
//    secret. The trainer connects to the host it reached the pserver at and presents
//    number and secret; a connection that presents anything else is closed unread.
//  - Routes name the pserver's path (`job`, random per path), the connection's number
//    there (`rank`) and a tag unique in the trainer's process.
//  - Only without TLS: with TLS settings (or RILL_DATA_PATH=message) there is no path and
//    the bytes stay in the gRPC messages, encrypted. A trainer also keeps them in the
//    messages for a pserver that answers OpenDataPath UNIMPLEMENTED (it has no path).
//  - A connection that breaks fails its transfers, naming the pserver; the trainer's next
//    route to that pserver opens a new one. A pserver's path closes its port and every
//    connection when it is destroyed.
#ifndef RILL_DIST_PS_TCP_DATA_PATH_H_
#define RILL_DIST_PS_TCP_DATA_PATH_H_

#include <memory>
#include <string>

#include "data_path.h"
#include "options.h"

namespace rill::dist {

// The trainer's path (one per process; the first caller's options set its deadline), or
// null when `options` keep the bytes in the messages.
DataPath* TcpTrainerDataPath(const TransportOptions& options);

// A path for the pserver of `endpoint` (HOST:PORT), or null when `options` keep the bytes
// in the messages; throws if it cannot listen on HOST.
std::shared_ptr<DataPath> ListenTcpDataPath(const std::string& endpoint, const TransportOptions& options);

}  // namespace rill::dist

#endif  // RILL_DIST_PS_TCP_DATA_PATH_H_
