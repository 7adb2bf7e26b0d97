// tests/python/fluid_reference_programs.cc — fit_a_line and recognize_digits' conv net as
// Fluid 0.14's Python API builds them (names, variables, op slots and attributes, the
// startup program's initializers), written with the C++ builders (core/program/builder.h).
// test_same_program.py builds the same with rill.fluid and compares the serialized
// ProgramDescs byte for byte.
//   usage: rill_fluid_reference_programs DIR
//   writes DIR/fit_a_line.pb, fit_a_line_startup.pb, conv_net.pb, conv_net_startup.pb
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/program/builder.h"

namespace {

using rill::core::BlockBuilder;
using rill::core::ProgramBuilder;
using Dims = std::vector<int64_t>;

// Fluid's Python gives every op its role last: these programs' ops are all Forward (0).
void Write(rill::proto::ProgramDesc program, const std::string& path) {
  for (auto& block : *program.mutable_blocks()) {
    for (auto& op : *block.mutable_ops()) {
      auto* role = op.add_attrs();
      role->set_name("op_role");
      role->set_type(rill::proto::INT);
      role->set_i(0);
    }
  }
  std::ofstream out(path, std::ios::binary);
  out << program.SerializeAsString();
}

// What fluid.layers.data declares: the batch dimension first.
void Data(BlockBuilder& b, const std::string& name, int32_t dtype, Dims shape) {
  shape.insert(shape.begin(), -1);
  b.Var(name, dtype, shape);
}

// The startup program's initializers, which Fluid prepends: collected in creation order,
// added in reverse.
struct Startup {
  ProgramBuilder pb;
  std::vector<std::function<void(BlockBuilder&)>> ops;
  void Param(const std::string& name, const Dims& dims) { pb.block(0).Var(name, RILL_FP32, dims, true); }
  void Fill(const std::string& name, const Dims& dims, float value) {
    Param(name, dims);
    ops.push_back([=](BlockBuilder& b) {
      b.Op("fill_constant")
          .Output("Out", name)
          .Attr("shape", dims)
          .Attr("dtype", int32_t{RILL_FP32})
          .Attr("value", value)
          .Attr("force_cpu", false);
    });
  }
  void Xavier(const std::string& name, const Dims& dims) {  // fc's weights: fan_in, fan_out = dims
    Param(name, dims);
    const float limit = static_cast<float>(std::sqrt(6.0 / static_cast<double>(dims[0] + dims[1])));
    ops.push_back([=](BlockBuilder& b) {
      b.Op("uniform_random")
          .Output("Out", name)
          .Attr("shape", dims)
          .Attr("dtype", int32_t{RILL_FP32})
          .Attr("min", -limit)
          .Attr("max", limit)
          .Attr("seed", int32_t{0});
    });
  }
  void ConvNormal(const std::string& name, const Dims& dims) {  // conv2d's: N(0, 2 / (k^2 C))
    Param(name, dims);
    const float std = static_cast<float>(std::sqrt(2.0 / static_cast<double>(dims[2] * dims[2] * dims[1])));
    ops.push_back([=](BlockBuilder& b) {
      b.Op("gaussian_random")
          .Output("Out", name)
          .Attr("shape", dims)
          .Attr("dtype", int32_t{RILL_FP32})
          .Attr("mean", 0.0f)
          .Attr("std", std)
          .Attr("seed", int32_t{0});
    });
  }
  rill::proto::ProgramDesc Build() {
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) (*it)(pb.block(0));
    return pb.Build();
  }
};

