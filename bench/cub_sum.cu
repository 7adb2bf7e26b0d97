#include "bench/cub_sum.h"

#include <cub/device/device_reduce.cuh>

namespace rill::bench {

CubSum::CubSum(const float* in, float* out, int64_t n) : in_(in), out_(out), n_(n) {
  cub::DeviceReduce::Sum(nullptr, temp_bytes_, in_, out_, n_);
  cudaMalloc(&temp_, temp_bytes_);
}

CubSum::~CubSum() { cudaFree(temp_); }

void CubSum::Run() { cub::DeviceReduce::Sum(temp_, temp_bytes_, in_, out_, n_); }

}  // namespace rill::bench
