// The pserver's mean of gradients, read in place from received bytes cut at any point:
// values straddling slice boundaries, unaligned pieces, dense and SelectedRows mixed.
#include "average.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "rill/abi.h"

namespace rill::dist {
namespace {

// `values` as received: their bytes behind a 3-byte prefix (so nothing is aligned), cut
// into slices of `chunk` bytes, the prefix read off as a header would be.
template <class T>
ReceivedGradient Received(const std::vector<T>& values, size_t chunk, std::vector<int64_t> rows = {}) {
  std::string bytes = "hdr";
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += chunk)
    slices.emplace_back(bytes.data() + at, std::min(chunk, bytes.size() - at));
  ReceivedGradient g;
  g.bytes = ReceivedBytes(grpc::ByteBuffer(slices.data(), slices.size()));
  char prefix[3];
  g.bytes.Read(prefix, 3);
  g.sparse = !rows.empty();
  g.rows = std::move(rows);
  return g;
}

TEST(DistAverage, DenseGradientsCutAnywhereAverageExactly) {
  const std::vector<int64_t> dims = {100, 30};  // 3,000 values: more than one staging run
  std::vector<float> a(3000), b(3000), c(3000);
  std::iota(a.begin(), a.end(), 0.0f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 2.0f * static_cast<float>(i);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 3.0f;
  for (size_t chunk : {1, 3, 7, 4096, 1 << 20}) {
    const ReceivedGradient ga = Received(a, chunk), gb = Received(b, chunk + 2), gc = Received(c, chunk);
    std::vector<float> out(3000, -1.0f);
    WriteAverage(
        RILL_FP32, dims, {&ga, &gb, &gc}, [&] { return static_cast<void*>(out.data()); },
        [](const std::vector<int64_t>&) -> void* { throw std::logic_error("dense parts give a dense mean"); });
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_FLOAT_EQ(out[i], (3.0f * static_cast<float>(i) + 3.0f) / 3.0f) << "chunk " << chunk << " at " << i;
    }
    // The parts can be averaged again: reading them does not consume them.
    std::vector<float> again(3000);
    WriteAverage(
        RILL_FP32, dims, {&ga}, [&] { return static_cast<void*>(again.data()); },
        [](const std::vector<int64_t>&) -> void* { return nullptr; });
    ASSERT_EQ(again, a) << "chunk " << chunk;
  }
}

TEST(DistAverage, SparsePartsStaySparseAndAMixAddsRowsWhereTheyBelong) {
  const std::vector<int64_t> dims = {4, 3};  // rows of 3 doubles
  const std::vector<double> rows_1_3 = {1, 2, 3, 10, 20, 30};
  const std::vector<double> row_1 = {100, 200, 300};
  const ReceivedGradient s1 = Received(rows_1_3, 5, {1, 3}), s2 = Received(row_1, 5, {1});
  std::vector<int64_t> got_rows;
  std::vector<double> values(9, -1);
  WriteAverage(
      RILL_FP64, dims, {&s1, &s2}, []() -> void* { throw std::logic_error("sparse parts give a sparse mean"); },
      [&](const std::vector<int64_t>& rows) {
        got_rows = rows;
        return static_cast<void*>(values.data());
      });
  EXPECT_EQ(got_rows, (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(values, (std::vector<double>{0.5, 1, 1.5, 5, 10, 15, 50, 100, 150}));

  std::vector<double> dense(12);
  std::iota(dense.begin(), dense.end(), 0.0);
  const ReceivedGradient d = Received(dense, 7);
  std::vector<double> out(12, -1);
  WriteAverage(
      RILL_FP64, dims, {&s1, &d, &s2}, [&] { return static_cast<void*>(out.data()); },
      [](const std::vector<int64_t>&) -> void* { throw std::logic_error("a mix gives a dense mean"); });
  std::vector<double> want = dense;
  for (int j = 0; j < 3; ++j) {
    want[3 + j] += rows_1_3[j] + row_1[j];
    want[9 + j] += rows_1_3[3 + j];
  }
  for (double& w : want) w /= 3;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(out[i], want[i]) << i;
}

TEST(DistAverage, BorrowedBytesReadLikeReceivedOnes) {
  const std::vector<float> v = {1, 2, 3, 4};
  ReceivedGradient g;
  g.bytes = ReceivedBytes::Borrowed(v.data(), v.size() * sizeof(float));
  std::vector<float> out(4);
  WriteAverage(
      RILL_FP32, {4}, {&g, &g}, [&] { return static_cast<void*>(out.data()); },
      [](const std::vector<int64_t>&) -> void* { return nullptr; });
  EXPECT_EQ(out, v);
  ReceivedBytes copy = g.bytes;
  std::vector<float> read(4);
  copy.Read(read.data(), 16);
  EXPECT_EQ(read, v);
  EXPECT_EQ(copy.size(), 0u);
  EXPECT_EQ(g.bytes.size(), 16u);  // a copy reads on its own
  EXPECT_THROW(copy.Read(read.data(), 1), WireError);
}

}  // namespace
}  // namespace rill::dist
