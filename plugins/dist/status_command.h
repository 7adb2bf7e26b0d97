// status_command.h — `rill status HOST:PORT...|DIR [--json]`, the pservers' own report
// (the Status call of parameter_server.proto): each trainer's state, the iteration,
// barrier waits, tensor bytes in and out, uptime. A pserver that does not answer within
// the deadline, refuses the token, or predates the call, is an error naming it; the
// others are still reported.
#ifndef RILL_DIST_PS_STATUS_COMMAND_H_
#define RILL_DIST_PS_STATUS_COMMAND_H_

#include "rill/sdk.hpp"

namespace rill::dist {

// Registers the command (on a host of ABI version 2 or later; see Registrar::Command).
// One transport registers it: its calls reach the pservers of every transport.
void RegisterStatusCommand(Registrar& r);

}  // namespace rill::dist

#endif  // RILL_DIST_PS_STATUS_COMMAND_H_
