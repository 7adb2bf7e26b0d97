// Fluid's LoDTensor file reader (core/io/lod_tensor_file.h) on any bytes, read as a
// combined file: records until the end, or until one is refused with an Error.
#include <sstream>
#include <string>

#include "core/errors.h"
#include "core/io/lod_tensor_file.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    while (in.peek() != std::char_traits<char>::eof()) {
      rill::core::Tensor t = rill::core::ReadLodTensor(in, "fuzz");
      if (t.nbytes() > 0) static_cast<void>(static_cast<const volatile char*>(t.data())[t.nbytes() - 1]);
    }
  } catch (const rill::core::Error&) {}
  return 0;
}
