// Paddle's book models end to end, as examples/book_models writes them
// (small sizes here), trained on synthetic data with a known answer to a stated accuracy, saved in
// save_inference_model's layout and served by `rill run DIR`: recognize_digits' MLP and conv
// net, and a small residual net. word2vec, trained through the parameter servers with sparse
// updates, is examples/word2vec/train_dist.sh (ctest word2vec_sparse_distributed_...).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "core/io/lod_tensor_file.h"
#include "core/io/npy.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "core/runtime/executor.h"
#include "models.h"
#include "test_util.h"

namespace rill::test {
namespace {

// Synthetic digits: an 8x8 image of class k in 0..3 has a bright 3x3 blob in quadrant k,
// at a random place there, over noise.
struct Batch {
  core::Tensor images, labels;
};
Batch Digits(int n, std::mt19937& rng) {
  Batch b;
  float* img = static_cast<float*>(b.images.Allocate(RILL_FP32, {n, 1, 8, 8}));
  auto* lab = static_cast<int64_t*>(b.labels.Allocate(RILL_INT64, {n, 1}));
  std::normal_distribution<float> noise(0, 0.3f);
  std::uniform_int_distribution<int> cls(0, 3), at(0, 1);
  for (int i = 0; i < n; ++i) {
    const int k = cls(rng);
    lab[i] = k;
    for (int p = 0; p < 64; ++p) img[i * 64 + p] = noise(rng);
    const int y0 = (k / 2) * 4 + at(rng), x0 = (k % 2) * 4 + at(rng);
    for (int y = y0; y < y0 + 3; ++y)
      for (int x = x0; x < x0 + 3; ++x) img[i * 64 + y * 8 + x] += 2.0f;
  }
  return b;
}

// Trains `m` with Adam (backward appended by AppendBackward) on synthetic digits for
// `steps` steps, checks the loss fell and the training accuracy reached `accuracy`, then
// saves it as save_inference_model does and checks `rill run DIR` classifies 200 fresh
// images at least that well.
void TrainSaveAndServe(const examples::BookModel& m, const std::string& name, int steps, float lr, float accuracy) {
  const rill::proto::ProgramDesc train = examples::TrainingProgram(m, ShippedRegistry());
  core::ValidateProgramOrThrow(train, ShippedRegistry());
  std::mt19937 rng(45);
  auto scope = core::Scope::NewRoot();
  examples::Initialize(m, *scope, lr, rng);

  core::Executor exec(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>(train));
  float first_loss = 0, last_acc = 0;
  for (int step = 0; step < steps; ++step) {
    Batch b = Digits(32, rng);
    *scope->Var("img")->GetMutableTensor() = b.images;
    *scope->Var("label")->GetMutableTensor() = b.labels;
    exec.Run(0, scope);
    if (step == 0) first_loss = scope->FindVar("loss")->GetTensor()->data_as<float>()[0];
    last_acc = scope->FindVar("acc")->GetTensor()->data_as<float>()[0];
  }
  const float last_loss = scope->FindVar("loss")->GetTensor()->data_as<float>()[0];
  EXPECT_LT(last_loss, first_loss / 4) << name << ": loss " << first_loss << " -> " << last_loss;
  EXPECT_GE(last_acc, accuracy) << name << ": training accuracy after " << steps << " steps";

  // save_inference_model's layout: __model__ (feed, the forward pass at is_test, fetch)
  // and a file per parameter, batch_norm's running statistics included.
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  core::SaveProgram(examples::InferenceProgram(m), dir + "/__model__", core::ProgramFormat::kBinary);
  for (const auto& var : examples::SavedVariables(m)) {
    std::ofstream out(dir + "/" + var, std::ios::binary);
    core::WriteLodTensor(out, *scope->FindVar(var)->GetTensor(), false, var);
  }
  Batch test = Digits(200, rng);
  const std::string images = TempPath(name + "_images.npy");
  core::WriteNpy(test.images, images);
  const std::string out_dir = TempPath(name + "_out");
  const CommandResult r = RunRill({"run", dir, "--feed", "img=" + images, "--save", out_dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const core::Tensor prob = core::ReadNpy(out_dir + "/prob.npy");
  ASSERT_EQ(prob.dims().ToVector(), (std::vector<int64_t>{200, 4}));
  int correct = 0;
  for (int i = 0; i < 200; ++i) {
    const float* row = prob.data_as<float>() + i * 4;
    correct += std::max_element(row, row + 4) - row == test.labels.data_as<int64_t>()[i];
  }
  EXPECT_GE(correct, static_cast<int>(200 * accuracy)) << name << ": the served model's accuracy on 200 fresh images";
}

TEST(BookModels, RecognizeDigitsMlpTrainsWithAdamAndServesFromItsSavedModel) {
  TrainSaveAndServe(examples::Mlp({1, 8, 8}, {32, 32}, 4), "recognize_digits_mlp", 150, 0.01f, 0.95f);
}

TEST(BookModels, RecognizeDigitsConvNetTrainsWithAdamAndServesFromItsSavedModel) {
  TrainSaveAndServe(examples::ConvNet({1, 8, 8}, {4, 8}, 3, 1, 4), "recognize_digits_conv", 150, 0.02f, 0.95f);
}

TEST(BookModels, ResidualNetTrainsWithAdamAndServesFromItsSavedModel) {
  TrainSaveAndServe(examples::ResidualNet({1, 8, 8}, 8, 1, 4), "residual_net", 150, 0.02f, 0.95f);
}

}  // namespace
}  // namespace rill::test