// layers.fc with one input: mul, the bias's elementwise_add, and `act` when given.
std::string Fc(BlockBuilder& b, Startup& s, const std::string& layer, const std::string& in, int64_t in_width,
               int64_t size, const std::string& act) {
  const std::string w = layer + ".w_0", bias = layer + ".b_0";
  b.Var(w, RILL_FP32, {in_width, size}, true).Var(layer + ".tmp_0", RILL_FP32, {-1, size});
  s.Xavier(w, {in_width, size});
  b.Op("mul")
      .Input("X", in)
      .Input("Y", w)
      .Output("Out", layer + ".tmp_0")
      .Attr("x_num_col_dims", int32_t{1})
      .Attr("y_num_col_dims", int32_t{1});
  b.Var(bias, RILL_FP32, {size}, true).Var(layer + ".tmp_1", RILL_FP32, {-1, size});
  s.Fill(bias, {size}, 0.0f);
  b.Op("elementwise_add")
      .Input("X", layer + ".tmp_0")
      .Input("Y", bias)
      .Output("Out", layer + ".tmp_1")
      .Attr("axis", int32_t{1});
  if (act.empty()) return layer + ".tmp_1";
  b.Var(layer + ".tmp_2", RILL_FP32, {-1, size});
  b.Op(act).Input("X", layer + ".tmp_1").Output("Out", layer + ".tmp_2");
  return layer + ".tmp_2";
}

void FitALine(const std::string& dir) {
  ProgramBuilder main;
  Startup startup;
  BlockBuilder& b = main.block(0);
  Data(b, "x", RILL_FP32, {13});
  Data(b, "y", RILL_FP32, {1});
  const std::string y_predict = Fc(b, startup, "fc_0", "x", 13, 1, "");
  b.Var("square_error_cost_0.tmp_0", RILL_FP32, {-1, 1});
  b.Op("elementwise_sub").Input("X", y_predict).Input("Y", "y").Output("Out", "square_error_cost_0.tmp_0");
  b.Var("square_error_cost_0.tmp_1", RILL_FP32, {-1, 1});
  b.Op("square").Input("X", "square_error_cost_0.tmp_0").Output("Out", "square_error_cost_0.tmp_1");
  b.Var("mean_0.tmp_0", RILL_FP32, {1});
  b.Op("mean").Input("X", "square_error_cost_0.tmp_1").Output("Out", "mean_0.tmp_0");
  Write(main.Build(), dir + "/fit_a_line.pb");
  Write(startup.Build(), dir + "/fit_a_line_startup.pb");
}

// nets.simple_img_conv_pool: conv2d (stride 1, no padding) with bias and relu, then 2x2 max
// pooling of stride 2. `hw`: the input's height and width.
std::string ConvPool(BlockBuilder& b, Startup& s, int index, const std::string& in, int64_t channels, int64_t hw,
                     int64_t filters, int64_t k) {
  const std::string conv = "conv2d_" + std::to_string(index), pool = "pool2d_" + std::to_string(index);
  const int64_t out = hw - k + 1;
  const Dims out_dims{-1, filters, out, out};
  b.Var(conv + ".w_0", RILL_FP32, {filters, channels, k, k}, true).Var(conv + ".tmp_0", RILL_FP32, out_dims);
  s.ConvNormal(conv + ".w_0", {filters, channels, k, k});
  b.Op("conv2d")
      .Input("Input", in)
      .Input("Filter", conv + ".w_0")
      .Output("Output", conv + ".tmp_0")
      .Attr("strides", Dims{1, 1})
      .Attr("paddings", Dims{0, 0})
      .Attr("dilations", Dims{1, 1})
      .Attr("groups", int32_t{1});
  b.Var(conv + ".b_0", RILL_FP32, {filters}, true).Var(conv + ".tmp_1", RILL_FP32, out_dims);
  s.Fill(conv + ".b_0", {filters}, 0.0f);
  b.Op("elementwise_add")
      .Input("X", conv + ".tmp_0")
      .Input("Y", conv + ".b_0")
      .Output("Out", conv + ".tmp_1")
      .Attr("axis", int32_t{1});
  b.Var(conv + ".tmp_2", RILL_FP32, out_dims);
  b.Op("relu").Input("X", conv + ".tmp_1").Output("Out", conv + ".tmp_2");
  b.Var(pool + ".tmp_0", RILL_FP32, {-1, filters, out / 2, out / 2});
  b.Op("pool2d")
      .Input("X", conv + ".tmp_2")
      .Output("Out", pool + ".tmp_0")
      .Attr("pooling_type", "max")
      .Attr("ksize", Dims{2, 2})
      .Attr("global_pooling", false)
      .Attr("strides", Dims{2, 2})
      .Attr("paddings", Dims{0, 0})
      .Attr("ceil_mode", false);
  return pool + ".tmp_0";
}

