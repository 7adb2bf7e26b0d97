// tests/cuda_available.h — whether the CUDA tests can run here: a test that needs a CUDA
// device starts with SKIP_WITHOUT_CUDA(), which skips it, saying why, without one.
#ifndef RILL_TESTS_CUDA_AVAILABLE_H_
#define RILL_TESTS_CUDA_AVAILABLE_H_

#include <gtest/gtest.h>

#include <string>

#include "core/runtime/device.h"
#include "test_util.h"

namespace rill::test {

// Why CUDA tests cannot run here, or "" if they can.
inline std::string CudaUnavailable() {
  ShippedRegistry();  // loads the plugins, and with them the CUDA device if built
  const core::Device* cuda = core::FindDevice(RILL_CUDA);
  if (cuda == nullptr) return "this build has no CUDA plugin (RILL_WITH_CUDA=OFF or no CUDA toolkit at configure time)";
  if (cuda->device_count() == 0) return "no CUDA device: the CUDA runtime reports 0 devices (no GPU, or no driver)";
  return "";
}

#define SKIP_WITHOUT_CUDA()                    \
  do {                                         \
    const std::string why = CudaUnavailable(); \
    if (!why.empty()) GTEST_SKIP() << why;     \
  } while (0)

}  // namespace rill::test

#endif  // RILL_TESTS_CUDA_AVAILABLE_H_
