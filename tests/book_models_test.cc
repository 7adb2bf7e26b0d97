// Paddle's book models end to end (issue 45, point 5): written as programs by our own
// builder, trained on synthetic data with a known answer to a stated accuracy, saved in
// save_inference_model's layout and served by `rill run DIR`: recognize_digits' MLP and conv
// net, and a small residual net. word2vec, trained through the parameter servers with sparse
// updates, is examples/word2vec/train_dist.sh (ctest word2vec_sparse_distributed_...).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
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

// A model of the book: its trained parameters (name, dims; filled by `init`), its
// batch_norm running statistics ([C] each), and its forward pass from "img" to "prob".
struct Model {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  std::vector<std::pair<std::string, int64_t>> running;  // batch_norm means and variances
  std::function<void(core::BlockBuilder&, bool is_test)> forward;
};

// conv2d (no bias) + batch_norm, as Paddle's book models write a conv layer.
void ConvBn(core::BlockBuilder& b, const std::string& in, const std::string& name, bool is_test) {
  b.Op("conv2d").Input("Input", in).Input("Filter", name + "_w").Output("Output", name + "_conv")
      .Attr("paddings", std::vector<int64_t>{1, 1});
  b.Op("batch_norm").Input("X", name + "_conv").Input("Scale", name + "_scale").Input("Bias", name + "_bias")
      .Input("Mean", name + "_mean").Input("Variance", name + "_var").Output("Y", name)
      .Output("MeanOut", name + "_mean").Output("VarianceOut", name + "_var")
      .Output("SavedMean", name + "_saved_mean").Output("SavedVariance", name + "_saved_var").Attr("is_test", is_test);
}

void ConvBnParams(Model& m, const std::string& name, int64_t out, int64_t in) {
  m.params.push_back({name + "_w", {out, in, 3, 3}});
  m.params.push_back({name + "_scale", {out}});
  m.params.push_back({name + "_bias", {out}});
  m.running.push_back({name + "_mean", out});
  m.running.push_back({name + "_var", out});
}

// recognize_digits' conv net: conv + batch_norm + relu + pool2d 2x2 + fc + softmax.
Model ConvNet() {
  Model m;
  ConvBnParams(m, "c1", 4, 1);
  m.params.push_back({"fc_w", {64, 4}});
  m.params.push_back({"fc_b", {4}});
  m.forward = [](core::BlockBuilder& b, bool is_test) {
    ConvBn(b, "img", "c1", is_test);
    b.Op("relu").Input("X", "c1").Output("Out", "act");
    b.Op("pool2d").Input("X", "act").Output("Out", "pool").Attr("ksize", std::vector<int64_t>{2, 2})
        .Attr("strides", std::vector<int64_t>{2, 2});
    b.Op("mul").Input("X", "pool").Input("Y", "fc_w").Output("Out", "fc");
    b.Op("elementwise_add").Input("X", "fc").Input("Y", "fc_b").Output("Out", "logits").Attr("axis", int32_t{1});
    b.Op("softmax").Input("X", "logits").Output("Out", "prob");
  };
  return m;
}

// recognize_digits' MLP: two hidden fc layers with relu, then fc and softmax.
Model Mlp() {
  Model m;
  m.params = {{"h1_w", {64, 32}}, {"h1_b", {32}}, {"h2_w", {32, 32}}, {"h2_b", {32}}, {"fc_w", {32, 4}}, {"fc_b", {4}}};
  m.forward = [](core::BlockBuilder& b, bool) {
    std::string x = "img";
    for (const char* layer : {"h1", "h2", "fc"}) {
      const std::string l = layer;
      b.Op("mul").Input("X", x).Input("Y", l + "_w").Output("Out", l + "_mul");
      b.Op("elementwise_add").Input("X", l + "_mul").Input("Y", l + "_b").Output("Out", l + "_add").Attr("axis", int32_t{1});
      if (l != "fc") b.Op("relu").Input("X", l + "_add").Output("Out", l);
      x = l;
    }
    b.Op("softmax").Input("X", "fc_add").Output("Out", "prob");
  };
  return m;
}

// A small residual net: conv-bn-relu, a residual block (conv-bn-relu, conv-bn, the
// shortcut added, relu), global average pooling, fc, softmax.
Model ResidualNet() {
  Model m;
  ConvBnParams(m, "stem", 8, 1);
  ConvBnParams(m, "r1", 8, 8);
  ConvBnParams(m, "r2", 8, 8);
  m.params.push_back({"fc_w", {8, 4}});
  m.params.push_back({"fc_b", {4}});
  m.forward = [](core::BlockBuilder& b, bool is_test) {
    ConvBn(b, "img", "stem", is_test);
    b.Op("relu").Input("X", "stem").Output("Out", "stem_act");
    ConvBn(b, "stem_act", "r1", is_test);
    b.Op("relu").Input("X", "r1").Output("Out", "r1_act");
    ConvBn(b, "r1_act", "r2", is_test);
    b.Op("elementwise_add").Input("X", "r2").Input("Y", "stem_act").Output("Out", "res");
    b.Op("relu").Input("X", "res").Output("Out", "res_act");
    b.Op("pool2d").Input("X", "res_act").Output("Out", "pool").Attr("pooling_type", std::string("avg"))
        .Attr("global_pooling", true);
    b.Op("mul").Input("X", "pool").Input("Y", "fc_w").Output("Out", "fc");
    b.Op("elementwise_add").Input("X", "fc").Input("Y", "fc_b").Output("Out", "logits").Attr("axis", int32_t{1});
    b.Op("softmax").Input("X", "logits").Output("Out", "prob");
  };
  return m;
}

