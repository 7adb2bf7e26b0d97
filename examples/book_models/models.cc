#include "models.h"

#include <cmath>

#include "core/program/backward.h"

namespace rill::examples {
namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// fc as Fluid's layers.fc writes it: mul, elementwise_add of the bias, and the activation,
// into `out` (default: the layer's name).
void Fc(BookModel& m, const std::string& name, int64_t in, int64_t out) {
  m.params.push_back({name + "_w", {in, out}});
  m.params.push_back({name + "_b", {out}});
}
void FcOps(core::BlockBuilder& b, const std::string& in, const std::string& name, const std::string& act,
           const std::string& out = "") {
  const std::string result = out.empty() ? name : out;
  b.Op("mul").Input("X", in).Input("Y", name + "_w").Output("Out", name + "_mul");
  b.Op("elementwise_add")
      .Input("X", name + "_mul")
      .Input("Y", name + "_b")
      .Output("Out", act.empty() ? result : name + "_add")
      .Attr("axis", int32_t{1});
  if (!act.empty()) b.Op(act).Input("X", name + "_add").Output("Out", result);
}

// batch_norm over `name`_conv into `name`, with its scale, bias and running statistics.
void BatchNorm(BookModel& m, const std::string& name, int64_t channels) {
  m.params.push_back({name + "_scale", {channels}});
  m.params.push_back({name + "_bias", {channels}});
  m.running.push_back({name + "_mean", channels});
  m.running.push_back({name + "_var", channels});
}
void BatchNormOps(core::BlockBuilder& b, const std::string& in, const std::string& name, bool is_test) {
  b.Op("batch_norm")
      .Input("X", in)
      .Input("Scale", name + "_scale")
      .Input("Bias", name + "_bias")
      .Input("Mean", name + "_mean")
      .Input("Variance", name + "_var")
      .Output("Y", name)
      .Output("MeanOut", name + "_mean")
      .Output("VarianceOut", name + "_var")
      .Output("SavedMean", name + "_saved_mean")
      .Output("SavedVariance", name + "_saved_var")
      .Attr("is_test", is_test);
}

void ConvOp(core::BlockBuilder& b, const std::string& in, const std::string& filter, const std::string& out,
            int64_t padding) {
  b.Op("conv2d")
      .Input("Input", in)
      .Input("Filter", filter)
      .Output("Output", out)
      .Attr("paddings", std::vector<int64_t>{padding, padding});
}

// A 3x3 conv2d (no bias) and batch_norm, as the residual net writes a conv layer.
void ConvBn(BookModel& m, const std::string& name, int64_t out, int64_t in) {
  m.params.push_back({name + "_w", {out, in, 3, 3}});
  BatchNorm(m, name, out);
}
void ConvBnOps(core::BlockBuilder& b, const std::string& in, const std::string& name, bool is_test) {
  ConvOp(b, in, name + "_w", name + "_conv", 1);
  BatchNormOps(b, name + "_conv", name, is_test);
}

// The size a conv of `kernel` with `padding` (stride 1) leaves, then 2x2 pooling.
int64_t ConvPoolSize(int64_t size, int64_t kernel, int64_t padding) { return (size + 2 * padding - kernel + 1) / 2; }

}  // namespace

BookModel Mlp(std::vector<int64_t> image, std::vector<int64_t> hidden, int64_t classes) {
  BookModel m;
  m.image = image;
  m.classes = classes;
  int64_t width = image[0] * image[1] * image[2];
  for (size_t i = 0; i < hidden.size(); ++i) {
    Fc(m, "h" + std::to_string(i + 1), width, hidden[i]);
    width = hidden[i];
  }
  Fc(m, "fc", width, classes);
  const size_t layers = hidden.size();
  m.forward = [layers](core::BlockBuilder& b, bool) {
    std::string x = "img";
    for (size_t i = 0; i < layers; ++i) {
      const std::string name = "h" + std::to_string(i + 1);
      FcOps(b, x, name, "relu");
      x = name;
    }
    FcOps(b, x, "fc", "softmax", "prob");
  };
  return m;
}

