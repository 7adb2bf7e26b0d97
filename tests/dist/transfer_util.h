// Helpers of the data path's tests (tcp_connection_test.cc, tcp_data_path_test.cc,
// stress/dist_large_tensor_test.cc).
#ifndef RILL_TESTS_DIST_TRANSFER_UTIL_H_
#define RILL_TESTS_DIST_TRANSFER_UTIL_H_

#include <chrono>
#include <string>
#include <vector>

#include "data_path.h"

namespace rill::dist {

// Waits for one transfer; its error ("" on success), or "timed out".
class Outcome {
 public:
  DataPath::Done Done() { return batch_.Done(); }
  std::string Get(std::chrono::milliseconds within = std::chrono::seconds(10)) {
    std::string error;
    return batch_.Wait(within, &error) ? error : "timed out";
  }

 private:
  TransferBatch batch_;
};

inline std::vector<float> Iota(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

}  // namespace rill::dist

#endif  // RILL_TESTS_DIST_TRANSFER_UTIL_H_
