// A model's combined parameter file (`__params__`) on any bytes, loaded against its
// program as `rill run MODEL` loads it (core/io/inference_model.h): every record read and
// checked against its parameter's declaration (dtype and dims), the file holding exactly
// the program's parameters, or refused with an Error. The program is fixed: parameters
// `a` (fp32 [2, 3]) and `b` (int64 [-1]), in name order; the bytes go to a file of their
// own in a directory made once and removed at exit.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "core/io/inference_model.h"
#include "core/program/program_io.h"
#include "fuzz_target.h"

namespace {

const std::string& ModelDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(std::filesystem::temp_directory_path() /
                              ("rill_fuzz_model_params_" + std::to_string(getpid())));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ModelDir(), ignored);
    });
    rill::core::SaveProgram(rill::core::ParseProgramText(R"(blocks { idx: 0 parent_idx: -1
      vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
      vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
      vars { name: "a" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 dims: 3 } } } persistable: true }
      vars { name: "b" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: -1 } } } persistable: true } })",
                                                         "fuzz"),
                            *d + "/__model__", rill::core::ProgramFormat::kBinary);
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = ModelDir();
  {
    std::ofstream out(dir + "/__params__", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const rill::core::InferenceModel m = rill::core::LoadInferenceModel(dir);
    for (const auto& [name, t] : m.parameters) {
      if (t.nbytes() > 0) static_cast<void>(static_cast<const volatile char*>(t.data())[t.nbytes() - 1]);
    }
  } catch (const rill::core::Error&) {}
  return 0;
}
