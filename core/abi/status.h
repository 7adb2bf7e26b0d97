// core/abi/status.h — the host's definition of the ABI's RillStatus and the conversions
// between statuses and core::Error.
#ifndef RILL_CORE_ABI_STATUS_H_
#define RILL_CORE_ABI_STATUS_H_

#include <cstdint>
#include <new>
#include <string>

#include "core/errors.h"

struct RillStatus {
  int32_t code;
  std::string message;
};

namespace rill::core {

// Throws an Error carrying the status (prefixed with `context`) and frees it; no-op for OK.
void ThrowIfError(RillStatus* status, const std::string& context = "");

// Runs `body`; returns nullptr, or a new status describing the exception it threw.
template <class F> RillStatus* StatusFromCall(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return new RillStatus{e.code(), e.what()};
  } catch (const std::bad_alloc& e) {
    return new RillStatus{RILL_RESOURCE_EXHAUSTED, std::string("out of memory (") + e.what() + ")"};
  } catch (const std::exception& e) {
    return new RillStatus{RILL_INTERNAL, e.what()};
  } catch (...) {
    return new RillStatus{RILL_INTERNAL, "unknown exception"};
  }
}

}  // namespace rill::core

#endif  // RILL_CORE_ABI_STATUS_H_