BookModel ConvNet(std::vector<int64_t> image, std::pair<int64_t, int64_t> filters, int64_t kernel, int64_t padding,
                  int64_t classes) {
  BookModel m;
  m.image = image;
  m.classes = classes;
  m.params.push_back({"conv1_w", {filters.first, image[0], kernel, kernel}});
  m.params.push_back({"conv1_b", {filters.first}});
  BatchNorm(m, "bn", filters.first);
  m.params.push_back({"conv2_w", {filters.second, filters.first, kernel, kernel}});
  m.params.push_back({"conv2_b", {filters.second}});
  const int64_t h = ConvPoolSize(ConvPoolSize(image[1], kernel, padding), kernel, padding);
  const int64_t w = ConvPoolSize(ConvPoolSize(image[2], kernel, padding), kernel, padding);
  Fc(m, "fc", filters.second * h * w, classes);
  m.forward = [padding](core::BlockBuilder& b, bool is_test) {
    // simple_img_conv_pool: conv2d, its bias (elementwise_add on axis 1), relu, max pool 2x2.
    const auto conv_pool = [&](const std::string& in, const std::string& name) {
      ConvOp(b, in, name + "_w", name + "_conv", padding);
      b.Op("elementwise_add")
          .Input("X", name + "_conv")
          .Input("Y", name + "_b")
          .Output("Out", name + "_add")
          .Attr("axis", int32_t{1});
      b.Op("relu").Input("X", name + "_add").Output("Out", name + "_act");
      b.Op("pool2d")
          .Input("X", name + "_act")
          .Output("Out", name)
          .Attr("pooling_type", std::string("max"))
          .Attr("ksize", std::vector<int64_t>{2, 2})
          .Attr("strides", std::vector<int64_t>{2, 2});
    };
    conv_pool("img", "conv1");
    BatchNormOps(b, "conv1", "bn", is_test);
    conv_pool("bn", "conv2");
    FcOps(b, "conv2", "fc", "softmax", "prob");
  };
  return m;
}

BookModel ResidualNet(std::vector<int64_t> image, int64_t channels, int blocks, int64_t classes) {
  BookModel m;
  m.image = image;
  m.classes = classes;
  ConvBn(m, "stem", channels, image[0]);
  for (int i = 0; i < blocks; ++i) {
    ConvBn(m, "r" + std::to_string(i) + "a", channels, channels);
    ConvBn(m, "r" + std::to_string(i) + "b", channels, channels);
  }
  Fc(m, "fc", channels, classes);
  m.forward = [blocks](core::BlockBuilder& b, bool is_test) {
    ConvBnOps(b, "img", "stem", is_test);
    b.Op("relu").Input("X", "stem").Output("Out", "stem_act");
    std::string x = "stem_act";
    for (int i = 0; i < blocks; ++i) {
      const std::string r = "r" + std::to_string(i);
      ConvBnOps(b, x, r + "a", is_test);
      b.Op("relu").Input("X", r + "a").Output("Out", r + "a_act");
      ConvBnOps(b, r + "a_act", r + "b", is_test);
      b.Op("elementwise_add").Input("X", r + "b").Input("Y", x).Output("Out", r + "_sum");
      b.Op("relu").Input("X", r + "_sum").Output("Out", r + "_out");
      x = r + "_out";
    }
    b.Op("pool2d")
        .Input("X", x)
        .Output("Out", "pool")
        .Attr("pooling_type", std::string("avg"))
        .Attr("global_pooling", true);
    FcOps(b, "pool", "fc", "softmax", "prob");
  };
  return m;
}

