// plugins/csp/ops.h — registration of the CSP plugin's ops (one file per op family).
#ifndef RILL_PLUGINS_CSP_OPS_H_
#define RILL_PLUGINS_CSP_OPS_H_

#include "rill/sdk.hpp"

namespace rill::csp {

void RegisterChannelOps(Registrar& r);  // channel_create, channel_send, channel_recv, channel_close
void RegisterSelect(Registrar& r);
void RegisterGo(Registrar& r);

}  // namespace rill::csp

#endif  // RILL_PLUGINS_CSP_OPS_H_
