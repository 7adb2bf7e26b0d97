// The CSP plugin: Go's channels, select and go blocks as ops (see ARCHITECTURE.md).
#include <cstring>

#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

void DescribeChannel(const void* value, char* buf, size_t cap) {
  const std::string s = static_cast<Channel*>(const_cast<void*>(value))->Describe();
  std::strncpy(buf, s.c_str(), cap);
  if (cap > 0) buf[cap - 1] = '\0';
}

void Init(Registrar& r) {
  RillVarTypeDef channel{};
  channel.name = kChannelType;
  channel.destroy = &DropChannelHolder;
  channel.describe = &DescribeChannel;
  channel.copy = &AddChannelHolder;
  r.VarType(channel);
  RegisterChannelOps(r);
  RegisterSelect(r);
  RegisterGo(r);
}

}  // namespace
}  // namespace rill::csp

RILL_PLUGIN("csp", RILL_PROJECT_VERSION, rill::csp::Init)