// Trains `m` with Adam (backward appended by AppendBackward) on synthetic digits for
// `steps` steps, checks the loss fell and the training accuracy reached `accuracy`, then
// saves it as save_inference_model does and checks `rill run DIR` classifies 200 fresh
// images at least that well.
void TrainSaveAndServe(const Model& m, const std::string& name, int steps, float lr, float accuracy) {
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  for (const auto& [p, dims] : m.params) main.Var(p, RILL_FP32, dims, true);
  for (const auto& [r, c] : m.running) main.Var(r, RILL_FP32, {c}, true);
  m.forward(main, false);
  main.Op("cross_entropy").Input("X", "prob").Input("Label", "label").Output("Y", "ce");
  main.Op("mean").Input("X", "ce").Output("Out", "loss");
  main.Op("top_k").Input("X", "prob").Output("Out", "top").Output("Indices", "top_idx").Attr("k", int64_t{1});
  main.Op("accuracy").Input("Out", "top").Input("Indices", "top_idx").Input("Label", "label").Output("Accuracy", "acc");
  rill::proto::ProgramDesc train = pb.Build();
  std::vector<std::string> trained;
  for (const auto& [p, dims] : m.params) trained.push_back(p);
  const auto grads = core::AppendBackward(train, ShippedRegistry(), "loss", trained);
  ASSERT_EQ(grads.size(), m.params.size());
  core::BlockBuilder train_block(train.mutable_blocks(0));
  for (const auto& pg : grads) {
    const std::string p = pg.param;
    train_block.Op("adam").Input("Param", p).Input("Grad", pg.grad).Input("LearningRate", "lr").Input("Moment1", p + "_m1")
        .Input("Moment2", p + "_m2").Input("Beta1Pow", p + "_b1").Input("Beta2Pow", p + "_b2").Output("ParamOut", p)
        .Output("Moment1Out", p + "_m1").Output("Moment2Out", p + "_m2").Output("Beta1PowOut", p + "_b1")
        .Output("Beta2PowOut", p + "_b2");
  }
  core::ValidateProgramOrThrow(train, ShippedRegistry());

  // Parameters and optimizer state, as a startup program would set them.
  std::mt19937 rng(45);
  auto scope = core::Scope::NewRoot();
  const auto set = [&](const std::string& var, std::vector<int64_t> dims, const std::function<float()>& value) {
    core::Tensor* t = scope->Var(var)->GetMutableTensor();
    float* p = static_cast<float*>(t->Allocate(RILL_FP32, dims));
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = value();
  };
  std::normal_distribution<float> init(0, 0.3f);
  const auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const auto& [p, dims] : m.params) {
    set(p, dims, [&, p = p] { return ends_with(p, "_scale") ? 1.0f : ends_with(p, "_bias") || ends_with(p, "_b") ? 0.0f : init(rng); });
    set(p + "_m1", dims, [] { return 0.0f; });
    set(p + "_m2", dims, [] { return 0.0f; });
    set(p + "_b1", {1}, [] { return 0.9f; });
    set(p + "_b2", {1}, [] { return 0.999f; });
  }
  for (const auto& [r, c] : m.running) set(r, {c}, [var = ends_with(r, "_var")] { return var ? 1.0f : 0.0f; });
  set("lr", {1}, [lr] { return lr; });

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
  core::ProgramBuilder infer;
  core::BlockBuilder& ib = infer.block(0);
  ib.Var("feed", RILL_FP32, {}, true).Var("fetch", RILL_FP32, {}, true).Var("img", RILL_FP32, {-1, 1, 8, 8});
  ib.desc()->mutable_vars(0)->mutable_type()->set_type(rill::proto::VarType::FEED_MINIBATCH);
  ib.desc()->mutable_vars(1)->mutable_type()->set_type(rill::proto::VarType::FETCH_LIST);
  std::vector<std::string> saved_vars;
  for (const auto& [p, dims] : m.params) {
    ib.Var(p, RILL_FP32, dims, true);
    saved_vars.push_back(p);
  }
  for (const auto& [r, c] : m.running) {
    ib.Var(r, RILL_FP32, {c}, true);
    saved_vars.push_back(r);
  }
  ib.Op("feed").Input("X", "feed").Output("Out", "img").Attr("col", int32_t{0});
  m.forward(ib, true);
  ib.Op("fetch").Input("X", "prob").Output("Out", "fetch").Attr("col", int32_t{0});
  core::SaveProgram(infer.Build(), dir + "/__model__", core::ProgramFormat::kBinary);
  for (const auto& var : saved_vars) {
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
  TrainSaveAndServe(Mlp(), "recognize_digits_mlp", 150, 0.01f, 0.95f);
}

TEST(BookModels, RecognizeDigitsConvNetTrainsWithAdamAndServesFromItsSavedModel) {
  TrainSaveAndServe(ConvNet(), "recognize_digits_conv", 150, 0.02f, 0.95f);
}

TEST(BookModels, ResidualNetTrainsWithAdamAndServesFromItsSavedModel) {
  TrainSaveAndServe(ResidualNet(), "residual_net", 150, 0.02f, 0.95f);
}

}  // namespace
}  // namespace rill::test
