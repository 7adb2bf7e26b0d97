// core/io/lod_tensor_file.h — Fluid's LoDTensor file format, read and written as Paddle
// does (the files `save`, `save_combine` and `save_inference_model` write).
//
// A record is, little-endian:
//   uint32 version (0); uint64 LoD level count; per level, uint64 byte size and that many
//   bytes of uint64 (size_t) offsets; uint32 tensor version (0); int32 byte size of a
//   VarType.TensorDesc protobuf (data_type, dims) and its bytes; then the elements,
//   row-major. A combined file is records back to back.
//
// Contract: ReadLodTensor reads one record from `in` and returns it as a CPU tensor with
// its LoD. Every length in the record is checked, before anything is allocated, against
// the bytes the stream has left (a seekable stream) and against size arithmetic that
// cannot wrap; anything truncated, inconsistent or unsupported throws Error naming `what`
// (the file and variable) and the field at fault. It never reads past the record.
// WriteLodTensor writes one record of a dense tensor (a device's copied to the host first),
// or of plain values, `record` describing the `record.bytes` bytes at `data`, on the host;
// `as_fp16` stores fp32 values as fp16 (Fluid's save_as_fp16).
#ifndef RILL_CORE_IO_LOD_TENSOR_FILE_H_
#define RILL_CORE_IO_LOD_TENSOR_FILE_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "core/runtime/tensor.h"

namespace rill::core {

Tensor ReadLodTensor(std::istream& in, const std::string& what);

// A record read in two steps, for a reader that places the data itself (all of a model's
// parameters in one allocation): the header says what the data is and leaves `in` at it,
// having checked that its bytes are there; ReadLodTensorData then reads them into `into`.
struct LodTensorHeader {
  int32_t dtype = -1;
  std::vector<int64_t> dims;
  LoD lod;
  uint64_t bytes = 0;
};
LodTensorHeader ReadLodTensorHeader(std::istream& in, const std::string& what);
void ReadLodTensorData(std::istream& in, const LodTensorHeader& header, void* into, const std::string& what);
void WriteLodTensor(std::ostream& out, const Tensor& tensor, bool as_fp16, const std::string& what);
void WriteLodTensor(std::ostream& out, const LodTensorHeader& record, const void* data, bool as_fp16,
                    const std::string& what);

// fp32 <-> IEEE half (round to nearest even; NaN and infinity kept), for the *_as_fp16
// attributes.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
// `t` (fp32 or fp16) as a tensor of the other type, same shape and LoD.
Tensor ConvertFp32Fp16(const Tensor& t, int32_t to);
// `n` elements at `from` (fp32 or fp16) into `into` as `to`, the other type.
void ConvertFp32Fp16(int32_t to, const void* from, void* into, size_t n);

}  // namespace rill::core

#endif  // RILL_CORE_IO_LOD_TENSOR_FILE_H_
