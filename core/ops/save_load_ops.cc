// Fluid's `save`, `load`, `save_combine` and `load_combine`: variables to and from files
// in Fluid's LoDTensor format (core/io/lod_tensor_file.h), with Fluid's slots and
// attributes.
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/lod_tensor_file.h"
#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

// Calls into core's file code, whose errors are core's: as the SDK's, they reach the host
// as statuses with their codes, as every plugin's do.
template <class F> decltype(auto) HostCall(F&& f) {
  try {
    return f();
  } catch (const core::Error& e) {
    throw rill::Error(e.what(), e.code());
  }
}

std::string Where(const std::string& path, const std::string& var) { return "'" + path + "' (variable '" + var + "')"; }

// Makes the directory of the file to write; refuses a file that exists when `overwrite`
// is false.
void PrepareSave(const std::string& path, bool overwrite) {
  if (path.empty()) throw rill::Error("file_path is empty", RILL_INVALID_ARGUMENT);
  if (!overwrite && std::filesystem::exists(path)) {
    throw rill::Error("'" + path + "' exists, and overwrite is false", RILL_ALREADY_EXISTS);
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
}

std::ifstream OpenForLoad(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw rill::Error("cannot open '" + path + "'", RILL_NOT_FOUND);
  return in;
}

// A record's description of `t`, a tensor on the host.
LodTensorHeader Record(const rill::Tensor& t) {
  return LodTensorHeader{t.dtype(), t.dims(), t.lod(),
                         static_cast<uint64_t>(t.numel()) * rill::DataTypeSize(t.dtype())};
}

// Every variable is checked before a byte is written, and the file replaced only once
// complete (atomic_file.h): a failed save leaves the last good one.
void Save(rill::KernelContext& ctx, bool combined) {
  const std::string path = ctx.Attr<std::string>("file_path");
  PrepareSave(path, ctx.Attr<bool>("overwrite"));
  const bool as_fp16 = ctx.Attr<bool>("save_as_fp16");
  const size_t n = combined ? ctx.op().InputCount("X") : 1;
  std::vector<rill::Tensor> tensors;
  for (size_t i = 0; i < n; ++i) {
    const rill::Variable v = ctx.InputVar("X", i);
    if (!v.IsTensor() || !v.initialized() || !v.tensor().initialized()) {
      throw rill::Error(Where(path, ctx.op().InputName("X", i)) + ": the variable holds no tensor (nothing written)",
                        RILL_FAILED_PRECONDITION);
    }
    tensors.push_back(v.tensor());  // on the host: the host moves a CPU kernel's inputs there
  }
  HostCall([&] {
    WriteFileAtomically(path, [&](std::ostream& out) {
      for (size_t i = 0; i < n; ++i) {
        WriteLodTensor(out, Record(tensors[i]), tensors[i].raw_data(), as_fp16,
                       Where(path, ctx.op().InputName("X", i)));
      }
    });
  });
}

// Reads one record into `out`; Fluid's load_as_fp16 makes an fp32 record fp16.
void ReadInto(std::istream& in, rill::Tensor out, bool as_fp16, const std::string& what) {
  const LodTensorHeader header = HostCall([&] { return ReadLodTensorHeader(in, what); });
  if (as_fp16 && header.dtype == RILL_FP32) {
    std::vector<float> values(header.bytes / sizeof(float));
    HostCall([&] { ReadLodTensorData(in, header, values.data(), what); });
    ConvertFp32Fp16(RILL_FP16, values.data(), out.Allocate(RILL_FP16, header.dims), values.size());
  } else {
    void* into = out.Allocate(header.dtype, header.dims);
    HostCall([&] { ReadLodTensorData(in, header, into, what); });
  }
  out.set_lod(header.lod);
}

void Load(rill::KernelContext& ctx, bool combined) {
  const std::string path = ctx.Attr<std::string>("file_path");
  std::ifstream in = OpenForLoad(path);
  const bool as_fp16 = ctx.Attr<bool>("load_as_fp16");
  const size_t n = combined ? ctx.op().OutputCount("Out") : 1;
  for (size_t i = 0; i < n; ++i) {
    ReadInto(in, ctx.Output("Out", i), as_fp16, Where(path, ctx.op().OutputName("Out", i)));
  }
  if (combined && in.peek() != std::char_traits<char>::eof()) {
    throw rill::Error("'" + path + "' holds more than the " + std::to_string(n) +
                          " variables load_combine names (a combined file is loaded whole)",
                      RILL_INVALID_ARGUMENT);
  }
}

}  // namespace

void RegisterSaveLoad(rill::Registrar& r) {
  r.Op(rill::OpSchema("save")
           .Doc("Writes X to file_path in Fluid's LoDTensor format (its directory made).")
           .Input("X", "the variable to save")
           .RequiredAttr("file_path", RILL_ATTR_STRING, "the file to write")
           .Attr("overwrite", true, "replace an existing file (false: an existing file is an error)")
           .Attr("save_as_fp16", false, "store an fp32 tensor's values as fp16"));
  r.Kernel("save", RILL_CPU, RILL_ANY_DTYPE, [](rill::KernelContext& ctx) { Save(ctx, false); });
  r.Op(rill::OpSchema("save_combine")
           .Doc("Writes every X, in order, to one file_path in Fluid's LoDTensor format.")
           .Input("X", "the variables to save", RILL_SLOT_DUPLICABLE)
           .RequiredAttr("file_path", RILL_ATTR_STRING, "the file to write")
           .Attr("overwrite", true, "replace an existing file (false: an existing file is an error)")
           .Attr("save_as_fp16", false, "store fp32 tensors' values as fp16"));
  r.Kernel("save_combine", RILL_CPU, RILL_ANY_DTYPE, [](rill::KernelContext& ctx) { Save(ctx, true); });
  r.Op(rill::OpSchema("load")
           .Doc("Reads Out from file_path, a file in Fluid's LoDTensor format.")
           .Output("Out", "the variable loaded")
           .RequiredAttr("file_path", RILL_ATTR_STRING, "the file to read")
           .Attr("load_as_fp16", false, "make an fp32 tensor fp16"));
  r.Kernel("load", RILL_CPU, RILL_ANY_DTYPE, [](rill::KernelContext& ctx) { Load(ctx, false); });
  r.Op(rill::OpSchema("load_combine")
           .Doc("Reads every Out, in order, from one file_path written by save_combine; the file "
                "must hold exactly those variables.")
           .Output("Out", "the variables loaded", RILL_SLOT_DUPLICABLE)
           .RequiredAttr("file_path", RILL_ATTR_STRING, "the file to read")
           .Attr("load_as_fp16", false, "make fp32 tensors fp16")
           .Attr("model_from_memory", false, "Fluid's: file_path holds the bytes (not supported: must be false)"));
  r.Kernel("load_combine", RILL_CPU, RILL_ANY_DTYPE, [](rill::KernelContext& ctx) {
    if (ctx.Attr<bool>("model_from_memory")) {
      throw rill::Error("load_combine: model_from_memory is not supported; give a file_path", RILL_UNIMPLEMENTED);
    }
    Load(ctx, true);
  });
}

}  // namespace rill::core
