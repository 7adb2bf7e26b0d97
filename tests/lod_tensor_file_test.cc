// Fluid's LoDTensor file format (core/io/lod_tensor_file.h): files made byte by byte from
// the format read as Paddle wrote them, our writer's bytes are those bytes, every prefix
// of a record and every inconsistent field is a clear error, and fp16 conversions round
// as IEEE does.
#include "core/io/lod_tensor_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "core/errors.h"
#include "test_util.h"

namespace rill::core {
namespace {

// Little-endian bytes of a value.
template <class T> std::string LE(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}

// One record as Paddle writes it: `desc` is the TensorDesc's protobuf bytes.
std::string Record(const std::vector<std::vector<uint64_t>>& lod, const std::string& desc, const std::string& data) {
  std::string r = LE<uint32_t>(0) + LE<uint64_t>(lod.size());
  for (const auto& level : lod) {
    r += LE<uint64_t>(level.size() * 8);
    for (uint64_t o : level) r += LE<uint64_t>(o);
  }
  return r + LE<uint32_t>(0) + LE<int32_t>(static_cast<int32_t>(desc.size())) + desc + data;
}

// TensorDesc {data_type: INT64 (3), dims: [3, 1]} and {FP16 (4), [2]}: proto2, so the
// repeated dims are unpacked, one key (field 2, varint: 0x10) each.
const std::string kInt64Desc("\x08\x03\x10\x03\x10\x01", 6);
const std::string kFp16Desc("\x08\x04\x10\x02", 4);

std::string Int64Record() {
  return Record({{0, 2, 3}}, kInt64Desc, LE<int64_t>(7) + LE<int64_t>(-8) + LE<int64_t>(int64_t{1} << 40));
}

Tensor Read(const std::string& bytes) {
  std::istringstream in(bytes);
  return ReadLodTensor(in, "'f' (variable 'v')");
}
std::string Write(const Tensor& t, bool as_fp16 = false) {
  std::ostringstream out;
  WriteLodTensor(out, t, as_fp16, "'f'");
  return out.str();
}

TEST(LodTensorFile, ReadsRecordsMadeByteByByteFromTheFormat) {
  const Tensor t = Read(Int64Record());
  EXPECT_EQ(t.dtype(), RILL_INT64);
  EXPECT_EQ(t.dims().ToVector(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(t.lod(), (LoD{{0, 2, 3}}));
  EXPECT_EQ(t.ValuesToString(), "7 -8 1099511627776");

  const Tensor h = Read(Record({}, kFp16Desc, LE<uint16_t>(0x3c00) + LE<uint16_t>(0xc000)));
  EXPECT_EQ(h.dtype(), RILL_FP16);
  EXPECT_FALSE(h.has_lod());
  const auto* bits = static_cast<const uint16_t*>(h.data());
  EXPECT_EQ(HalfToFloat(bits[0]), 1.0f);
  EXPECT_EQ(HalfToFloat(bits[1]), -2.0f);

  // Two LoD levels, and a combined file: records back to back.
  const std::string two_levels = Record({{0, 1, 3}, {0, 1, 2, 3}}, kInt64Desc, std::string(24, '\0'));
  std::istringstream both(two_levels + Int64Record());
  EXPECT_EQ(ReadLodTensor(both, "a").lod(), (LoD{{0, 1, 3}, {0, 1, 2, 3}}));
  EXPECT_EQ(ReadLodTensor(both, "b").ValuesToString(), "7 -8 1099511627776");
  EXPECT_EQ(both.peek(), std::char_traits<char>::eof());
}

TEST(LodTensorFile, WritesPaddlesBytesAndReadsThemBack) {
  const Tensor t = Read(Int64Record());
  EXPECT_EQ(Write(t), Int64Record()) << "the writer's bytes are the format's";
  for (int32_t dtype : {RILL_FP32, RILL_FP64, RILL_INT32, RILL_BOOL, RILL_UINT8, RILL_INT8, RILL_BF16, RILL_COMPLEX64,
                        RILL_COMPLEX128}) {  // Paddle 2.x's too
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {4}, {2, 3}, {0, 3}}) {
      Tensor x;
      x.Allocate(dtype, dims);
      auto* p = static_cast<unsigned char*>(x.data());
      for (size_t i = 0; i < x.nbytes(); ++i)
        p[i] = static_cast<unsigned char>(dtype == RILL_BOOL ? i % 2 : i * 37 + 1);
      if (dims.size() == 2 && dims[0] == 2) x.mutable_lod() = {{0, 2}, {0, 1, 2}};
      const std::string bytes = Write(x);
      const Tensor back = Read(bytes);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.dims(), x.dims());
      EXPECT_EQ(back.lod(), x.lod());
      ASSERT_EQ(back.nbytes(), x.nbytes());
      EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0) << "bit-exact";
      EXPECT_EQ(Write(back), bytes);
    }
  }
}

