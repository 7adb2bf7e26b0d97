// The .npy reader (core/io/npy.h) on any bytes: refused with an Error, or read.
#include <sstream>
#include <string>

#include "core/errors.h"
#include "core/io/npy.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    rill::core::Tensor t = rill::core::ReadNpy(in, "fuzz.npy");
    if (t.nbytes() > 0) static_cast<void>(static_cast<const volatile char*>(t.data())[t.nbytes() - 1]);
  } catch (const rill::core::Error&) {}
  return 0;
}
