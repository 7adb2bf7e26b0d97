// A select op's `cases` entry (plugins/csp/select_case.h) on any text.
#include <string>

#include "fuzz_target.h"
#include "rill/sdk.hpp"
#include "select_case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    rill::csp::ParseCase(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const rill::Error&) {}
  return 0;
}
