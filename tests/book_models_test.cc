// Paddle's book models end to end (issue 45, point 5): written as programs by our own
// builder, trained on synthetic data with a known answer to a stated accuracy, saved in
// save_inference_model's layout and served by `rill run DIR`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/cli/npy.h"
#include "core/io/lod_tensor_file.h"
#include "core/program/backward.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "core/runtime/executor.h"
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

// The conv net: conv2d 3x3 (4 filters) + batch_norm + relu + pool2d 2x2 + fc (mul and
// elementwise_add) + softmax, as recognize_digits' conv net is made.
void ConvNet(core::BlockBuilder& b, bool is_test) {
  b.Op("conv2d").Input("Input", "img").Input("Filter", "conv_w").Output("Output", "conv")
      .Attr("paddings", std::vector<int64_t>{1, 1});
  b.Op("batch_norm").Input("X", "conv").Input("Scale", "bn_scale").Input("Bias", "bn_bias").Input("Mean", "bn_mean")
      .Input("Variance", "bn_var").Output("Y", "bn").Output("MeanOut", "bn_mean").Output("VarianceOut", "bn_var")
      .Output("SavedMean", "bn_saved_mean").Output("SavedVariance", "bn_saved_var").Attr("is_test", is_test);
  b.Op("relu").Input("X", "bn").Output("Out", "act");
  b.Op("pool2d").Input("X", "act").Output("Out", "pool").Attr("ksize", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2});
  b.Op("mul").Input("X", "pool").Input("Y", "fc_w").Output("Out", "fc");
  b.Op("elementwise_add").Input("X", "fc").Input("Y", "fc_b").Output("Out", "logits").Attr("axis", int32_t{1});
  b.Op("softmax").Input("X", "logits").Output("Out", "prob");
}

const std::vector<std::pair<std::string, std::vector<int64_t>>> kParams = {
    {"conv_w", {4, 1, 3, 3}}, {"bn_scale", {4}}, {"bn_bias", {4}}, {"fc_w", {64, 4}}, {"fc_b", {4}}};

