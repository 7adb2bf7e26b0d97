#include "core/io/lod_tensor_file.h"

#include <cstring>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "core/io/bytes_left.h"
#include "core/proto/framework.pb.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {
namespace {

// Fluid's limit on a TensorDesc's size is its int32 field; a real one is tens of bytes.
constexpr int32_t kMaxDescBytes = 1 << 20;

// Reads from a stream that knows how much it has left (when it is seekable), refusing
// any length longer than that before the bytes are allocated or read.
class Reader {
 public:
  Reader(std::istream& in, const std::string& what) : in_(in), what_(what), left_(BytesLeft(in)) {}
  template <class T> T Read(const char* field) {
    T v;
    Bytes(&v, sizeof(v), field);
    return v;
  }
  // Throws unless `n` more bytes are there (when that is known).
  void Need(uint64_t n, const char* field) {
    if (left_ && n > *left_) {
      Fail(std::string(field) + ": " + std::to_string(n) + " bytes needed, the file has " + std::to_string(*left_) +
           " left (truncated?)");
    }
  }
  void Bytes(void* into, uint64_t n, const char* field) {
    Need(n, field);
    if (n > 0 && !in_.read(static_cast<char*>(into), static_cast<std::streamsize>(n))) {
      Fail(std::string(field) + ": the file ends before its " + std::to_string(n) + " bytes (truncated)");
    }
    if (left_) *left_ -= n;
  }
  [[noreturn]] void Fail(const std::string& why) const { throw Error(what_ + ": " + why, RILL_INVALID_ARGUMENT); }

