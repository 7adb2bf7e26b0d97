// The CUDA kernels against the CPU kernels (the reference): each case runs one op, its
// backward pass and the loss mean(out^2) once on the CPU and once with the executor placed
// on CUDA:0, from the same inputs, and compares every output and gradient. Ops without a
// CUDA kernel in a chain run on the CPU, so the runs also exercise moving tensors between
// host and device. Without a CUDA device every test here reports itself skipped, with why.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "core/program/backward.h"
#include "core/program/validate.h"
#include "cuda_available.h"
#include "models.h"
#include "op_fixture.h"

namespace rill::test {
namespace {

struct CudaCase {
  std::string name;
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;  // fp32 parameters
  std::function<void(core::BlockBuilder&)> build;                    // writes "out"
  std::vector<std::string> also = {};                                // other variables compared
};

std::ostream& operator<<(std::ostream& os, const CudaCase& c) { return os << c.name; }

struct RunResult {
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, int32_t> device;
};

RunResult RunCase(const CudaCase& c, core::Place place) {
  core::ProgramBuilder pb;
  for (const auto& [name, dims] : c.params) pb.block(0).Var(name, RILL_FP32, dims, true);
  c.build(pb.block(0));
  pb.block(0).Op("square").Input("X", "out").Output("Out", "sq");
  pb.block(0).Op("mean").Input("X", "sq").Output("Out", "loss");
  auto program = std::make_shared<rill::proto::ProgramDesc>(pb.Build());
  const auto grads = core::AppendBackward(*program, ShippedRegistry(), "loss");
  core::ValidateProgramOrThrow(*program, ShippedRegistry());

  auto scope = core::Scope::NewRoot();
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);  // positive: div and max/min stay well defined
  for (const auto& [name, dims] : c.params) {
    core::Tensor* t = scope->Var(name)->GetMutableTensor();
    t->Allocate(RILL_FP32, dims);
    for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = dist(rng);
  }
  core::Executor exec(ShippedRegistry(), program);
  exec.set_place(place);
  exec.Run(0, scope);

  RunResult r;
  std::vector<std::string> names = {"out", "loss"};
  for (const auto& pg : grads) names.push_back(pg.grad);
  names.insert(names.end(), c.also.begin(), c.also.end());
  for (const auto& name : names) {
    const core::Tensor* t = scope->FindVar(name)->GetTensor();
    r.device[name] = t->place().device_type;
    const core::Tensor host = t->CopyTo(core::Place{});
    for (int64_t i = 0; i < host.numel(); ++i) r.values[name].push_back(host.data_as<float>()[i]);
  }
  return r;
}

class CudaMatchesCpu : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaMatchesCpu, ForwardAndGradients) {
  SKIP_WITHOUT_CUDA();
  const RunResult cpu = RunCase(GetParam(), core::Place{});
  const RunResult gpu = RunCase(GetParam(), core::Place{RILL_CUDA, 0});
  for (const auto& [name, device] : gpu.device) {
    if (name != "loss") {
      EXPECT_EQ(device, RILL_CUDA) << name << ": every op under test and its gradient ran on the device";
    }
  }
  for (const auto& [name, want] : cpu.values) {
    const auto& got = gpu.values.at(name);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i]))) << name << "[" << i << "]";
    }
  }
}

core::OpBuilder Binary(core::BlockBuilder& b, const std::string& op) {
  return b.Op(op).Input("X", "x").Input("Y", "y").Output("Out", "out");
}

