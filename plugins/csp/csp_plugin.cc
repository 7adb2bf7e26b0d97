// The CSP plugin: Go's channels, select and go blocks as ops (see ARCHITECTURE.md).
#include <cstring>

#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

void DescribeChannel(const void* value, char* buf, size_t cap) {
  const auto* ref = static_cast<const ChannelRef*>(value);
  const std::string s = ref->channel ? ref->channel->Describe() : "nil channel";
  std::strncpy(buf, s.c_str(), cap);
  if (cap > 0) buf[cap - 1] = '\0';
}

void Init(Registrar& r) {
  r.VarType<ChannelRef>(kChannelType, &DescribeChannel, /*copyable=*/true);
  RegisterChannelOps(r);
  RegisterSelect(r);
  RegisterGo(r);
}

}  // namespace
}  // namespace rill::csp

RILL_PLUGIN("csp", "1.0", rill::csp::Init)
