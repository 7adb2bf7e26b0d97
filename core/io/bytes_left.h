// core/io/bytes_left.h — how much a stream holds past its position, for readers that
// refuse a length before allocating for it.
#ifndef RILL_CORE_IO_BYTES_LEFT_H_
#define RILL_CORE_IO_BYTES_LEFT_H_

#include <cstdint>
#include <istream>
#include <optional>

namespace rill::core {

// The bytes `in` holds past its position, when it can say (a file, a string); nullopt when
// it cannot (a pipe). The position is left where it was, and the state cleared.
inline std::optional<uint64_t> BytesLeft(std::istream& in) {
  std::optional<uint64_t> left;
  const std::streampos at = in.tellg();
  if (at != std::streampos(-1) && in.seekg(0, std::ios::end)) {
    left = static_cast<uint64_t>(in.tellg() - at);
    in.seekg(at);
  }
  in.clear();
  return left;
}

}  // namespace rill::core

#endif  // RILL_CORE_IO_BYTES_LEFT_H_
