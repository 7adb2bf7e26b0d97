#include "core/io/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/bytes_left.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DescrMap {
  const char* descr;
  int32_t dtype;
};
constexpr DescrMap kDescrs[] = {
    {"|b1", RILL_BOOL},  {"|i1", RILL_INT8},      {"|u1", RILL_UINT8},       {"<i2", RILL_INT16},
    {"<i4", RILL_INT32}, {"<i8", RILL_INT64},     {"<f2", RILL_FP16},        {"<f4", RILL_FP32},
    {"<f8", RILL_FP64},  {"<c8", RILL_COMPLEX64}, {"<c16", RILL_COMPLEX128},
};

// The value text after `'key':` in the header dict. A key given twice is refused: numpy
// would take the last, a reader taking the first would see another array.
std::string DictValue(const std::string& header, const std::string& key, const std::string& path) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(path + ": .npy header has no '" + key + "'");
  if (header.find("'" + key + "'", k + 1) != std::string::npos) {
    throw Error(path + ": .npy header gives '" + key + "' twice");
  }
  auto v = header.find(':', k);
  if (v == std::string::npos) throw Error(path + ": malformed .npy header");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  if (v >= header.size()) throw Error(path + ": malformed .npy header");
  if (header[v] == '\'') return header.substr(v + 1, header.find('\'', v + 1) - v - 1);
  if (header[v] == '(') return header.substr(v + 1, header.find(')', v) - v - 1);
  const auto end = header.find_first_of(",}", v);
  return header.substr(v, end - v);
}

}  // namespace

Tensor ReadNpy(std::istream& in, const std::string& path) {
  char magic[6];
  unsigned char version[2];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0 || !in.read(reinterpret_cast<char*>(version), 2)) {
    throw Error(path + ": not a .npy file (bad magic)");
  }
  uint32_t header_len = 0;
  if (version[0] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw Error(path + ": truncated .npy header");
    header_len = b[0] | (b[1] << 8);
  } else if (version[0] == 2 || version[0] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw Error(path + ": truncated .npy header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw Error(path + ": unsupported .npy version " + std::to_string(version[0]));
  }
  if (header_len > (1u << 20)) throw Error(path + ": .npy header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw Error(path + ": truncated .npy header");

  const std::string descr = DictValue(header, "descr", path);
  int32_t dtype = -1;
  for (const auto& d : kDescrs) {
    if (descr == d.descr) dtype = d.dtype;
  }
  if (dtype < 0) throw Error(path + ": unsupported .npy dtype '" + descr + "' (little-endian numeric or bool only)");
  if (DictValue(header, "fortran_order", path).find("True") != std::string::npos) {
    throw Error(path + ": Fortran-order arrays are not supported; save with C order");
  }
  std::vector<int64_t> dims;
  std::stringstream shape(DictValue(header, "shape", path));
  std::string item;
  while (std::getline(shape, item, ',')) {
    const auto first = item.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    size_t used = 0;
    try {
      dims.push_back(std::stoll(item.substr(first), &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(' ', first + used) != std::string::npos) {
      throw Error(path + ": bad shape entry '" + item + "' in .npy header");
    }
  }
  const ShapeSize size = SizeOfShape(dims.data(), dims.size(), DataTypeSize(dtype));
  if (!size.ok()) throw Error(path + ": .npy header's " + size.error);
  // A header that claims more data than the stream holds is refused before anything that
  // large is allocated.
  if (const auto left = BytesLeft(in); left && *left < size.bytes) {
    throw Error(path + ": .npy data is shorter than its shape says (" + std::to_string(*left) + " of " +
                std::to_string(size.bytes) + " bytes)");
  }
  Tensor t;
  t.Allocate(dtype, dims);
  if (!in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(t.nbytes()))) {
    throw Error(path + ": .npy data is shorter than its shape says (" + std::to_string(t.nbytes()) + " bytes)");
  }
  return t;
}

Tensor ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "'", RILL_NOT_FOUND);
  return ReadNpy(in, path);
}

void WriteNpy(const Tensor& tensor, const std::string& path) {
  if (!tensor.initialized()) throw Error("cannot save an empty tensor to '" + path + "'");
  const Tensor t = tensor.place().device_type == RILL_CPU ? tensor : tensor.CopyTo(Place{});
  const char* descr = nullptr;
  for (const auto& d : kDescrs) {
    if (d.dtype == t.dtype()) descr = d.descr;
  }
  if (descr == nullptr) throw Error("dtype " + DataTypeName(t.dtype()) + " has no .npy equivalent");
  std::string shape;
  for (size_t i = 0; i < t.dims().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.dims()[i]);
  if (t.dims().size() == 1) shape += ",";  // numpy writes a 1-tuple as (4,)
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad with spaces so that magic + version + length + header is a multiple of 64 bytes.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  WriteFileAtomically(path, [&](std::ostream& out) {
    out.write(kMagic, 6);
    out.put(1);
    out.put(0);
    out.put(static_cast<char>(len & 0xff));
    out.put(static_cast<char>(len >> 8));
    out << header;
    out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  });
}

}  // namespace rill::core
