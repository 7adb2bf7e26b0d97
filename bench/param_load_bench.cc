// bench/param_load_bench.cc — loading a model's parameters against the page cache's limit.
//
// Times core::LoadInferenceModel (the program and every parameter read into tensors, as
// `rill run MODEL` does before a run) against `cat` of the same files to /dev/null (the
// bytes read and nothing made of them), alternating, for ROUNDS rounds each; reports the
// medians, both as bytes per second, and rill's fraction of cat's rate. The files are
// read once before the rounds, so both read from the page cache.
//
// usage: rill_bench_param_load MODEL [ROUNDS]     (MODEL: a directory or PREFIX.pdmodel)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/cli/malloc_tuning.h"
#include "core/io/inference_model.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The model's files: every file of a directory, or PREFIX.pdmodel and PREFIX.pdiparams.
std::vector<std::string> ModelFiles(const std::string& path) {
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path)) files.push_back(e.path().string());
  } else {
    files = {path, path.substr(0, path.size() - std::string(".pdmodel").size()) + ".pdiparams"};
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [ROUNDS]\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  std::string cat = "cat";
  uint64_t bytes = 0;
  for (const auto& f : ModelFiles(model)) {
    cat += " '" + f + "'";
    bytes += fs::file_size(f);
  }
  cat += " > /dev/null";
  rill::core::ApplyMallocTuning(rill::core::MallocTuning::kTuned);  // as `rill run` sets it
  std::vector<double> rill_s, cat_s;
  for (int r = -1; r < rounds; ++r) {  // round -1 warms the page cache
    auto t0 = Clock::now();
    {
      const rill::core::InferenceModel m = rill::core::LoadInferenceModel(model);
      if (m.parameters.empty()) {
        std::fprintf(stderr, "%s has no parameters\n", model.c_str());
        return 1;
      }
    }
    auto t1 = Clock::now();
    if (std::system(cat.c_str()) != 0) return 1;
    auto t2 = Clock::now();
    if (r < 0) continue;
    rill_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    cat_s.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  const double rill_rate = mb / Median(rill_s), cat_rate = mb / Median(cat_s);
  std::printf("%s: %.1f MB in %zu files, medians of %d rounds\n", model.c_str(), mb, ModelFiles(model).size(), rounds);
  std::printf("  LoadInferenceModel  %8.1f ms  %8.0f MB/s\n", Median(rill_s) * 1e3, rill_rate);
  std::printf("  cat > /dev/null     %8.1f ms  %8.0f MB/s\n", Median(cat_s) * 1e3, cat_rate);
  std::printf("  rill / cat rate: %.2f\n", rill_rate / cat_rate);
  return 0;
}
