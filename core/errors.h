// core/errors.h — the one exception type core throws.
//
// Every failure inside the host is an Error carrying an ABI status code, so it crosses
// into a plugin (or out of the `rill` binary) as a status with the same code and message,
// never as an unknown exception. It is the host's own type: plugins (the built-in one
// too) throw the SDK's rill::Error, which their layer turns into a status at the ABI
// boundary, so nothing thrown in a plugin reaches the host as an exception and core
// never depends on the plugin layer (rill/sdk.hpp).
#ifndef RILL_CORE_ERRORS_H_
#define RILL_CORE_ERRORS_H_

#include <stdexcept>
#include <string>

#include "rill/abi.h"

namespace rill::core {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, RillStatusCode code = RILL_INVALID_ARGUMENT)
      : std::runtime_error(message), code_(code) {}
  RillStatusCode code() const { return code_; }

 private:
  RillStatusCode code_;
};

}  // namespace rill::core

#endif  // RILL_CORE_ERRORS_H_