TEST(LodTensorFile, Fp16ConversionsRoundAsIeeeDoes) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff) << "the largest half";
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff) << "rounds down to it";
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00) << "rounds up to infinity";
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00) << "a tie rounds to even";
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02) << "a tie rounds to even";
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001) << "the smallest subnormal";
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000) << "below half of it: zero";
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every half survives the round trip
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
    }
  }
  Tensor x;
  x.Allocate(RILL_FP32, {3});
  float* p = x.data_as<float>();
  p[0] = 0.5f, p[1] = -3.25f, p[2] = 1e6f;
  const Tensor h = Read(Write(x, /*as_fp16=*/true));
  EXPECT_EQ(h.dtype(), RILL_FP16) << "save_as_fp16";
  EXPECT_EQ(ConvertFp32Fp16(h, RILL_FP32).ValuesToString(), "0.5 -3.25 inf");
}

TEST(LodTensorFile, EveryTruncationAndInconsistencyIsAClearError) {
  const auto refused = [](const std::string& bytes, const std::string& why) {
    try {
      Read(bytes);
      ADD_FAILURE() << "read; expected: " << why;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("'f' (variable 'v'): ", 0), 0u) << what;
      EXPECT_NE(what.find(why), std::string::npos) << what;
    }
  };
  const std::string good = Int64Record();
  for (size_t n = 0; n < good.size(); ++n) refused(good.substr(0, n), "truncated");
  refused(LE<uint32_t>(1) + good.substr(4), "LoDTensor version 1 is not supported");
  refused(LE<uint32_t>(0) + LE<uint64_t>(uint64_t{1} << 60), "the LoD levels: 9223372036854775808 bytes needed");
  refused(LE<uint32_t>(0) + LE<uint64_t>(~uint64_t{0}), "the LoD levels: 18446744073709551615 bytes needed");
  refused(Record({{0, 2, 3}}, kInt64Desc, "").replace(12, 8, LE<uint64_t>(20)), "not a whole number of offsets");
  refused(Record({{0, 2, 1}}, kInt64Desc, std::string(24, '\0')), "LoD level 0 decreases at offset 2 (2 then 1)");
  refused(Record({{0, 4}}, kInt64Desc, std::string(24, '\0')), "the LoD's last offset 4 is past the tensor's 3 rows");
  const std::string head = LE<uint32_t>(0) + LE<uint64_t>(0);
  refused(head + LE<uint32_t>(2), "tensor version 2 is not supported");
  refused(head + LE<uint32_t>(0) + LE<int32_t>(-1), "TensorDesc size -1 is out of range");
  refused(head + LE<uint32_t>(0) + LE<int32_t>(1 << 30), "TensorDesc size 1073741824 is out of range");
  refused(Record({}, std::string("\x08", 1), ""), "the TensorDesc is not a valid protobuf message");
  refused(Record({}, std::string("\x08\x63\x10\x01", 4), "x"), "the TensorDesc has no data type this build knows");
  refused(Record({}, std::string("\x08\x07\x10\x01", 4), "x"), "data type dtype(7) is not a tensor element type");
  refused(Record({}, std::string("\x08\x05\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 13), ""),
          "shape [-1] has a negative dimension");
  refused(Record({}, std::string("\x08\x05\x10\x80\x80\x80\x80\x80\x80\x80\x80\x40", 12), ""),
          "more bytes than memory can address");
  refused(Record({}, kInt64Desc, std::string(23, '\0')), "the tensor's data: 24 bytes needed, the file has 23 left");
}

}  // namespace
}  // namespace rill::core