TEST(BookModels, RecognizeDigitsConvNetTrainsWithAdamAndServesFromItsSavedModel) {
  // Training program: forward, loss and accuracy, backward, Adam for each parameter.
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  for (const auto& [name, dims] : kParams) main.Var(name, RILL_FP32, dims, true);
  for (const char* name : {"bn_mean", "bn_var"}) main.Var(name, RILL_FP32, {4}, true);
  ConvNet(main, false);
  main.Op("cross_entropy").Input("X", "prob").Input("Label", "label").Output("Y", "ce");
  main.Op("mean").Input("X", "ce").Output("Out", "loss");
  main.Op("top_k").Input("X", "prob").Output("Out", "top").Output("Indices", "top_idx").Attr("k", int64_t{1});
  main.Op("accuracy").Input("Out", "top").Input("Indices", "top_idx").Input("Label", "label").Output("Accuracy", "acc");
  rill::proto::ProgramDesc train = pb.Build();
  std::vector<std::string> trained;
  for (const auto& [name, dims] : kParams) trained.push_back(name);
  const auto grads = core::AppendBackward(train, ShippedRegistry(), "loss", trained);
  ASSERT_EQ(grads.size(), kParams.size());
  core::BlockBuilder train_block(train.mutable_blocks(0));
  for (const auto& pg : grads) {
    const std::string p = pg.param;
    train_block.Op("adam").Input("Param", p).Input("Grad", pg.grad).Input("LearningRate", "lr").Input("Moment1", p + "_m1")
        .Input("Moment2", p + "_m2").Input("Beta1Pow", p + "_b1").Input("Beta2Pow", p + "_b2").Output("ParamOut", p)
        .Output("Moment1Out", p + "_m1").Output("Moment2Out", p + "_m2").Output("Beta1PowOut", p + "_b1")
        .Output("Beta2PowOut", p + "_b2");
  }
  core::ValidateProgramOrThrow(train, ShippedRegistry());

  // Parameters and optimizer state, set up as a startup program would.
  std::mt19937 rng(45);
  auto scope = core::Scope::NewRoot();
  const auto set = [&](const std::string& name, std::vector<int64_t> dims, auto value) {
    core::Tensor* t = scope->Var(name)->GetMutableTensor();
    float* p = static_cast<float*>(t->Allocate(RILL_FP32, dims));
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = value(i);
  };
  std::normal_distribution<float> init(0, 0.3f);
  for (const auto& [name, dims] : kParams) {
    set(name, dims, [&](int64_t) { return name == "bn_scale" ? 1.0f : name == "bn_bias" || name == "fc_b" ? 0.0f : init(rng); });
    set(name + "_m1", dims, [](int64_t) { return 0.0f; });
    set(name + "_m2", dims, [](int64_t) { return 0.0f; });
    set(name + "_b1", {1}, [](int64_t) { return 0.9f; });
    set(name + "_b2", {1}, [](int64_t) { return 0.999f; });
  }
  set("bn_mean", {4}, [](int64_t) { return 0.0f; });
  set("bn_var", {4}, [](int64_t) { return 1.0f; });
  set("lr", {1}, [](int64_t) { return 0.02f; });

  core::Executor exec(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>(train));
  float first_loss = 0, last_acc = 0;
  for (int step = 0; step < 150; ++step) {
    Batch b = Digits(32, rng);
    *scope->Var("img")->GetMutableTensor() = b.images;
    *scope->Var("label")->GetMutableTensor() = b.labels;
    exec.Run(0, scope);
    if (step == 0) first_loss = scope->FindVar("loss")->GetTensor()->data_as<float>()[0];
    last_acc = scope->FindVar("acc")->GetTensor()->data_as<float>()[0];
  }
  const float last_loss = scope->FindVar("loss")->GetTensor()->data_as<float>()[0];
  EXPECT_LT(last_loss, first_loss / 4) << "loss " << first_loss << " -> " << last_loss;
  EXPECT_GE(last_acc, 0.95f) << "training accuracy after 150 steps";

  // Saved as save_inference_model saves it: __model__ (feed, the net with is_test, fetch)
  // and a file per parameter, batch_norm's running statistics included.
  const std::string dir = TempPath("recognize_digits_conv");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  core::ProgramBuilder infer;
  core::BlockBuilder& ib = infer.block(0);
  ib.Var("feed", RILL_FP32, {}, true).Var("fetch", RILL_FP32, {}, true).Var("img", RILL_FP32, {-1, 1, 8, 8});
  rill::proto::BlockDesc* desc = ib.desc();
  desc->mutable_vars(0)->mutable_type()->set_type(rill::proto::VarType::FEED_MINIBATCH);
  desc->mutable_vars(1)->mutable_type()->set_type(rill::proto::VarType::FETCH_LIST);
  for (const auto& [name, dims] : kParams) ib.Var(name, RILL_FP32, dims, true);
  for (const char* name : {"bn_mean", "bn_var"}) ib.Var(name, RILL_FP32, {4}, true);
  ib.Op("feed").Input("X", "feed").Output("Out", "img").Attr("col", int32_t{0});
  ConvNet(ib, true);
  ib.Op("fetch").Input("X", "prob").Output("Out", "fetch").Attr("col", int32_t{0});
  core::SaveProgram(infer.Build(), dir + "/__model__", core::ProgramFormat::kBinary);
  for (const char* name : {"conv_w", "bn_scale", "bn_bias", "bn_mean", "bn_var", "fc_w", "fc_b"}) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    core::WriteLodTensor(out, *scope->FindVar(name)->GetTensor(), false, name);
  }
  Batch test = Digits(200, rng);
  const std::string images = TempPath("digits.npy");
  core::WriteNpy(test.images, images);
  const std::string saved = TempPath("digits_out");
  const CommandResult r = RunRill({"run", dir, "--feed", "img=" + images, "--save", saved});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const core::Tensor prob = core::ReadNpy(saved + "/prob.npy");
  ASSERT_EQ(prob.dims().ToVector(), (std::vector<int64_t>{200, 4}));
  int correct = 0;
  for (int i = 0; i < 200; ++i) {
    const float* row = prob.data_as<float>() + i * 4;
    correct += std::max_element(row, row + 4) - row == test.labels.data_as<int64_t>()[i];
  }
  EXPECT_GE(correct, 190) << "the served model's accuracy on 200 fresh images";
}

}  // namespace
}  // namespace rill::test
