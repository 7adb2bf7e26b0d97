// bench/cub_sum.h — the peer for Rill's mean on the GPU: CUB's device-wide sum (shipped
// with the CUDA toolkit), what a CUDA programmer calls by hand to sum a device array.
#ifndef RILL_BENCH_CUB_SUM_H_
#define RILL_BENCH_CUB_SUM_H_

#include <cstddef>
#include <cstdint>

namespace rill::bench {

// Sums `n` floats at `in` (device memory) into `*out` (device memory) on the default
// stream; the temporary storage CUB asks for is allocated once, up front.
class CubSum {
 public:
  CubSum(const float* in, float* out, int64_t n);
  ~CubSum();
  CubSum(const CubSum&) = delete;
  CubSum& operator=(const CubSum&) = delete;
  void Run();

 private:
  const float* in_;
  float* out_;
  int64_t n_;
  void* temp_ = nullptr;
  size_t temp_bytes_ = 0;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_CUB_SUM_H_