 private:
  std::istream& in_;
  const std::string& what_;
  std::optional<uint64_t> left_;  // unknown for a stream that cannot say
};

}  // namespace

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));  // inf, NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past the largest half: inf
  if (abs < 0x38800000u) {  // a half subnormal (or zero): scale by 2^24 and round
    float scaled;
    const uint32_t a = abs;
    std::memcpy(&scaled, &a, 4);
    const float m = scaled * 16777216.0f;  // 2^24: the subnormal step becomes 1
    const uint32_t q = static_cast<uint32_t>(m);
    const float r = m - static_cast<float>(q);
    const uint32_t rounded = q + (r > 0.5f || (r == 0.5f && (q & 1u)));
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t mant_round = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((mant_round - 0x38000000u) >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    float f = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    std::memcpy(&x, &f, 4);
    x |= sign;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void ConvertFp32Fp16(int32_t to, const void* from, void* into, size_t n) {
  if (to == RILL_FP16) {
    const float* f = static_cast<const float*>(from);
    uint16_t* h = static_cast<uint16_t*>(into);
    for (size_t i = 0; i < n; ++i) h[i] = FloatToHalf(f[i]);
  } else {
    const uint16_t* h = static_cast<const uint16_t*>(from);
    float* f = static_cast<float*>(into);
    for (size_t i = 0; i < n; ++i) f[i] = HalfToFloat(h[i]);
  }
}

Tensor ConvertFp32Fp16(const Tensor& t, int32_t to) {
  Tensor out;
  out.Allocate(to, t.dims().ToVector());
  out.mutable_lod() = t.lod();
  ConvertFp32Fp16(to, t.data(), out.data(), static_cast<size_t>(t.numel()));
  return out;
}

LodTensorHeader ReadLodTensorHeader(std::istream& in, const std::string& what) {
  Reader r(in, what);
  if (const uint32_t v = r.Read<uint32_t>("the LoDTensor version"); v != 0) {
    r.Fail("LoDTensor version " + std::to_string(v) + " is not supported (only 0)");
  }
  const uint64_t levels = r.Read<uint64_t>("the LoD level count");
  uint64_t level_sizes = 0;  // at least each level's own size field must be there
  if (!CheckedMul<uint64_t>(levels, sizeof(uint64_t), &level_sizes)) level_sizes = UINT64_MAX;
  r.Need(level_sizes, "the LoD levels");
  LoD lod;
  for (uint64_t l = 0; l < levels; ++l) {
    const uint64_t bytes = r.Read<uint64_t>("a LoD level's byte size");
    if (bytes % sizeof(uint64_t) != 0) {
      r.Fail("LoD level " + std::to_string(l) + " is " + std::to_string(bytes) +
             " bytes, not a whole number of offsets");
    }
    r.Need(bytes, "a LoD level's offsets");
    std::vector<uint64_t> offsets(bytes / sizeof(uint64_t));
    r.Bytes(offsets.data(), bytes, "a LoD level's offsets");
    for (size_t k = 1; k < offsets.size(); ++k) {
      if (offsets[k] < offsets[k - 1]) {
        r.Fail("LoD level " + std::to_string(l) + " decreases at offset " + std::to_string(k) + " (" +
               std::to_string(offsets[k - 1]) + " then " + std::to_string(offsets[k]) + ")");
      }
    }
    lod.push_back(std::move(offsets));
  }
  if (const uint32_t v = r.Read<uint32_t>("the tensor version"); v != 0) {
    r.Fail("tensor version " + std::to_string(v) + " is not supported (only 0)");
  }
  const int32_t desc_bytes = r.Read<int32_t>("the TensorDesc size");
  if (desc_bytes < 0 || desc_bytes > kMaxDescBytes) {
    r.Fail("TensorDesc size " + std::to_string(desc_bytes) + " is out of range [0, " + std::to_string(kMaxDescBytes) +
           "]");
  }
  r.Need(static_cast<uint64_t>(desc_bytes), "the TensorDesc");
  std::string desc_text(static_cast<size_t>(desc_bytes), '\0');
  r.Bytes(desc_text.data(), static_cast<uint64_t>(desc_bytes), "the TensorDesc");
  proto::VarType::TensorDesc desc;
  if (!desc.ParseFromString(desc_text)) r.Fail("the TensorDesc is not a valid protobuf message");
  if (!desc.has_data_type()) r.Fail("the TensorDesc has no data type this build knows");
  const int32_t dtype = static_cast<int32_t>(desc.data_type());
  if (!IsTensorDataType(dtype))
    r.Fail("the TensorDesc's data type " + DataTypeName(dtype) + " is not a tensor element type");
  const size_t elem = DataTypeSize(dtype);
  const std::vector<int64_t> dims(desc.dims().begin(), desc.dims().end());
  const ShapeSize size = SizeOfShape(dims.data(), dims.size(), elem);
  if (!size.ok()) r.Fail("the TensorDesc's " + size.error);
  if (!lod.empty() && !lod.back().empty() && (dims.empty() || lod.back().back() > static_cast<uint64_t>(dims[0]))) {
    r.Fail("the LoD's last offset " + std::to_string(lod.back().back()) + " is past the tensor's " +
           (dims.empty() ? std::string("0") : std::to_string(dims[0])) + " rows");
  }
  r.Need(size.bytes, "the tensor's data");
  return LodTensorHeader{dtype, dims, std::move(lod), size.bytes};
}

void ReadLodTensorData(std::istream& in, const LodTensorHeader& header, void* into, const std::string& what) {
  Reader(in, what).Bytes(into, header.bytes, "the tensor's data");
}

Tensor ReadLodTensor(std::istream& in, const std::string& what) {
  LodTensorHeader header = ReadLodTensorHeader(in, what);
  Tensor t;
  ReadLodTensorData(in, header, t.Allocate(header.dtype, header.dims), what);
  t.mutable_lod() = std::move(header.lod);
  return t;
}

void WriteLodTensor(std::ostream& out, const LodTensorHeader& record, const void* data, bool as_fp16,
                    const std::string& what) {
  if (as_fp16 && record.dtype == RILL_FP32) {
    std::vector<uint16_t> halves(record.bytes / sizeof(float));
    ConvertFp32Fp16(RILL_FP16, data, halves.data(), halves.size());
    LodTensorHeader as_half = record;
    as_half.dtype = RILL_FP16;
    as_half.bytes = halves.size() * sizeof(uint16_t);
    return WriteLodTensor(out, as_half, halves.data(), false, what);
  }
  const auto put = [&](const void* p, size_t n) {
    out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  };
  const uint32_t version = 0;
  put(&version, 4);
  const uint64_t levels = record.lod.size();
  put(&levels, 8);
  for (const auto& level : record.lod) {
    const uint64_t bytes = level.size() * sizeof(uint64_t);
    put(&bytes, 8);
    put(level.data(), bytes);
  }
  put(&version, 4);
  proto::VarType::TensorDesc desc;
  desc.set_data_type(static_cast<proto::VarType::Type>(record.dtype));
  for (int64_t d : record.dims) desc.add_dims(d);
  const std::string desc_bytes = desc.SerializeAsString();
  const int32_t desc_size = static_cast<int32_t>(desc_bytes.size());
  put(&desc_size, 4);
  put(desc_bytes.data(), desc_bytes.size());
  put(data, record.bytes);
  if (!out) throw Error(what + ": writing failed", RILL_INTERNAL);
}

void WriteLodTensor(std::ostream& out, const Tensor& tensor, bool as_fp16, const std::string& what) {
  if (!tensor.initialized()) throw Error(what + ": holds no tensor to save", RILL_FAILED_PRECONDITION);
  if (tensor.place().device_type != RILL_CPU) {
    return WriteLodTensor(out, tensor.CopyTo(Place{}), as_fp16, what);
  }
  const LodTensorHeader record{tensor.dtype(), tensor.dims().ToVector(), tensor.lod(), tensor.nbytes()};
  WriteLodTensor(out, record, tensor.data(), as_fp16, what);
}

}  // namespace rill::core
