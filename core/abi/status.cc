#include "core/abi/status.h"

namespace rill::core {

void ThrowIfError(RillStatus* status, const std::string& context) {
  if (status == nullptr) return;
  const std::string message = context + status->message;
  const auto code = static_cast<RillStatusCode>(status->code);
  delete status;
  throw Error(message, code);
}

}  // namespace rill::core