proto::ProgramDesc TrainingProgram(const BookModel& m, const core::Registry& registry) {
  core::ProgramBuilder pb;
  core::BlockBuilder& main = pb.block(0);
  for (const auto& [p, dims] : m.params) main.Var(p, RILL_FP32, dims, true);
  for (const auto& [r, c] : m.running) main.Var(r, RILL_FP32, {c}, true);
  m.forward(main, false);
  main.Op("cross_entropy").Input("X", "prob").Input("Label", "label").Output("Y", "ce");
  main.Op("mean").Input("X", "ce").Output("Out", "loss");
  main.Op("top_k").Input("X", "prob").Output("Out", "top").Output("Indices", "top_idx").Attr("k", int64_t{1});
  main.Op("accuracy").Input("Out", "top").Input("Indices", "top_idx").Input("Label", "label").Output("Accuracy", "acc");
  proto::ProgramDesc train = pb.Build();
  std::vector<std::string> trained;
  for (const auto& [p, dims] : m.params) trained.push_back(p);
  const auto grads = core::AppendBackward(train, registry, "loss", trained);
  core::BlockBuilder block(train.mutable_blocks(0));
  for (const auto& pg : grads) {
    const std::string& p = pg.param;
    block.Op("adam")
        .Input("Param", p)
        .Input("Grad", pg.grad)
        .Input("LearningRate", "lr")
        .Input("Moment1", p + "_m1")
        .Input("Moment2", p + "_m2")
        .Input("Beta1Pow", p + "_b1")
        .Input("Beta2Pow", p + "_b2")
        .Output("ParamOut", p)
        .Output("Moment1Out", p + "_m1")
        .Output("Moment2Out", p + "_m2")
        .Output("Beta1PowOut", p + "_b1")
        .Output("Beta2PowOut", p + "_b2");
  }
  return train;
}

proto::ProgramDesc InferenceProgram(const BookModel& m) {
  core::ProgramBuilder infer;
  core::BlockBuilder& b = infer.block(0);
  std::vector<int64_t> img{-1};
  img.insert(img.end(), m.image.begin(), m.image.end());
  b.Var("feed", RILL_FP32, {}, true).Var("fetch", RILL_FP32, {}, true).Var("img", RILL_FP32, img);
  b.desc()->mutable_vars(0)->mutable_type()->set_type(proto::VarType::FEED_MINIBATCH);
  b.desc()->mutable_vars(1)->mutable_type()->set_type(proto::VarType::FETCH_LIST);
  for (const auto& [p, dims] : m.params) b.Var(p, RILL_FP32, dims, true);
  for (const auto& [r, c] : m.running) b.Var(r, RILL_FP32, {c}, true);
  b.Op("feed").Input("X", "feed").Output("Out", "img").Attr("col", int32_t{0});
  m.forward(b, true);
  b.Op("fetch").Input("X", "prob").Output("Out", "fetch").Attr("col", int32_t{0});
  return infer.Build();
}

void Initialize(const BookModel& m, core::Scope& scope, float lr, std::mt19937& rng) {
  const auto set = [&](const std::string& var, std::vector<int64_t> dims, const std::function<float()>& value) {
    core::Tensor* t = scope.Var(var)->GetMutableTensor();
    float* p = static_cast<float*>(t->Allocate(RILL_FP32, dims));
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = value();
  };
  for (const auto& [p, dims] : m.params) {
    int64_t fan_in = dims.size() == 4 ? dims[1] * dims[2] * dims[3] : dims[0];
    std::normal_distribution<float> weight(0, std::sqrt(2.0f / static_cast<float>(fan_in)));
    const bool scale = EndsWith(p, "_scale"), bias = EndsWith(p, "_bias") || EndsWith(p, "_b");
    set(p, dims, [&] { return scale ? 1.0f : bias ? 0.0f : weight(rng); });
    set(p + "_m1", dims, [] { return 0.0f; });
    set(p + "_m2", dims, [] { return 0.0f; });
    set(p + "_b1", {1}, [] { return 0.9f; });
    set(p + "_b2", {1}, [] { return 0.999f; });
  }
  for (const auto& [r, c] : m.running) set(r, {c}, [var = EndsWith(r, "_var")] { return var ? 1.0f : 0.0f; });
  set("lr", {1}, [lr] { return lr; });
}

std::vector<std::string> SavedVariables(const BookModel& m) {
  std::vector<std::string> names;
  for (const auto& [p, dims] : m.params) names.push_back(p);
  for (const auto& [r, c] : m.running) names.push_back(r);
  return names;
}

}  // namespace rill::examples