// recognize_digits' conv net (Paddle book chapter 2) with its loss and accuracy.
void ConvNet(const std::string& dir) {
  ProgramBuilder main;
  Startup startup;
  BlockBuilder& b = main.block(0);
  Data(b, "img", RILL_FP32, {1, 28, 28});
  Data(b, "label", RILL_INT64, {1});
  const std::string pool0 = ConvPool(b, startup, 0, "img", 1, 28, 20, 5);
  // layers.batch_norm: scale (w_0), bias (b_0), running mean (w_1) and variance (w_2).
  const Dims c{20};
  b.Var("batch_norm_0.w_0", RILL_FP32, c, true).Var("batch_norm_0.b_0", RILL_FP32, c, true);
  b.Var("batch_norm_0.w_1", RILL_FP32, c, true).Var("batch_norm_0.w_2", RILL_FP32, c, true);
  startup.Fill("batch_norm_0.w_0", c, 1.0f);
  startup.Fill("batch_norm_0.b_0", c, 0.0f);
  startup.Fill("batch_norm_0.w_1", c, 0.0f);
  startup.Fill("batch_norm_0.w_2", c, 1.0f);
  b.Var("batch_norm_0.tmp_0", RILL_FP32, c).Var("batch_norm_0.tmp_1", RILL_FP32, c);
  b.Var("batch_norm_0.tmp_2", RILL_FP32, {-1, 20, 12, 12});
  b.Op("batch_norm")
      .Input("X", pool0)
      .Input("Scale", "batch_norm_0.w_0")
      .Input("Bias", "batch_norm_0.b_0")
      .Input("Mean", "batch_norm_0.w_1")
      .Input("Variance", "batch_norm_0.w_2")
      .Output("Y", "batch_norm_0.tmp_2")
      .Output("MeanOut", "batch_norm_0.w_1")
      .Output("VarianceOut", "batch_norm_0.w_2")
      .Output("SavedMean", "batch_norm_0.tmp_0")
      .Output("SavedVariance", "batch_norm_0.tmp_1")
      .Attr("momentum", 0.9f)
      .Attr("epsilon", 1e-5f)
      .Attr("is_test", false);
  const std::string pool1 = ConvPool(b, startup, 1, "batch_norm_0.tmp_2", 20, 12, 50, 5);
  const std::string prediction = Fc(b, startup, "fc_0", pool1, 50 * 4 * 4, 10, "softmax");
  b.Var("cross_entropy_0.tmp_0", RILL_FP32, {-1, 1});
  b.Op("cross_entropy")
      .Input("X", prediction)
      .Input("Label", "label")
      .Output("Y", "cross_entropy_0.tmp_0")
      .Attr("soft_label", false);
  b.Var("mean_0.tmp_0", RILL_FP32, {1});
  b.Op("mean").Input("X", "cross_entropy_0.tmp_0").Output("Out", "mean_0.tmp_0");
  // layers.accuracy: top_k, then accuracy with its correct and total counts.
  b.Var("top_k_0.tmp_0", RILL_FP32, {-1, 1}).Var("top_k_0.tmp_1", RILL_INT64, {-1, 1});
  b.Op("top_k")
      .Input("X", prediction)
      .Output("Out", "top_k_0.tmp_0")
      .Output("Indices", "top_k_0.tmp_1")
      .Attr("k", int32_t{1});
  b.Var("accuracy_0.tmp_0", RILL_FP32, {1}).Var("accuracy_0.tmp_1", RILL_INT64, {1});
  b.Var("accuracy_0.tmp_2", RILL_INT64, {1});
  b.Op("accuracy")
      .Input("Out", "top_k_0.tmp_0")
      .Input("Indices", "top_k_0.tmp_1")
      .Input("Label", "label")
      .Output("Accuracy", "accuracy_0.tmp_0")
      .Output("Correct", "accuracy_0.tmp_1")
      .Output("Total", "accuracy_0.tmp_2");
  Write(main.Build(), dir + "/conv_net.pb");
  Write(startup.Build(), dir + "/conv_net_startup.pb");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  FitALine(argv[1]);
  ConvNet(argv[1]);
  return 0;
}
