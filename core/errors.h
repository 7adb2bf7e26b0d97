// core/errors.h — the one exception type core throws.
//
// Every failure inside the host is an Error carrying an ABI status code, so it crosses
// into a plugin (or out of the `rill` binary) as a status with the same code and message,
// never as an unknown exception. It is the SDK's rill::Error, so an exception thrown by a
// built-in op and one thrown by the host are the same type.
#ifndef RILL_CORE_ERRORS_H_
#define RILL_CORE_ERRORS_H_

#include "rill/sdk.hpp"

namespace rill::core {
using Error = ::rill::Error;
}  // namespace rill::core

#endif  // RILL_CORE_ERRORS_H_
