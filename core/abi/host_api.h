// core/abi/host_api.h — the host's RillHostApi table, served to every plugin.
#ifndef RILL_CORE_ABI_HOST_API_H_
#define RILL_CORE_ABI_HOST_API_H_

#include "core/registry/registry.h"
#include "rill/abi.h"

namespace rill::core {

// The table (version RILL_ABI_VERSION). Custom variable types are process-wide
// (registry.h): var_type_find and var_set_custom read the definitions committed to any
// registry.
const RillHostApi* HostApiTable();

}  // namespace rill::core

#endif  // RILL_CORE_ABI_HOST_API_H_