std::vector<CudaCase> Cases() {
  std::vector<CudaCase> cases;
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"}) {
    const std::string type = std::string("elementwise_") + op;
    cases.push_back({type, {{"x", {4, 5}}, {"y", {4, 5}}}, [type](core::BlockBuilder& b) { Binary(b, type); }});
    cases.push_back({type + "_broadcast", {{"x", {3, 4, 5}}, {"y", {4}}}, [type](core::BlockBuilder& b) {
                       Binary(b, type).Attr("axis", int32_t{1});
                     }});
  }
  for (const char* op : {"relu", "sigmoid", "tanh", "square"}) {
    const std::string type = op;
    cases.push_back(
        {type, {{"x", {1000}}}, [type](core::BlockBuilder& b) { b.Op(type).Input("X", "x").Output("Out", "out"); }});
  }
  cases.push_back({"scale", {{"x", {7}}}, [](core::BlockBuilder& b) {
                     b.Op("scale").Input("X", "x").Output("Out", "out").Attr("scale", 3.0f).Attr("bias", -1.0f);
                   }});
  cases.push_back({"sum", {{"a", {6}}, {"b", {6}}}, [](core::BlockBuilder& b) {
                     b.Op("sum").Input("X", {"a", "b", "a"}).Output("Out", "out");
                   }});
  cases.push_back({"mul", {{"x", {8, 2, 3}}, {"y", {6, 5}}}, [](core::BlockBuilder& b) { Binary(b, "mul"); }});
  cases.push_back({"matmul_transposed_batched", {{"x", {2, 3, 4}}, {"y", {5, 3}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_X", true).Attr("transpose_Y", true).Attr("alpha", 0.5f);
                   }});
  cases.push_back({"softmax_axis1", {{"x", {3, 4, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("softmax").Input("X", "x").Output("Out", "out").Attr("axis", int32_t{1});
                   }});
  cases.push_back({"softmax_cross_entropy_hard", {{"x", {5, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("fill_constant")
                         .Output("Out", "label")
                         .Attr("shape", std::vector<int64_t>{5, 1})
                         .Attr("dtype", int32_t{RILL_INT64})
                         .Attr("value", 2.0f);
                     b.Op("softmax").Input("X", "x").Output("Out", "p");
                     b.Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "out");
                   }});
  cases.push_back(
      {"softmax_cross_entropy_soft", {{"x", {3, 6}}, {"t", {3, 6}}}, [](core::BlockBuilder& b) {
         b.Op("softmax").Input("X", "x").Output("Out", "p");
         b.Op("softmax").Input("X", "t").Output("Out", "target");
         b.Op("cross_entropy").Input("X", "p").Input("Label", "target").Output("Y", "out").Attr("soft_label", true);
       }});
  // Y's gradient summed over a large broadcast: split into partial sums (sum_reduce.cuh).
  cases.push_back({"elementwise_add_bias_gradient", {{"x", {4096, 40}}, {"y", {40}}}, [](core::BlockBuilder& b) {
                     Binary(b, "elementwise_add");
                   }});
  cases.push_back({"elementwise_mul_scalar_gradient", {{"x", {300000}}, {"y", {1}}}, [](core::BlockBuilder& b) {
                     Binary(b, "elementwise_mul");
                   }});
  // Means of many elements, in partial sums; a count that leaves a few past the last
  // 16-byte load.
  cases.push_back({"mean_of_many", {{"x", {70001, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("mean").Input("X", "x").Output("Out", "out");
                   }});
  cases.push_back({"mean_of_many_fp64", {{"x", {100003}}}, [](core::BlockBuilder& b) {
                     b.Op("cast").Input("X", "x").Output("Out", "x64").Attr("out_dtype", int32_t{RILL_FP64});
                     b.Op("mean").Input("X", "x64").Output("Out", "m64");
                     b.Op("cast").Input("X", "m64").Output("Out", "out").Attr("out_dtype", int32_t{RILL_FP32});
                   }});
  cases.push_back({"matmul_plain", {{"x", {3, 4}}, {"y", {4, 5}}}, [](core::BlockBuilder& b) { Binary(b, "matmul"); }});
  cases.push_back({"matmul_batched_x_transposed", {{"x", {2, 4, 3}}, {"y", {2, 4, 5}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_X", true);
                   }});
  cases.push_back({"matmul_unbatched_x_y_transposed", {{"x", {3, 4}}, {"y", {2, 5, 4}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_Y", true).Attr("alpha", 2.0f);
                   }});
  cases.push_back({"concat_then_split", {{"a", {2, 3, 4}}, {"b", {2, 2, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("concat").Input("X", {"a", "b"}).Output("Out", "ab").Attr("axis", int32_t{1});
                     b.Op("split")
                         .Input("X", "ab")
                         .Output("Out", {"p", "q"})
                         .Attr("axis", int32_t{1})
                         .Attr("sections", std::vector<int64_t>{4, 1});
                     b.Op("elementwise_mul").Input("X", "p").Input("Y", "p").Output("Out", "pp");
                     b.Op("concat").Input("X", {"q", "pp"}).Output("Out", "out").Attr("axis", int32_t{-2});
                   }});
  cases.push_back({"cast_to_fp64_and_back", {{"x", {10}}}, [](core::BlockBuilder& b) {
                     b.Op("cast").Input("X", "x").Output("Out", "x64").Attr("out_dtype", int32_t{RILL_FP64});
                     b.Op("scale").Input("X", "x64").Output("Out", "s64").Attr("scale", 0.5f);
                     b.Op("cast").Input("X", "s64").Output("Out", "out").Attr("out_dtype", int32_t{RILL_FP32});
                   }});
  cases.push_back(
      {"assign", {{"x", {9}}}, [](core::BlockBuilder& b) { b.Op("assign").Input("X", "x").Output("Out", "out"); }});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    const std::string type = op;
    cases.push_back({type, {{"x", {3, 4, 5}}}, [type](core::BlockBuilder& b) {
                       b.Op(type)
                           .Input("X", "x")
                           .Output("Out", "out")
                           .Attr("dim", std::vector<int64_t>{0, 2})
                           .Attr("keep_dim", true);
                     }});
  }
  // Convolutions on cuDNN: cuDNN's own padding, and padding it cannot express (SAME over
  // an even span, 4 unequal paddings), which the kernels apply themselves.
  cases.push_back(
      {"conv2d_stride_pad_dilation_groups", {{"x", {2, 4, 9, 8}}, {"w", {6, 2, 3, 3}}}, [](core::BlockBuilder& b) {
         b.Op("conv2d")
             .Input("Input", "x")
             .Input("Filter", "w")
             .Output("Output", "out")
             .Attr("strides", std::vector<int64_t>{2, 1})
             .Attr("paddings", std::vector<int64_t>{1, 2})
             .Attr("dilations", std::vector<int64_t>{1, 2})
             .Attr("groups", int64_t{2});
       }});
  cases.push_back(
      {"conv2d_nhwc_same_even_kernel", {{"x", {2, 7, 6, 3}}, {"w", {5, 3, 2, 4}}}, [](core::BlockBuilder& b) {
         b.Op("conv2d")
             .Input("Input", "x")
             .Input("Filter", "w")
             .Output("Output", "out")
             .Attr("strides", std::vector<int64_t>{2, 2})
             .Attr("padding_algorithm", std::string("SAME"))
             .Attr("data_format", std::string("NHWC"));
       }});
  cases.push_back(
      {"conv2d_four_unequal_paddings", {{"x", {1, 3, 6, 7}}, {"w", {4, 3, 3, 3}}}, [](core::BlockBuilder& b) {
         b.Op("conv2d")
             .Input("Input", "x")
             .Input("Filter", "w")
             .Output("Output", "out")
             .Attr("paddings", std::vector<int64_t>{0, 2, 1, 0});
       }});
  cases.push_back({"depthwise_conv2d", {{"x", {2, 5, 8, 8}}, {"w", {5, 1, 3, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("depthwise_conv2d")
                         .Input("Input", "x")
                         .Input("Filter", "w")
                         .Output("Output", "out")
                         .Attr("paddings", std::vector<int64_t>{1, 1})
                         .Attr("groups", int64_t{5});
                   }});
  // pool2d: overlapping max windows (their gradients add up), averages with and without
  // the padding counted, ceil_mode, adaptive windows, global pooling over NHWC.
  const auto pool = [](core::BlockBuilder& b) -> core::OpBuilder {
    return b.Op("pool2d").Input("X", "x").Output("Out", "out");
  };
  cases.push_back({"pool2d_max_overlapping", {{"x", {2, 3, 9, 8}}}, [pool](core::BlockBuilder& b) {
                     pool(b)
                         .Attr("ksize", std::vector<int64_t>{3, 3})
                         .Attr("strides", std::vector<int64_t>{2, 1})
                         .Attr("paddings", std::vector<int64_t>{1, 1});
                   }});
  cases.push_back({"pool2d_avg_padding_counted_ceil_mode", {{"x", {2, 3, 7, 7}}}, [pool](core::BlockBuilder& b) {
                     pool(b)
                         .Attr("pooling_type", std::string("avg"))
                         .Attr("ksize", std::vector<int64_t>{3, 2})
                         .Attr("strides", std::vector<int64_t>{2, 2})
                         .Attr("paddings", std::vector<int64_t>{1, 0, 0, 1})
                         .Attr("exclusive", false)
                         .Attr("ceil_mode", true);
                   }});
  cases.push_back({"pool2d_adaptive_avg", {{"x", {1, 4, 10, 7}}}, [pool](core::BlockBuilder& b) {
                     pool(b)
                         .Attr("pooling_type", std::string("avg"))
                         .Attr("ksize", std::vector<int64_t>{3, 3})
                         .Attr("adaptive", true);
                   }});
  cases.push_back({"pool2d_global_max_nhwc", {{"x", {2, 5, 6, 3}}}, [pool](core::BlockBuilder& b) {
                     pool(b).Attr("global_pooling", true).Attr("data_format", std::string("NHWC"));
                   }});
  // batch_norm: training (the running statistics updated in place, as Fluid names them)
  // in both layouts, and with the running statistics (is_test).
  const auto batch_norm = [](core::BlockBuilder& b) -> core::OpBuilder {
    return b.Op("batch_norm")
        .Input("X", "x")
        .Input("Scale", "scale")
        .Input("Bias", "bias")
        .Input("Mean", "mean")
        .Input("Variance", "var")
        .Output("Y", "out")
        .Output("MeanOut", "mean")
        .Output("VarianceOut", "var")
        .Output("SavedMean", "saved_mean")
        .Output("SavedVariance", "saved_var");
  };
  const std::vector<std::string> statistics = {"mean", "var", "saved_mean", "saved_var"};
  for (const char* layout : {"NCHW", "NHWC"}) {
    const bool nhwc = std::string(layout) == "NHWC";
    cases.push_back({std::string("batch_norm_training_") + layout,
                     {{"x", nhwc ? std::vector<int64_t>{4, 5, 6, 3} : std::vector<int64_t>{4, 3, 5, 6}},
                      {"scale", {3}},
                      {"bias", {3}},
                      {"mean", {3}},
                      {"var", {3}}},
                     [batch_norm, layout](core::BlockBuilder& b) {
                       batch_norm(b).Attr("data_layout", std::string(layout)).Attr("momentum", 0.8f);
                     },
                     statistics});
  }
  cases.push_back({"batch_norm_is_test",
                   {{"x", {2, 4, 3, 3}}, {"scale", {4}}, {"bias", {4}}, {"mean", {4}}, {"var", {4}}},
                   [batch_norm](core::BlockBuilder& b) { batch_norm(b).Attr("is_test", true); },
                   statistics});
  cases.push_back(
      {"fit_a_line_step", {{"w", {13, 1}}, {"bias", {1}}}, [](core::BlockBuilder& b) {
         b.Op("fill_constant").Output("Out", "data").Attr("shape", std::vector<int64_t>{32, 13}).Attr("value", 0.25f);
         b.Op("mul").Input("X", "data").Input("Y", "w").Output("Out", "xw");
         b.Op("elementwise_add").Input("X", "xw").Input("Y", "bias").Output("Out", "out");
       }});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryCudaKernel, CudaMatchesCpu, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<CudaCase>& info) { return info.param.name; });

// fp16 kernels (the CPU has none) against the fp32 CUDA kernels, which CudaMatchesCpu holds
// to the CPU's. Both runs are on CUDA:0 and read the same fp16 values: the reference casts
// its `half` inputs to fp16 and back, then runs the op in fp32; the other casts them to
// fp16, runs the op in fp16 and casts its result back. So they differ by fp16's rounding of
// results only (a max pool picks the same element in both), and every output and gradient
// agrees to fp16's precision. As in Fluid, batch_norm's per-channel tensors stay fp32.
struct HalfCase {
  std::string name;
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;  // fp32 parameters
  std::vector<std::string> half;                                     // those the op takes in fp16
  // Writes the op, reading and writing variables by name through `v`, which renames the
  // `half` inputs and "out" to the run's own.
  std::function<void(core::BlockBuilder&, const std::function<std::string(const std::string&)>& v)> build;
  std::vector<std::string> also = {};  // other variables compared
};

std::ostream& operator<<(std::ostream& os, const HalfCase& c) { return os << c.name; }

RunResult RunHalfCase(const HalfCase& c, bool in_fp16) {
  const std::string suffix = in_fp16 ? "_half" : "_rounded";
  const auto v = [&](const std::string& name) {
    const bool renamed = name == "out" ? in_fp16 : std::count(c.half.begin(), c.half.end(), name) > 0;
    return renamed ? name + suffix : name;
  };
  const auto cast = [](core::BlockBuilder& b, const std::string& from, const std::string& to, int32_t dtype) {
    b.Op("cast").Input("X", from).Output("Out", to).Attr("out_dtype", dtype);
  };
  CudaCase run{c.name, c.params,
               [&](core::BlockBuilder& b) {
                 for (const std::string& name : c.half) {
                   cast(b, name, name + "_half", RILL_FP16);
                   if (!in_fp16) cast(b, name + "_half", name + "_rounded", RILL_FP32);
                 }
                 c.build(b, v);
                 if (in_fp16) cast(b, "out_half", "out", RILL_FP32);
               },
               c.also};
  return RunCase(run, core::Place{RILL_CUDA, 0});
}

class HalfPrecision : public ::testing::TestWithParam<HalfCase> {};

TEST_P(HalfPrecision, MatchesFloatOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  const RunResult want = RunHalfCase(GetParam(), false);
  const RunResult got = RunHalfCase(GetParam(), true);
  for (const auto& [name, expected] : want.values) {
    const auto& actual = got.values.at(name);
    ASSERT_EQ(actual.size(), expected.size()) << name;
    double scale = 0;  // fp16 keeps about 3 digits of a tensor's largest values
    for (double e : expected) scale = std::max(scale, std::abs(e));
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_NEAR(actual[i], expected[i], 5e-3 * scale) << name << "[" << i << "]";
    }
  }
}

std::vector<HalfCase> HalfCases() {
  using Names = std::function<std::string(const std::string&)>;
  std::vector<HalfCase> cases;
  cases.push_back(
      {"conv2d", {{"x", {2, 4, 9, 9}}, {"w", {6, 4, 3, 3}}}, {"x", "w"}, [](core::BlockBuilder& b, const Names& v) {
         b.Op("conv2d")
             .Input("Input", v("x"))
             .Input("Filter", v("w"))
             .Output("Output", v("out"))
             .Attr("paddings", std::vector<int64_t>{1, 1})
             .Attr("strides", std::vector<int64_t>{2, 1});
       }});
  cases.push_back({"conv2d_nhwc_groups",
                   {{"x", {2, 7, 6, 4}}, {"w", {6, 2, 3, 3}}},
                   {"x", "w"},
                   [](core::BlockBuilder& b, const Names& v) {
                     b.Op("conv2d")
                         .Input("Input", v("x"))
                         .Input("Filter", v("w"))
                         .Output("Output", v("out"))
                         .Attr("paddings", std::vector<int64_t>{1, 0})
                         .Attr("groups", int64_t{2})
                         .Attr("data_format", std::string("NHWC"));
                   }});
  cases.push_back({"pool2d_max_overlapping", {{"x", {2, 3, 9, 8}}}, {"x"}, [](core::BlockBuilder& b, const Names& v) {
                     b.Op("pool2d")
                         .Input("X", v("x"))
                         .Output("Out", v("out"))
                         .Attr("ksize", std::vector<int64_t>{3, 3})
                         .Attr("strides", std::vector<int64_t>{2, 1})
                         .Attr("paddings", std::vector<int64_t>{1, 1});
                   }});
  cases.push_back(
      {"pool2d_avg_ceil_mode_nhwc", {{"x", {2, 7, 7, 3}}}, {"x"}, [](core::BlockBuilder& b, const Names& v) {
         b.Op("pool2d")
             .Input("X", v("x"))
             .Output("Out", v("out"))
             .Attr("pooling_type", std::string("avg"))
             .Attr("ksize", std::vector<int64_t>{3, 3})
             .Attr("strides", std::vector<int64_t>{2, 2})
             .Attr("ceil_mode", true)
             .Attr("data_format", std::string("NHWC"));
       }});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> channels = {
      {"scale", {3}}, {"bias", {3}}, {"mean", {3}}, {"var", {3}}};
  for (const bool is_test : {false, true}) {
    auto params = channels;
    params.insert(params.begin(), {"x", {4, 3, 5, 6}});
    cases.push_back({is_test ? "batch_norm_is_test" : "batch_norm_training",
                     params,
                     {"x"},
                     [is_test](core::BlockBuilder& b, const Names& v) {
                       b.Op("batch_norm")
                           .Input("X", v("x"))
                           .Input("Scale", "scale")
                           .Input("Bias", "bias")
                           .Input("Mean", "mean")
                           .Input("Variance", "var")
                           .Output("Y", v("out"))
                           .Output("MeanOut", "mean")
                           .Output("VarianceOut", "var")
                           .Output("SavedMean", "saved_mean")
                           .Output("SavedVariance", "saved_var")
                           .Attr("is_test", is_test);
                     },
                     {"mean", "var", "saved_mean", "saved_var"}});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Fp16Kernels, HalfPrecision, ::testing::ValuesIn(HalfCases()),
                         [](const ::testing::TestParamInfo<HalfCase>& info) { return info.param.name; });

// The book's convolution nets trained on CUDA:0 as on the CPU: the same
// synthetic batches, the same initial parameters, Adam; the losses step by step agree, and
// both learn. conv2d, pool2d, batch_norm and their gradients run on the device here
// together, over many steps, with everything around them.
std::vector<float> TrainLosses(const examples::BookModel& m, core::Place place, int steps) {
  const rill::proto::ProgramDesc train = examples::TrainingProgram(m, ShippedRegistry());
  std::mt19937 rng(7);
  auto scope = core::Scope::NewRoot();
  examples::Initialize(m, *scope, 0.02f, rng);
  core::Executor exec(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>(train));
  exec.set_place(place);
  std::normal_distribution<float> pixel(0, 1);
  std::uniform_int_distribution<int64_t> label(0, 3);
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    // Class k brightens quadrant k: learnable, so the loss falls.
    core::Tensor images, labels;
    float* img = static_cast<float*>(images.Allocate(RILL_FP32, {16, 1, 8, 8}));
    auto* lab = static_cast<int64_t*>(labels.Allocate(RILL_INT64, {16, 1}));
    for (int i = 0; i < 16; ++i) {
      lab[i] = label(rng);
      for (int p = 0; p < 64; ++p) {
        const bool in_quadrant = (p / 8 / 4) * 2 + (p % 8 / 4) == lab[i];
        img[i * 64 + p] = pixel(rng) * 0.3f + (in_quadrant ? 1.0f : 0.0f);
      }
    }
    *scope->Var("img")->GetMutableTensor() = images;
    *scope->Var("label")->GetMutableTensor() = labels;
    exec.Run(0, scope);
    losses.push_back(scope->FindVar("loss")->GetTensor()->CopyTo(core::Place{}).data_as<float>()[0]);
  }
  return losses;
}

TEST(Cuda, BookConvNetsTrainOnTheDeviceAsOnTheCpu) {
  SKIP_WITHOUT_CUDA();
  const std::pair<std::string, examples::BookModel> models[] = {
      {"recognize_digits_conv", examples::ConvNet({1, 8, 8}, {4, 8}, 3, 1, 4)},
      {"residual_net", examples::ResidualNet({1, 8, 8}, 8, 1, 4)}};
  for (const auto& [name, m] : models) {
    const std::vector<float> cpu = TrainLosses(m, core::Place{}, 40);
    const std::vector<float> gpu = TrainLosses(m, core::Place{RILL_CUDA, 0}, 40);
    for (size_t step = 0; step < cpu.size(); ++step) {
      EXPECT_NEAR(gpu[step], cpu[step], 2e-3 * std::max(1.0f, std::abs(cpu[step]))) << name << " step " << step;
    }
    EXPECT_LT(gpu.back(), gpu.front() / 2) << name << ": the loss fell on the device";
  }
}

// Ops with no gradient and dtypes other than fp32: comparisons (one with force_cpu, whose
// result nothing reads after, so it stays where it was made),
// logical ops, casts to and from int64 and bool, increment, and a while loop whose
// condition a CUDA kernel writes. The same program on the CPU and on CUDA:0; every
// variable's description (dtype, dims, values) and place.
struct NonDifferentiableRun {
  std::map<std::string, std::string> values;
  std::map<std::string, int32_t> device;
};

NonDifferentiableRun RunNonDifferentiable(core::Place place) {
  core::ProgramBuilder pb;
  auto& b = pb.block(0);
  const auto fill = [](core::BlockBuilder& in, const std::string& name, std::vector<int64_t> dims, float value,
                       int32_t dtype) {
    in.Op("fill_constant").Output("Out", name).Attr("shape", dims).Attr("value", value).Attr("dtype", dtype);
  };
  fill(b, "a", {2, 3}, 1.5f, RILL_FP32);
  b.Op("uniform_random")
      .Output("Out", "r")
      .Attr("shape", std::vector<int64_t>{2, 3})
      .Attr("min", 0.0f)
      .Attr("max", 3.0f)
      .Attr("seed", int32_t{7});
  b.Op("less_than").Input("X", "r").Input("Y", "a").Output("Out", "lt");
  b.Op("greater_equal").Input("X", "r").Input("Y", "a").Output("Out", "ge");
  b.Op("greater_than").Input("X", "r").Input("Y", "a").Output("Out", "gt_on_host").Attr("force_cpu", true);
  b.Op("logical_not").Input("X", "lt").Output("Out", "not_lt");
  b.Op("logical_xor").Input("X", "not_lt").Input("Y", "ge").Output("Out", "xor");
  b.Op("logical_or").Input("X", "lt").Input("Y", "xor").Output("Out", "or");
  b.Op("logical_and").Input("X", "or").Input("Y", "ge").Output("Out", "and");
  b.Op("cast").Input("X", "r").Output("Out", "r_int").Attr("out_dtype", int32_t{RILL_INT64});
  b.Op("cast").Input("X", "lt").Output("Out", "lt_float").Attr("out_dtype", int32_t{RILL_FP32});
  fill(b, "ones", {2, 3}, 1.0f, RILL_INT64);
  b.Op("cast").Input("X", "ones").Output("Out", "ones_gpu").Attr("out_dtype", int32_t{RILL_INT64});
  b.Op("equal").Input("X", "r_int").Input("Y", "ones_gpu").Output("Out", "is_one");
  // while (v < 5) { v += 1; total += v }: v and total are [1] fp32 tensors made on the device.
  fill(b, "v", {1}, 0.0f, RILL_FP32);
  fill(b, "limit", {1}, 5.0f, RILL_FP32);
  fill(b, "total", {1}, 0.0f, RILL_FP32);
  b.Op("less_than").Input("X", "v").Input("Y", "limit").Output("Out", "more");
  auto& body = pb.NewBlock(0);
  body.Op("increment").Input("X", "v").Output("Out", "v").Attr("step", 1.0f);
  body.Op("elementwise_add").Input("X", "total").Input("Y", "v").Output("Out", "total");
  body.Op("less_than").Input("X", "v").Input("Y", "limit").Output("Out", "more");
  b.Op("while").Input("Condition", "more").BlockAttr("sub_block", body.idx());
  auto program = std::make_shared<rill::proto::ProgramDesc>(pb.Build());
  core::ValidateProgramOrThrow(*program, ShippedRegistry());
  auto scope = core::Scope::NewRoot();
  core::Executor exec(ShippedRegistry(), program);
  exec.set_place(place);
  exec.Run(0, scope);
  NonDifferentiableRun run;
  for (const char* name :
       {"lt", "ge", "gt_on_host", "not_lt", "xor", "or", "and", "r_int", "lt_float", "is_one", "v", "total"}) {
    const core::Tensor* t = scope->FindVar(name)->GetTensor();
    run.device[name] = t->place().device_type;
    run.values[name] = t->CopyTo(core::Place{}).Describe();
  }
  return run;
}

TEST(Cuda, ComparisonsLogicalOpsCastsAndLoopsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const NonDifferentiableRun cpu = RunNonDifferentiable(core::Place{});
  const NonDifferentiableRun gpu = RunNonDifferentiable(core::Place{RILL_CUDA, 0});
  EXPECT_EQ(gpu.values, cpu.values);
  EXPECT_EQ(cpu.values.at("total"), "fp32[1] {15}");
  for (const auto& [name, device] : gpu.device) {
    EXPECT_EQ(device, name == "gt_on_host" ? RILL_CPU : RILL_CUDA) << name << " (gt_on_host has force_cpu)";
  }
}

// momentum and adam (not differentiable, so outside the cases above): two steps each on
// the CPU and on CUDA:0, from the same state.
std::map<std::string, std::vector<double>> RunOptimizers(core::Place place) {
  core::ProgramBuilder pb;
  auto& b = pb.block(0);
  b.Op("momentum")
      .Input("Param", "p")
      .Input("Grad", "g")
      .Input("Velocity", "v")
      .Input("LearningRate", "lr")
      .Output("ParamOut", "p")
      .Output("VelocityOut", "v")
      .Attr("mu", 0.9f)
      .Attr("use_nesterov", true);
  b.Op("adam")
      .Input("Param", "w")
      .Input("Grad", "g")
      .Input("LearningRate", "lr")
      .Input("Moment1", "m1")
      .Input("Moment2", "m2")
      .Input("Beta1Pow", "b1p")
      .Input("Beta2Pow", "b2p")
      .Output("ParamOut", "w")
      .Output("Moment1Out", "m1")
      .Output("Moment2Out", "m2")
      .Output("Beta1PowOut", "b1p")
      .Output("Beta2PowOut", "b2p");
  auto scope = core::Scope::NewRoot();
  const auto set = [&](const std::string& name, std::vector<int64_t> dims, float base) {
    core::Tensor* t = scope->Var(name)->GetMutableTensor();
    t->Allocate(RILL_FP32, dims);
    for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = base + 0.01f * static_cast<float>(i);
  };
  set("p", {64}, 1);
  set("w", {64}, -1);
  set("g", {64}, 0.5);
  set("v", {64}, 0);
  set("m1", {64}, 0);
  set("m2", {64}, 0);
  set("lr", {1}, 0.1f);
  set("b1p", {1}, 0.9f);
  set("b2p", {1}, 0.999f);
  core::Executor exec(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>(pb.Build()));
  exec.set_place(place);
  exec.Run(0, scope);
  exec.Run(0, scope);
  std::map<std::string, std::vector<double>> out;
  for (const char* name : {"p", "v", "w", "m1", "m2", "b1p", "b2p"}) {
    const core::Tensor host = scope->FindVar(name)->GetTensor()->CopyTo(core::Place{});
    for (int64_t i = 0; i < host.numel(); ++i) out[name].push_back(host.data_as<float>()[i]);
  }
  return out;
}

TEST(Cuda, OptimizersMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const auto cpu = RunOptimizers(core::Place{});
  const auto gpu = RunOptimizers(core::Place{RILL_CUDA, 0});
  for (const auto& [name, want] : cpu) {
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(gpu.at(name)[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << name << "[" << i << "]";
    }
  }
}

// What a transport sends from and receives into when a tensor lives on the GPU: Debian's
// Open MPI is not CUDA-aware, so the bytes go through page-locked host memory.
TEST(Cuda, TensorsLeavingTheGpuAreStagedInPageLockedMemory) {
  SKIP_WITHOUT_CUDA();
  core::Tensor host;
  host.Allocate(RILL_FP32, {4096});
  for (int i = 0; i < 4096; ++i) host.data_as<float>()[i] = static_cast<float>(i);
  core::Tensor on_gpu = host.CopyTo(core::Place{RILL_CUDA, 0});
  const core::Tensor back = on_gpu.CopyTo(core::Place{});
  EXPECT_TRUE(back.page_locked());
  EXPECT_EQ(back.ValuesToString(3), "0 1 2 ...");
  on_gpu.Allocate(RILL_FP32, {4096});  // a CPU kernel's output over a GPU tensor
  EXPECT_TRUE(on_gpu.page_locked());
}

TEST(Cuda, RunningOnAMissingDeviceIsAClearError) {
  ShippedRegistry();
  core::Executor exec(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>());
  try {
    exec.set_place(core::Place{RILL_CUDA, 64});
    FAIL() << "CUDA:64 does not exist anywhere";
  } catch (const core::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot run on CUDA:64: ", 0), 0u) << msg;
  }
}

}  // namespace
}  // namespace rill::test
