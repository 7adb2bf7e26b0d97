// The book models (examples/book_models) through Rill, for bench/model_compare.py, which
// runs the same nets in PyTorch in the same session and reports the ratios.
//
//   rill_bench_model MODEL MODE BATCH ROUNDS ITERATIONS
//     MODEL: conv (recognize_digits' conv net, 1x28x28, 10 classes) or residual
//            (3x32x32, 16 channels, 3 blocks, 10 classes)
//     MODE:  infer (the model saved as save_inference_model does, loaded and run by
//            core::Model, the C++ serving API) or train (one step of the training
//            program: forward, backward, Adam, run by the executor)
// Prints one JSON line: the median over ROUNDS of the mean milliseconds per iteration
// (ITERATIONS per round, after one warm-up round) and the process's peak RSS. With
// --profile-summary last, also the ops by total time over the measured rounds (stderr;
// the profiler's hooks add their own small cost).
// Threads: OMP_NUM_THREADS (the intra-op budget) and RILL_WORKERS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/api/model.h"
#include "core/io/lod_tensor_file.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "core/runtime/profiler.h"
#include "models.h"

namespace rill::bench {
namespace {

examples::BookModel Named(const std::string& name) {
  if (name == "conv") return examples::ConvNet({1, 28, 28}, {20, 50}, 5, 0, 10);
  if (name == "residual") return examples::ResidualNet({3, 32, 32}, 16, 3, 10);
  throw std::runtime_error("unknown model '" + name + "' (conv or residual)");
}

core::Tensor Images(const examples::BookModel& m, int64_t batch, std::mt19937& rng) {
  core::Tensor t;
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), m.image.begin(), m.image.end());
  auto* p = static_cast<float*>(t.Allocate(RILL_FP32, dims));
  std::normal_distribution<float> value(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value(rng);
  return t;
}

// This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries that
// across exec, so it would include the parent's size when it forked this process.
long long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

template <class Step> double MedianMs(int rounds, int iterations, bool profile, Step step) {
  for (int i = 0; i < iterations; ++i) step();
  std::optional<core::Profiler> profiler;
  if (profile) profiler.emplace();
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                 iterations);
  }
  if (profiler) core::WriteSummary(profiler->Stop(), std::cerr);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int Main(int argc, char** argv) {
  const bool profile = argc == 7 && std::string(argv[6]) == "--profile-summary";
  if (argc != 6 && !profile) {
    std::fprintf(stderr, "usage: %s conv|residual infer|train BATCH ROUNDS ITERATIONS [--profile-summary]\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1], mode = argv[2];
  const int64_t batch = std::stoll(argv[3]);
  const int rounds = std::stoi(argv[4]), iterations = std::stoi(argv[5]);
  const examples::BookModel m = Named(name);
  std::mt19937 rng(45);
  auto scope = core::Scope::NewRoot();
  examples::Initialize(m, *scope, 0.001f, rng);
  double ms = 0;
  if (mode == "infer") {
    const std::string dir = (std::filesystem::temp_directory_path() / ("rill_bench_model_" + name)).string();
    std::filesystem::create_directories(dir);
    core::SaveProgram(examples::InferenceProgram(m), dir + "/__model__", core::ProgramFormat::kBinary);
    for (const auto& var : examples::SavedVariables(m)) {
      std::ofstream out(dir + "/" + var, std::ios::binary);
      core::WriteLodTensor(out, *scope->FindVar(var)->GetTensor(), false, var);
    }
    scope.reset();
    auto model = core::Model::Load(LoadedRegistry(), dir);
    const core::Tensor images = Images(m, batch, rng);
    ms = MedianMs(rounds, iterations, profile, [&] { model->Run({{"img", images}}); });
    std::filesystem::remove_all(dir);
  } else if (mode == "train") {
    auto program = std::make_shared<proto::ProgramDesc>(examples::TrainingProgram(m, LoadedRegistry()));
    core::ValidateProgramOrThrow(*program, LoadedRegistry());
    core::Executor exec(LoadedRegistry(), program);
    *scope->Var("img")->GetMutableTensor() = Images(m, batch, rng);
    core::Tensor* label = scope->Var("label")->GetMutableTensor();
    auto* l = static_cast<int64_t*>(label->Allocate(RILL_INT64, {batch, 1}));
    for (int64_t i = 0; i < batch; ++i) l[i] = static_cast<int64_t>(rng() % static_cast<uint32_t>(m.classes));
    ms = MedianMs(rounds, iterations, profile, [&] { exec.Run(0, scope); });
  } else {
    std::fprintf(stderr, "unknown mode '%s' (infer or train)\n", mode.c_str());
    return 2;
  }
  std::printf("{\"model\": \"%s\", \"mode\": \"%s\", \"batch\": %lld, \"ms\": %.4f, \"peak_rss_kb\": %lld}\n",
              name.c_str(), mode.c_str(), static_cast<long long>(batch), ms, PeakRssKb());
  return 0;
}

}  // namespace
}  // namespace rill::bench

int main(int argc, char** argv) {
  try {
    return rill::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill_bench_model: %s\n", e.what());
    return 1;
  }
}
