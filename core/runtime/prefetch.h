// core/runtime/prefetch.h — asks the CPU for memory about to be used, ahead of the use.
//
// Contract:
//  - PrefetchLines(from, bytes) asks for every 64-byte line of [from, from + bytes), in
//    order, for writing (a line asked for is one the caller will touch soon; order the
//    calls so that what is read first is asked for first). It changes nothing a program
//    can observe and never faults, whatever the address.
//  - Forced inline, and so must be any function of the caller's that does nothing but
//    call it: GCC 12's mod-ref analysis finds that such a function changes no memory and
//    drops every call to it (objdump showed no prefetch instruction left).
#ifndef RILL_CORE_RUNTIME_PREFETCH_H_
#define RILL_CORE_RUNTIME_PREFETCH_H_

#include <cstddef>

namespace rill::core {

inline constexpr size_t kPrefetchLineBytes = 64;

[[gnu::always_inline]] inline void PrefetchLines(const void* from, size_t bytes) {
  const char* p = static_cast<const char*>(from);
  for (const char* line = p; line < p + bytes; line += kPrefetchLineBytes) {
    __builtin_prefetch(line, /*rw=*/1, /*locality=*/3);
  }
}

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_PREFETCH_H_
