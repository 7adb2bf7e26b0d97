// Every gradient op against central finite differences. Each case builds one op (or a
// short chain) on fp64 parameters; the loss is sum(out^2); AppendBackward gives the
// analytic gradients and (loss(x + eps) - loss(x - eps)) / 2 eps the numeric ones.
#include <cmath>
#include <functional>
#include <random>
#include <tuple>

#include "core/program/backward.h"
#include "core/program/validate.h"
#include "op_fixture.h"

namespace rill::test {
namespace {

struct Param {
  std::string name;
  std::vector<int64_t> dims;
  double lo = -1, hi = 1;  // values drawn uniformly from [lo, hi)
};

struct GradCase {
  std::string name;
  std::vector<Param> params;
  std::function<void(core::BlockBuilder&)> build;  // writes variable "out"
  double tolerance = 1e-6;
  std::function<void(core::Scope&)> extra_inputs = nullptr;  // non-parameter inputs (labels)
  double eps = 1e-6;  // finite-difference step; larger where the chain rounds to fp32
};

std::ostream& operator<<(std::ostream& os, const GradCase& c) { return os << c.name; }

class GradientCheck : public ::testing::TestWithParam<GradCase> {
 protected:
  void SetUp() override {
    const GradCase& c = GetParam();
    std::mt19937_64 rng(1234);
    for (const auto& p : c.params) {
      std::uniform_real_distribution<double> dist(p.lo, p.hi);
      int64_t n = 1;
      for (int64_t d : p.dims) n *= d;
      std::vector<double> v(static_cast<size_t>(n));
      for (auto& x : v) x = dist(rng);
      values_[p.name] = v;
    }
    core::ProgramBuilder pb;
    for (const auto& p : c.params) pb.block(0).Var(p.name, RILL_FP64, p.dims, /*persistable=*/true);
    c.build(pb.block(0));
    pb.block(0).Op("square").Input("X", "out").Output("Out", "out_sq");
    pb.block(0).Op("reduce_sum").Input("X", "out_sq").Output("Out", "loss").Attr("reduce_all", true);
    forward_ = std::make_shared<rill::proto::ProgramDesc>(pb.Build());
    core::ValidateProgramOrThrow(*forward_, ShippedRegistry());
    backward_ = std::make_shared<rill::proto::ProgramDesc>(*forward_);
    grads_ = core::AppendBackward(*backward_, ShippedRegistry(), "loss");
    core::ValidateProgramOrThrow(*backward_, ShippedRegistry());
  }

  std::shared_ptr<core::Scope> Scope() {
    auto scope = core::Scope::NewRoot();
    for (const auto& p : GetParam().params) {
      core::Tensor* t = scope->Var(p.name)->GetMutableTensor();
      t->Allocate(RILL_FP64, p.dims);
      std::copy(values_[p.name].begin(), values_[p.name].end(), t->data_as<double>());
    }
    if (GetParam().extra_inputs) GetParam().extra_inputs(*scope);
    return scope;
  }

  double Loss() {
    auto scope = Scope();
    core::Executor(ShippedRegistry(), forward_).Run(0, scope);
    return *scope->FindVar("loss")->GetTensor()->data_as<double>();
  }

  std::map<std::string, std::vector<double>> values_;
  std::shared_ptr<rill::proto::ProgramDesc> forward_, backward_;
  std::vector<core::ParamGrad> grads_;
};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  ASSERT_EQ(grads_.size(), c.params.size()) << "every parameter reaches the loss";
  auto scope = Scope();
  core::Executor(ShippedRegistry(), backward_).Run(0, scope);
  const double kEps = c.eps;
  for (const auto& pg : grads_) {
    const core::Tensor* g = scope->FindVar(pg.grad)->GetTensor();
    ASSERT_NE(g, nullptr) << pg.grad;
    auto& v = values_[pg.param];
    ASSERT_EQ(static_cast<size_t>(g->numel()), v.size()) << pg.grad << " is shaped like " << pg.param;
    for (size_t i = 0; i < v.size(); ++i) {
      const double orig = v[i];
      v[i] = orig + kEps;
      const double up = Loss();
      v[i] = orig - kEps;
      const double down = Loss();
      v[i] = orig;
      const double numeric = (up - down) / (2 * kEps);
      const double analytic = g->data_as<double>()[i];
      EXPECT_NEAR(analytic, numeric, c.tolerance * std::max(1.0, std::abs(numeric))) << pg.grad << "[" << i << "]";
    }
  }
}

core::OpBuilder Binary(core::BlockBuilder& b, const std::string& op) {
  return b.Op(op).Input("X", "x").Input("Y", "y").Output("Out", "out");
}

std::vector<GradCase> Cases() {
  std::vector<GradCase> cases;
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow"}) {
    const std::string type = std::string("elementwise_") + op;
    const bool positive = std::string(op) == "pow" || std::string(op) == "div";
    const double lo = positive ? 0.5 : -1, hi = positive ? 2 : 1;
    cases.push_back({type + "_same_shape",
                     {{"x", {2, 3}, lo, hi}, {"y", {2, 3}, lo, hi}},
                     [type](core::BlockBuilder& b) { Binary(b, type); }});
    cases.push_back({type + "_broadcast_row",
                     {{"x", {2, 3}, lo, hi}, {"y", {3}, lo, hi}},
                     [type](core::BlockBuilder& b) { Binary(b, type); }});
    cases.push_back({type + "_broadcast_axis0",
                     {{"x", {2, 3, 2}, lo, hi}, {"y", {2, 3}, lo, hi}},
                     [type](core::BlockBuilder& b) { Binary(b, type).Attr("axis", int32_t{0}); }});
  }
  for (const char* op : {"relu", "sigmoid", "tanh", "square"}) {
    const std::string type = op;
    cases.push_back(
        {type, {{"x", {3, 4}}}, [type](core::BlockBuilder& b) { b.Op(type).Input("X", "x").Output("Out", "out"); }});
  }
  // The activations with attributes and domains of their own; inputs span every kink.
  struct Activation {
    const char* type;
    double lo, hi;
    std::function<void(core::OpBuilder&)> attrs;
  };
  const std::vector<Activation> activations = {
      {"exp", -2, 2, nullptr},
      {"log", 0.5, 3, nullptr},
      {"sqrt", 0.5, 3, nullptr},
      {"abs", -1, 1, nullptr},
      {"relu6", -2, 8, nullptr},
      {"relu6", -2, 8, [](core::OpBuilder& o) { o.Attr("threshold", 3.0f); }},
      {"leaky_relu", -1, 1, [](core::OpBuilder& o) { o.Attr("alpha", 0.1f); }},
      {"erf", -3, 3, nullptr},
      {"gelu", -3, 3, nullptr},
      {"gelu", -3, 3, [](core::OpBuilder& o) { o.Attr("approximate", true); }},
      {"swish", -3, 3, [](core::OpBuilder& o) { o.Attr("beta", 1.5f); }},
      {"hard_swish", -5, 5, nullptr},
      {"hard_sigmoid", -4, 4, nullptr},
      {"clip", -1, 1, [](core::OpBuilder& o) { o.Attr("min", -0.5f).Attr("max", 0.5f); }},
      {"silu", -3, 3, nullptr},
      {"logsigmoid", -3, 3, nullptr},
      {"tanh_shrink", -2, 2, nullptr},
      {"softshrink", -1, 1, [](core::OpBuilder& o) { o.Attr("lambda", 0.3f); }},
      {"hard_shrink", -1, 1, [](core::OpBuilder& o) { o.Attr("threshold", 0.3f); }},
      {"thresholded_relu", -1, 2, [](core::OpBuilder& o) { o.Attr("threshold", 0.5f); }},
      {"brelu", -1, 3, [](core::OpBuilder& o) { o.Attr("t_min", -0.5f).Attr("t_max", 2.0f); }},
      {"soft_relu", -3, 3, [](core::OpBuilder& o) { o.Attr("threshold", 1.5f); }},
      {"elu", -2, 2, [](core::OpBuilder& o) { o.Attr("alpha", 0.7f); }},
      {"softplus", -2, 3, [](core::OpBuilder& o) { o.Attr("beta", 2.0f).Attr("threshold", 3.0f); }},
      {"softsign", -2, 2, nullptr},
      {"mish", -3, 3, nullptr},
      {"mish", -1, 3, [](core::OpBuilder& o) { o.Attr("threshold", 1.0f); }},
      {"selu", -2, 2, nullptr},
      {"stanh", -2, 2, nullptr},
      {"pow", 0.5, 2, [](core::OpBuilder& o) { o.Attr("factor", 2.5f); }},
      {"reciprocal", 0.5, 2, nullptr},
      {"rsqrt", 0.5, 2, nullptr},
      {"expm1", -1, 1, nullptr},
      {"log1p", -0.5, 2, nullptr},
      {"log2", 0.5, 3, nullptr},
      {"log10", 0.5, 3, nullptr},
      {"sin", -3, 3, nullptr},
      {"cos", -3, 3, nullptr},
      // Steps: a gradient of 0, which finite differences away from the steps agree with.
      {"floor", -2, 2, nullptr},
      {"ceil", -2, 2, nullptr},
      {"round", -2, 2, nullptr},
      {"sign", -2, 2, nullptr},
  };
  for (const auto& a : activations) {
    const std::string type = a.type;
    cases.push_back({type + (a.attrs ? "_with_attributes" : ""),
                     {{"x", {3, 5}, a.lo, a.hi}},
                     [type, attrs = a.attrs](core::BlockBuilder& b) {
                       core::OpBuilder op = b.Op(type).Input("X", "x").Output("Out", "out");
                       if (attrs) attrs(op);
                     }});
  }
  // The reshape family and transpose2 on a [2, 1, 3, 4] parameter, and their first forms.
  const std::vector<std::pair<std::string, std::function<void(core::OpBuilder&)>>> reshapes = {
      {"reshape2",
       [](core::OpBuilder& o) {
         o.Attr("shape", std::vector<int64_t>{0, -1, 4});
       }},
      {"flatten2", [](core::OpBuilder& o) { o.Attr("axis", int32_t{2}); }},
      {"flatten_contiguous_range",
       [](core::OpBuilder& o) { o.Attr("start_axis", int32_t{1}).Attr("stop_axis", int32_t{2}); }},
      {"squeeze2", [](core::OpBuilder& o) { o.Attr("axes", std::vector<int64_t>{1}); }},
      {"unsqueeze2",
       [](core::OpBuilder& o) {
         o.Attr("axes", std::vector<int64_t>{0, -1});
       }},
      {"transpose2",
       [](core::OpBuilder& o) {
         o.Attr("axis", std::vector<int64_t>{2, 0, 3, 1});
       }},
  };
  for (const auto& [type, attrs] : reshapes) {
    cases.push_back({type, {{"x", {2, 1, 3, 4}}}, [type = type, attrs = attrs](core::BlockBuilder& b) {
                       core::OpBuilder op = b.Op(type).Input("X", "x").Output("Out", "out").Output("XShape", "xshape");
                       attrs(op);
                     }});
  }
  // Fluid 1.x's first forms, without XShape.
  for (const auto& [type, attrs] : reshapes) {
    if (type.back() != '2') continue;
    const std::string first = type.substr(0, type.size() - 1);
    cases.push_back({first, {{"x", {2, 1, 3, 4}}}, [first, attrs = attrs](core::BlockBuilder& b) {
                       core::OpBuilder op = b.Op(first).Input("X", "x").Output("Out", "out");
                       attrs(op);
                     }});
  }
  cases.push_back({"scale", {{"x", {5}}}, [](core::BlockBuilder& b) {
                     b.Op("scale").Input("X", "x").Output("Out", "out").Attr("scale", -2.5f).Attr("bias", 3.0f);
                   }});
  cases.push_back({"cast_through_fp32",
                   {{"x", {4}}},
                   [](core::BlockBuilder& b) {
                     b.Op("cast").Input("X", "x").Output("Out", "x32").Attr("out_dtype", int32_t{RILL_FP32});
                     b.Op("cast").Input("X", "x32").Output("Out", "out").Attr("out_dtype", int32_t{RILL_FP64});
                   },
                   1e-3,
                   nullptr,
                   1e-2});
  cases.push_back({"sum_with_repeated_input", {{"a", {2, 2}}, {"b", {2, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("sum").Input("X", {"a", "b", "a"}).Output("Out", "out");
                   }});
  cases.push_back(
      {"mean", {{"x", {3, 2}}}, [](core::BlockBuilder& b) { b.Op("mean").Input("X", "x").Output("Out", "out"); }});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    const std::string type = op;
    cases.push_back({type + "_dim1", {{"x", {2, 3, 2}}}, [type](core::BlockBuilder& b) {
                       b.Op(type).Input("X", "x").Output("Out", "out").Attr("dim", std::vector<int64_t>{1});
                     }});
    cases.push_back(
        {type + "_keep_dim_last", {{"x", {3, 4}}}, [type](core::BlockBuilder& b) {
           b.Op(type).Input("X", "x").Output("Out", "out").Attr("dim", std::vector<int64_t>{-1}).Attr("keep_dim", true);
         }});
  }
  cases.push_back({"mul_num_col_dims", {{"x", {2, 2, 3}}, {"y", {3, 2}}}, [](core::BlockBuilder& b) {
                     Binary(b, "mul").Attr("x_num_col_dims", int32_t{2});
                   }});
  cases.push_back({"matmul", {{"x", {2, 3}}, {"y", {3, 4}}}, [](core::BlockBuilder& b) { Binary(b, "matmul"); }});
  cases.push_back({"matmul_v2_trans_x_trans_y", {{"x", {3, 2}}, {"y", {4, 3}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul_v2").Attr("trans_x", true).Attr("trans_y", true);
                   }});
  cases.push_back({"matmul_v2_batch_times_matrix", {{"x", {2, 2, 3}}, {"y", {3, 4}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul_v2");
                   }});
  cases.push_back({"matmul_transpose_x", {{"x", {3, 2}}, {"y", {3, 4}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_X", true).Attr("alpha", 1.5f);
                   }});
  cases.push_back({"matmul_transpose_y", {{"x", {2, 3}}, {"y", {4, 3}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_Y", true);
                   }});
  cases.push_back({"matmul_transpose_both", {{"x", {3, 2}}, {"y", {4, 3}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul").Attr("transpose_X", true).Attr("transpose_Y", true);
                   }});
  cases.push_back({"matmul_batched_broadcast_y", {{"x", {2, 2, 3}}, {"y", {3, 2}}}, [](core::BlockBuilder& b) {
                     Binary(b, "matmul");
                   }});
  cases.push_back({"matmul_vector", {{"x", {2, 3}}, {"y", {3}}}, [](core::BlockBuilder& b) { Binary(b, "matmul"); }});
  // 1-D operands with transposes, every combination Paddle's matmul (v1) and matmul_v2
  // give a meaning (v1 transposes the row / column a vector stands for; v2 ignores it).
  for (bool v2 : {false, true}) {
    const char* op = v2 ? "matmul_v2" : "matmul";
    const char* tx = v2 ? "trans_x" : "transpose_X";
    const char* ty = v2 ? "trans_y" : "transpose_Y";
    const std::string name = op;
    cases.push_back({name + "_vector_x_transposed_batched_y",
                     {{"x", {3}}, {"y", {2, v2 ? 3 : 1, 4}}},
                     [=](core::BlockBuilder& b) { Binary(b, op).Attr(tx, true); }});
    cases.push_back({name + "_vector_x_transposed_matrix_y",
                     {{"x", {3}}, {"y", {v2 ? 3 : 1, 4}}},
                     [=](core::BlockBuilder& b) { Binary(b, op).Attr(tx, true); }});
    cases.push_back({name + "_matrix_x_vector_y_transposed",
                     {{"x", {2, v2 ? 3 : 1}}, {"y", {3}}},
                     [=](core::BlockBuilder& b) { Binary(b, op).Attr(ty, true); }});
    cases.push_back(
        {name + "_vector_times_vector", {{"x", {3}}, {"y", {3}}}, [=](core::BlockBuilder& b) { Binary(b, op); }});
    cases.push_back(
        {name + "_batched_x_vector_y", {{"x", {2, 2, 3}}, {"y", {3}}}, [=](core::BlockBuilder& b) { Binary(b, op); }});
  }
  cases.push_back({"softmax_last_axis", {{"x", {2, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("softmax").Input("X", "x").Output("Out", "out");
                   }});
  cases.push_back(
      {"tril_triu_upper_above_the_diagonal", {{"x", {2, 3, 4}}}, [](core::BlockBuilder& b) {
         b.Op("tril_triu").Input("X", "x").Output("Out", "out").Attr("diagonal", int64_t{1}).Attr("lower", false);
       }});
  cases.push_back({"bmm", {{"x", {2, 3, 4}}, {"y", {2, 4, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("bmm").Input("X", "x").Input("Y", "y").Output("Out", "out");
                   }});
  cases.push_back(
      {"index_sample_repeated_indices",
       {{"x", {2, 4}}},
       [](core::BlockBuilder& b) { b.Op("index_sample").Input("X", "x").Input("Index", "index").Output("Out", "out"); },
       1e-6,
       [](core::Scope& s) {
         core::Tensor* t = s.Var("index")->GetMutableTensor();
         t->Allocate(RILL_INT32, {2, 3});
         const int32_t index[] = {3, 0, 3, 1, 2, 2};
         std::copy(index, index + 6, t->data_as<int32_t>());
       }});
  for (const bool overwrite : {true, false}) {
    cases.push_back({overwrite ? "scatter_overwrite" : "scatter_add",
                     {{"x", {4, 3}}, {"updates", {3, 3}}},
                     [overwrite](core::BlockBuilder& b) {
                       b.Op("scatter")
                           .Input("X", "x")
                           .Input("Ids", "ids")
                           .Input("Updates", "updates")
                           .Output("Out", "out")
                           .Attr("overwrite", overwrite);
                     },
                     1e-6,
                     [](core::Scope& s) {  // distinct rows: with a repeat, overwrite's Updates@GRAD is Paddle's
                       core::Tensor* t = s.Var("ids")->GetMutableTensor();
                       t->Allocate(RILL_INT64, {3});
                       const int64_t ids[] = {3, 0, 2};
                       std::copy(ids, ids + 3, t->data_as<int64_t>());
                     }});
  }
  // Index rows naming slices of x [3, 4, 2] by their first two dims, one named twice (its
  // gradients add up).
  const auto nd_index = [](core::Scope& s) {
    core::Tensor* t = s.Var("index")->GetMutableTensor();
    t->Allocate(RILL_INT32, {2, 2, 2});
    const int32_t index[] = {2, 3, 0, 1, 2, 3, 1, 0};
    std::copy(index, index + 8, t->data_as<int32_t>());
  };
  cases.push_back(
      {"gather_nd_repeated_slice",
       {{"x", {3, 4, 2}}},
       [](core::BlockBuilder& b) { b.Op("gather_nd").Input("X", "x").Input("Index", "index").Output("Out", "out"); },
       1e-6,
       nd_index});
  cases.push_back({"scatter_nd_add_repeated_slice",
                   {{"x", {3, 4, 2}}, {"updates", {2, 2, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("scatter_nd_add")
                         .Input("X", "x")
                         .Input("Index", "index")
                         .Input("Updates", "updates")
                         .Output("Out", "out");
                   },
                   1e-6,
                   nd_index});
  cases.push_back({"strided_slice_backwards_and_stepped", {{"x", {4, 5, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("strided_slice")
                         .Input("Input", "x")
                         .Output("Out", "out")
                         .Attr("axes", std::vector<int64_t>{0, 1})
                         .Attr("starts", std::vector<int64_t>{-1, 0})
                         .Attr("ends", std::vector<int64_t>{-5, 5})
                         .Attr("strides", std::vector<int64_t>{-2, 2});
                   }});
  cases.push_back({"softmax_axis0", {{"x", {3, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("softmax").Input("X", "x").Output("Out", "out").Attr("axis", int32_t{0});
                   }});
  cases.push_back({"softmax_cross_entropy_hard",
                   {{"x", {3, 4}}},
                   [](core::BlockBuilder& b) {
                     b.Op("softmax").Input("X", "x").Output("Out", "p");
                     b.Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "out");
                   },
                   1e-6,
                   [](core::Scope& s) {
                     core::Tensor* t = s.Var("label")->GetMutableTensor();
                     t->Allocate(RILL_INT64, {3, 1});
                     t->data_as<int64_t>()[0] = 3;
                     t->data_as<int64_t>()[1] = 0;
                     t->data_as<int64_t>()[2] = 1;
                   }});
  cases.push_back(
      {"softmax_cross_entropy_soft",
       {{"x", {2, 3}}},
       [](core::BlockBuilder& b) {
         b.Op("softmax").Input("X", "x").Output("Out", "p");
         b.Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "out").Attr("soft_label", true);
       },
       1e-6,
       [](core::Scope& s) {
         core::Tensor* t = s.Var("label")->GetMutableTensor();
         t->Allocate(RILL_FP64, {2, 3});
         const double v[] = {0.2, 0.3, 0.5, 1, 0, 0};
         std::copy(v, v + 6, t->data_as<double>());
       }});
  // Indexing, choosing, running sums, and the losses over logits.
  const auto ints = [](core::Scope& s, const char* name, int32_t dtype, std::vector<int64_t> dims,
                       std::vector<int64_t> v) {
    core::Tensor* t = s.Var(name)->GetMutableTensor();
    t->Allocate(dtype, dims);
    for (size_t i = 0; i < v.size(); ++i) {
      if (dtype == RILL_INT32) t->data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
      else t->data_as<int64_t>()[i] = v[i];
    }
  };
  cases.push_back(
      {"gather_repeated_index",
       {{"x", {4, 3}}},
       [](core::BlockBuilder& b) { b.Op("gather").Input("X", "x").Input("Index", "index").Output("Out", "out"); },
       1e-6,
       [ints](core::Scope& s) {
         ints(s, "index", RILL_INT64, {5}, {2, 0, 2, 3, 2});
       }});
  cases.push_back(
      {"gather_axis1",
       {{"x", {2, 4, 3}}},
       [](core::BlockBuilder& b) {
         b.Op("gather").Input("X", "x").Input("Index", "index").Output("Out", "out").Attr("axis", int32_t{1});
       },
       1e-6,
       [ints](core::Scope& s) {
         ints(s, "index", RILL_INT32, {3, 1}, {3, 1, 3});
       }});
  cases.push_back({"where",
                   {{"x", {2, 3}}, {"y", {2, 3}}},
                   [](core::BlockBuilder& b) {
                     b.Op("where").Input("Condition", "c").Input("X", "x").Input("Y", "y").Output("Out", "out");
                   },
                   1e-6,
                   [](core::Scope& s) {
                     core::Tensor* t = s.Var("c")->GetMutableTensor();
                     t->Allocate(RILL_BOOL, {2, 3});
                     const bool v[] = {true, false, false, true, true, false};
                     std::copy(v, v + 6, t->data_as<bool>());
                   }});
  cases.push_back({"cumsum", {{"x", {3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("cumsum").Input("X", "x").Output("Out", "out").Attr("axis", int32_t{0});
                   }});
  cases.push_back({"cumsum_exclusive_reverse", {{"x", {2, 5}}}, [](core::BlockBuilder& b) {
                     b.Op("cumsum").Input("X", "x").Output("Out", "out").Attr("exclusive", true).Attr("reverse", true);
                   }});
  cases.push_back({"cumsum_flatten", {{"x", {2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("cumsum").Input("X", "x").Output("Out", "out").Attr("flatten", true);
                   }});
  cases.push_back(
      {"tile", {{"x", {2, 1, 3}}}, [](core::BlockBuilder& b) {
         b.Op("tile").Input("X", "x").Output("Out", "out").Attr("repeat_times", std::vector<int64_t>{2, 3, 1, 2});
       }});
  cases.push_back(
      {"expand_v2", {{"x", {3, 1}}}, [](core::BlockBuilder& b) {
         b.Op("expand_v2").Input("X", "x").Output("Out", "out").Attr("shape", std::vector<int64_t>{2, -1, 4});
       }});
  cases.push_back(
      {"expand_as_v2", {{"x", {1, 3}}}, [](core::BlockBuilder& b) {
         b.Op("expand_as_v2").Input("X", "x").Output("Out", "out").Attr("target_shape", std::vector<int64_t>{2, 3});
       }});
  cases.push_back({"pad2d_reflect_nhwc", {{"x", {1, 3, 4, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("pad2d")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("paddings", std::vector<int64_t>{2, 1, 0, 3})
                         .Attr("mode", std::string("reflect"))
                         .Attr("data_format", std::string("NHWC"));
                   }});
  cases.push_back({"pad3d_circular", {{"x", {1, 1, 2, 3, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("pad3d")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("paddings", std::vector<int64_t>{1, 2, 3, 0, 2, 1})
                         .Attr("mode", std::string("circular"));
                   }});
  cases.push_back({"prelu_channel", {{"x", {2, 3, 2}}, {"alpha", {3}, 0.1, 0.5}}, [](core::BlockBuilder& b) {
                     b.Op("prelu")
                         .Input("X", "x")
                         .Input("Alpha", "alpha")
                         .Output("Out", "out")
                         .Attr("mode", std::string("channel"));
                   }});
  cases.push_back({"prelu_element", {{"x", {2, 3}}, {"alpha", {3}, 0.1, 0.5}}, [](core::BlockBuilder& b) {
                     b.Op("prelu")
                         .Input("X", "x")
                         .Input("Alpha", "alpha")
                         .Output("Out", "out")
                         .Attr("mode", std::string("element"));
                   }});
  cases.push_back({"bilinear_interp_v2_half_pixel", {{"x", {1, 2, 3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("bilinear_interp_v2")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("out_h", int32_t{5})
                         .Attr("out_w", int32_t{3})
                         .Attr("interp_method", std::string("bilinear"))
                         .Attr("align_corners", false)
                         .Attr("align_mode", int32_t{0});
                   }});
  cases.push_back({"bilinear_interp_align_corners_nhwc", {{"x", {1, 3, 2, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("bilinear_interp")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("out_h", int32_t{4})
                         .Attr("out_w", int32_t{5})
                         .Attr("interp_method", std::string("bilinear"))
                         .Attr("data_layout", std::string("NHWC"));
                   }});
  cases.push_back({"nearest_interp_v2", {{"x", {1, 1, 3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("nearest_interp_v2")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("out_h", int32_t{5})
                         .Attr("out_w", int32_t{2})
                         .Attr("interp_method", std::string("nearest"));
                   }});
  cases.push_back({"group_norm", {{"x", {2, 4, 3}}, {"scale", {4}}, {"bias", {4}}}, [](core::BlockBuilder& b) {
                     b.Op("group_norm")
                         .Input("X", "x")
                         .Input("Scale", "scale")
                         .Input("Bias", "bias")
                         .Output("Y", "out")
                         .Output("Mean", "mean")
                         .Output("Variance", "var")
                         .Attr("groups", int32_t{2});
                   }});
  cases.push_back({"instance_norm", {{"x", {2, 3, 4}}, {"scale", {3}}}, [](core::BlockBuilder& b) {
                     b.Op("instance_norm").Input("X", "x").Input("Scale", "scale").Output("Y", "out");
                   }});
  cases.push_back({"squared_l2_norm", {{"x", {2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("squared_l2_norm").Input("X", "x").Output("Out", "out");
                   }});
  cases.push_back({"label_smooth", {{"x", {2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("label_smooth").Input("X", "x").Output("Out", "out").Attr("epsilon", 0.25f);
                   }});
  cases.push_back({"roll", {{"x", {3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("roll")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("shifts", std::vector<int64_t>{-1, 6})
                         .Attr("axis", std::vector<int64_t>{0, 1});
                   }});
  cases.push_back({"flip", {{"x", {3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("flip").Input("X", "x").Output("Out", "out").Attr("axis", std::vector<int64_t>{1});
                   }});
  cases.push_back(
      {"index_select",
       {{"x", {3, 4}}},
       [](core::BlockBuilder& b) {
         b.Op("index_select").Input("X", "x").Input("Index", "index").Output("Out", "out").Attr("dim", int32_t{1});
       },
       1e-6,
       [ints](core::Scope& s) {
         ints(s, "index", RILL_INT64, {3}, {3, 3, 0});
       }});
  cases.push_back({"lrn", {{"x", {2, 5, 2, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("lrn")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Output("MidOut", "mid")
                         .Attr("n", int32_t{3})
                         .Attr("k", 1.0f)
                         .Attr("alpha", 0.5f)
                         .Attr("beta", 0.75f);
                   }});
  cases.push_back({"lrn_nhwc", {{"x", {2, 2, 2, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("lrn")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Output("MidOut", "mid")
                         .Attr("n", int32_t{3})
                         .Attr("alpha", 0.5f)
                         .Attr("data_format", std::string("NHWC"));
                   }});
  cases.push_back({"maxout", {{"x", {2, 6, 2, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("maxout").Input("X", "x").Output("Out", "out").Attr("groups", int32_t{3});
                   }});
  cases.push_back(
      {"maxout_nhwc", {{"x", {2, 2, 2, 4}}}, [](core::BlockBuilder& b) {
         b.Op("maxout").Input("X", "x").Output("Out", "out").Attr("groups", int32_t{2}).Attr("axis", int32_t{-1});
       }});
  cases.push_back({"crop", {{"x", {3, 5}}}, [](core::BlockBuilder& b) {
                     b.Op("crop")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("shape", std::vector<int64_t>{2, 3})
                         .Attr("offsets", std::vector<int64_t>{1, 2});
                   }});
  cases.push_back({"norm", {{"x", {2, 3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("norm")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Output("Norm", "norm")
                         .Attr("axis", int32_t{1})
                         .Attr("epsilon", 1e-10f);
                   }});
  cases.push_back({"multiplex",
                   {{"x0", {3, 2}}, {"x1", {3, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("multiplex").Input("X", {"x0", "x1"}).Input("Ids", "ids").Output("Out", "out");
                   },
                   1e-6,
                   [ints](core::Scope& s) {
                     ints(s, "ids", RILL_INT32, {3, 1}, {1, 0, 1});
                   }});
  cases.push_back({"roi_pool",
                   {{"x", {1, 2, 6, 6}}},
                   [](core::BlockBuilder& b) {
                     b.Op("roi_pool")
                         .Input("X", "x")
                         .Input("ROIs", "rois")
                         .Input("RoisNum", "rois_num")
                         .Output("Out", "out")
                         .Output("Argmax", "argmax")
                         .Attr("pooled_height", int32_t{2})
                         .Attr("pooled_width", int32_t{2})
                         .Attr("spatial_scale", 0.5f);
                   },
                   1e-6,
                   [ints](core::Scope& s) {
                     core::Tensor* r = s.Var("rois")->GetMutableTensor();
                     r->Allocate(RILL_FP64, {2, 4});
                     const double boxes[] = {0, 0, 9, 9, 2, 4, 7, 11};
                     std::copy(boxes, boxes + 8, r->data_as<double>());
                     ints(s, "rois_num", RILL_INT32, {1}, {2});
                   }});
  cases.push_back({"smooth_l1_loss",
                   {{"x", {3, 4}, -2, 2}, {"y", {3, 4}, -2, 2}},
                   [](core::BlockBuilder& b) {
                     b.Op("smooth_l1_loss")
                         .Input("X", "x")
                         .Input("Y", "y")
                         .Input("InsideWeight", "iw")
                         .Input("OutsideWeight", "ow")
                         .Output("Diff", "diff")
                         .Output("Out", "out")
                         .Attr("sigma", 1.5f);
                   },
                   1e-6,
                   [](core::Scope& s) {
                     for (const char* name : {"iw", "ow"}) {
                       core::Tensor* w = s.Var(name)->GetMutableTensor();
                       w->Allocate(RILL_FP64, {3, 4});
                       for (int i = 0; i < 12; ++i) w->data_as<double>()[i] = 0.5 + 0.1 * i;
                     }
                   }});
  cases.push_back({"log_softmax", {{"x", {3, 4}}}, [](core::BlockBuilder& b) {
                     b.Op("log_softmax").Input("X", "x").Output("Out", "out");
                   }});
  cases.push_back({"log_softmax_axis0", {{"x", {3, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("log_softmax").Input("X", "x").Output("Out", "out").Attr("axis", int32_t{0});
                   }});
  for (bool normalize : {false, true}) {
    cases.push_back({std::string("sigmoid_cross_entropy_with_logits") + (normalize ? "_normalized" : ""),
                     {{"x", {2, 4}, -3, 3}},
                     [normalize](core::BlockBuilder& b) {
                       b.Op("sigmoid_cross_entropy_with_logits")
                           .Input("X", "x")
                           .Input("Label", "label")
                           .Output("Out", "out")
                           .Attr("normalize", normalize)
                           .Attr("ignore_index", int32_t{-1});
                     },
                     1e-6,
                     [](core::Scope& s) {
                       core::Tensor* t = s.Var("label")->GetMutableTensor();
                       t->Allocate(RILL_FP64, {2, 4});
                       const double v[] = {0, 1, 0.25, -1, 1, 0.5, -1, 0};  // -1: ignored
                       std::copy(v, v + 8, t->data_as<double>());
                     }});
  }
  // Embeddings: a repeated id adds up, the padding id gets nothing.
  const auto ids = [](std::vector<int64_t> dims, std::vector<int64_t> values) {
    return [dims, values](core::Scope& s) {
      core::Tensor* t = s.Var("ids")->GetMutableTensor();
      t->Allocate(RILL_INT64, dims);
      std::copy(values.begin(), values.end(), t->data_as<int64_t>());
    };
  };
  cases.push_back({"lookup_table_v2_repeats_and_padding",
                   {{"w", {5, 3}}},
                   [](core::BlockBuilder& b) {
                     b.Op("lookup_table_v2")
                         .Input("W", "w")
                         .Input("Ids", "ids")
                         .Output("Out", "out")
                         .Attr("padding_idx", int64_t{4});
                   },
                   1e-6,
                   ids({2, 3}, {1, 3, 1, 4, 0, 1})});
  cases.push_back(
      {"lookup_table",
       {{"w", {4, 2}}},
       [](core::BlockBuilder& b) { b.Op("lookup_table").Input("W", "w").Input("Ids", "ids").Output("Out", "out"); },
       1e-6,
       ids({3, 1}, {2, 0, 2})});
  // softmax_with_cross_entropy: hard labels (one ignored), soft labels, the class axis first.
  const auto labels = [](std::vector<int64_t> dims, std::vector<int64_t> values) {
    return [dims, values](core::Scope& s) {
      core::Tensor* t = s.Var("label")->GetMutableTensor();
      t->Allocate(RILL_INT64, dims);
      std::copy(values.begin(), values.end(), t->data_as<int64_t>());
    };
  };
  const auto swce = [](core::BlockBuilder& b) {
    return b.Op("softmax_with_cross_entropy")
        .Input("Logits", "x")
        .Input("Label", "label")
        .Output("Softmax", "p")
        .Output("Loss", "out");
  };
  cases.push_back({"softmax_with_cross_entropy_hard_one_ignored",
                   {{"x", {3, 4}, -2, 2}},
                   [swce](core::BlockBuilder& b) { swce(b).Attr("ignore_index", int64_t{1}); },
                   1e-6,
                   labels({3, 1}, {3, 1, 0})});
  cases.push_back({"softmax_with_cross_entropy_axis0",
                   {{"x", {4, 2}, -2, 2}},
                   [swce](core::BlockBuilder& b) { swce(b).Attr("axis", int64_t{0}); },
                   1e-6,
                   labels({1, 2}, {2, 0})});
  cases.push_back({"softmax_with_cross_entropy_soft",
                   {{"x", {2, 3}, -2, 2}},
                   [swce](core::BlockBuilder& b) { swce(b).Attr("soft_label", true); },
                   1e-6,
                   [](core::Scope& s) {
                     core::Tensor* t = s.Var("label")->GetMutableTensor();
                     t->Allocate(RILL_FP64, {2, 3});
                     const double v[] = {0.2, 0.3, 0.5, 0.6, 0, 0.4};
                     std::copy(v, v + 6, t->data_as<double>());
                   }});
  cases.push_back({"layer_norm_scale_bias", {{"x", {3, 4}}, {"scale", {4}}, {"bias", {4}}}, [](core::BlockBuilder& b) {
                     b.Op("layer_norm")
                         .Input("X", "x")
                         .Input("Scale", "scale")
                         .Input("Bias", "bias")
                         .Output("Y", "out")
                         .Output("Mean", "mean")
                         .Output("Variance", "var");
                   }});
  cases.push_back({"layer_norm_begin_axis_2_no_scale", {{"x", {2, 2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("layer_norm").Input("X", "x").Output("Y", "out").Attr("begin_norm_axis", int32_t{2});
                   }});
  for (const char* how : {"downgrade_in_infer", "upscale_in_train"}) {
    cases.push_back({std::string("dropout_") + how, {{"x", {4, 5}}}, [how](core::BlockBuilder& b) {
                       b.Op("dropout")
                           .Input("X", "x")
                           .Output("Out", "out")
                           .Output("Mask", "mask")
                           .Attr("dropout_prob", 0.3f)
                           .Attr("fix_seed", true)
                           .Attr("seed", int32_t{7})
                           .Attr("dropout_implementation", std::string(how));
                     }});
  }
  cases.push_back({"slice_negative_bounds_decrease_axis", {{"x", {3, 4, 2}}}, [](core::BlockBuilder& b) {
                     b.Op("slice")
                         .Input("Input", "x")
                         .Output("Out", "out")
                         .Attr("axes", std::vector<int64_t>{0, 1})
                         .Attr("starts", std::vector<int64_t>{1, -3})
                         .Attr("ends", std::vector<int64_t>{2, 100})
                         .Attr("decrease_axis", std::vector<int64_t>{0});
                   }});
  cases.push_back({"stack_axis1", {{"a", {2, 3}}, {"b", {2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("stack").Input("X", {"a", "b", "a"}).Output("Y", "out").Attr("axis", int32_t{1});
                   }});
  cases.push_back(
      {"expand", {{"x", {2, 1, 3}}}, [](core::BlockBuilder& b) {
         b.Op("expand").Input("X", "x").Output("Out", "out").Attr("expand_times", std::vector<int64_t>{2, 3, 1});
       }});
  // batch_norm: the running statistics are inputs, not parameters.
  const auto running = [](core::Scope& s) {
    for (const char* name : {"mean", "var"}) {
      core::Tensor* t = s.Var(name)->GetMutableTensor();
      t->Allocate(RILL_FP64, {3});
      for (int i = 0; i < 3; ++i) t->data_as<double>()[i] = name[0] == 'm' ? 0.1 * i : 0.5 + i;
    }
  };
  for (const auto& [name, layout, global] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"batch_norm_nchw", "NCHW", false},
                                                               {"batch_norm_nhwc", "NHWC", false},
                                                               {"batch_norm_global_stats", "NCHW", true}}) {
    const std::vector<int64_t> dims =
        layout == "NCHW" ? std::vector<int64_t>{2, 3, 2, 2} : std::vector<int64_t>{2, 2, 2, 3};
    cases.push_back({name,
                     {{"x", dims}, {"scale", {3}}, {"bias", {3}}},
                     [layout = layout, global = global](core::BlockBuilder& b) {
                       b.Op("batch_norm")
                           .Input("X", "x")
                           .Input("Scale", "scale")
                           .Input("Bias", "bias")
                           .Input("Mean", "mean")
                           .Input("Variance", "var")
                           .Output("Y", "out")
                           .Output("MeanOut", "mean_out")
                           .Output("VarianceOut", "var_out")
                           .Output("SavedMean", "saved_mean")
                           .Output("SavedVariance", "saved_var")
                           .Attr("data_layout", layout)
                           .Attr("use_global_stats", global);
                     },
                     1e-6,
                     running});
  }
  const std::vector<std::pair<std::string, std::function<void(core::OpBuilder&)>>> pools = {
      {"pool2d_max_strided",
       [](core::OpBuilder& o) {
         o.Attr("ksize", std::vector<int64_t>{2, 2}).Attr("strides", std::vector<int64_t>{2, 1});
       }},
      {"pool2d_avg_padded",
       [](core::OpBuilder& o) {
         o.Attr("pooling_type", std::string("avg"))
             .Attr("ksize", std::vector<int64_t>{3, 3})
             .Attr("paddings", std::vector<int64_t>{1, 1});
       }},
      {"pool2d_avg_not_exclusive_ceil",
       [](core::OpBuilder& o) {
         o.Attr("pooling_type", std::string("avg"))
             .Attr("ksize", std::vector<int64_t>{2, 2})
             .Attr("strides", std::vector<int64_t>{2, 2})
             .Attr("exclusive", false)
             .Attr("ceil_mode", true);
       }},
      {"pool2d_adaptive_nhwc",
       [](core::OpBuilder& o) {
         o.Attr("pooling_type", std::string("avg"))
             .Attr("ksize", std::vector<int64_t>{2, 2})
             .Attr("adaptive", true)
             .Attr("data_format", std::string("NHWC"));
       }},
  };
  for (const auto& [name, attrs] : pools) {
    cases.push_back({name, {{"x", {2, 2, 3, 5}}}, [attrs = attrs](core::BlockBuilder& b) {
                       core::OpBuilder op = b.Op("pool2d").Input("X", "x").Output("Out", "out");
                       attrs(op);
                     }});
  }
  cases.push_back({"max_pool2d_with_index_padded", {{"x", {2, 2, 3, 5}}}, [](core::BlockBuilder& b) {
                     b.Op("max_pool2d_with_index")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Output("Mask", "mask")
                         .Attr("ksize", std::vector<int64_t>{2, 2})
                         .Attr("strides", std::vector<int64_t>{2, 1})
                         .Attr("paddings", std::vector<int64_t>{1, 0});
                   }});
  cases.push_back({"max_pool3d_with_index_adaptive", {{"x", {1, 2, 3, 4, 5}}}, [](core::BlockBuilder& b) {
                     b.Op("max_pool3d_with_index")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Output("Mask", "mask")
                         .Attr("ksize", std::vector<int64_t>{2, 2, 3})
                         .Attr("adaptive", true);
                   }});
  const auto conv = [](const std::string& type, std::vector<int64_t> x, std::vector<int64_t> w,
                       std::function<void(core::OpBuilder&)> attrs) {
    return GradCase{type + "_" + std::to_string(x[1]) + "x" + std::to_string(w[0]) + "_" + std::to_string(w[2]) +
                        std::to_string(w[3]),
                    {{"x", x}, {"w", w}},
                    [type, attrs](core::BlockBuilder& b) {
                      core::OpBuilder op = b.Op(type).Input("Input", "x").Input("Filter", "w").Output("Output", "out");
                      attrs(op);
                    }};
  };
  cases.push_back(conv("conv2d", {2, 2, 5, 4}, {3, 2, 3, 2}, [](core::OpBuilder& o) {
    o.Attr("strides", std::vector<int64_t>{2, 1}).Attr("paddings", std::vector<int64_t>{1, 0, 1, 1});
  }));
  cases.push_back(conv("conv2d", {1, 4, 5, 5}, {2, 2, 2, 2}, [](core::OpBuilder& o) {
    o.Attr("groups", int32_t{2}).Attr("dilations", std::vector<int64_t>{2, 2});
  }));
  cases.push_back(conv("conv2d", {1, 4, 4, 2}, {3, 2, 2, 2}, [](core::OpBuilder& o) {  // NHWC: x is [1, 4, 4, 2]
    o.Attr("data_format", std::string("NHWC")).Attr("padding_algorithm", std::string("SAME"));
  }));
  cases.push_back(conv("conv2d_transpose", {1, 2, 3, 3}, {2, 3, 3, 2}, [](core::OpBuilder& o) {
    o.Attr("strides", std::vector<int64_t>{2, 1})
        .Attr("paddings", std::vector<int64_t>{1, 0})
        .Attr("output_padding", std::vector<int64_t>{1, 0});
  }));
  cases.push_back(conv("conv2d_transpose", {1, 3, 2, 4}, {4, 1, 2, 2}, [](core::OpBuilder& o) {  // NHWC, C = 4
    o.Attr("groups", int32_t{2}).Attr("data_format", std::string("NHWC"));
  }));
  cases.push_back(conv("depthwise_conv2d", {1, 3, 4, 4}, {3, 1, 3, 3}, [](core::OpBuilder& o) {
    o.Attr("groups", int32_t{3}).Attr("paddings", std::vector<int64_t>{1, 1});
  }));
  cases.push_back({"concat_axis1", {{"a", {2, 1}}, {"b", {2, 3}}}, [](core::BlockBuilder& b) {
                     b.Op("concat").Input("X", {"a", "b"}).Output("Out", "out").Attr("axis", int32_t{1});
                   }});
  cases.push_back(
      {"split_sections_one_piece_used", {{"x", {5, 2}}}, [](core::BlockBuilder& b) {
         // Only the second piece reaches the loss: the first one's gradient is zeros.
         b.Op("split").Input("X", "x").Output("Out", {"p0", "out"}).Attr("sections", std::vector<int64_t>{2, 3});
       }});
  cases.push_back(
      {"assign", {{"x", {3}}}, [](core::BlockBuilder& b) { b.Op("assign").Input("X", "x").Output("Out", "out"); }});
  cases.push_back({"variable_used_by_two_ops", {{"x", {2, 2}}, {"w", {2, 2}}}, [](core::BlockBuilder& b) {
                     // out = x * w + tanh(x): x's gradient is summed from two grad ops.
                     b.Op("elementwise_mul").Input("X", "x").Input("Y", "w").Output("Out", "xw");
                     b.Op("tanh").Input("X", "x").Output("Out", "tx");
                     b.Op("elementwise_add").Input("X", "xw").Input("Y", "tx").Output("Out", "out");
                   }});
  cases.push_back({"fit_a_line_chain",
                   {{"w", {3, 1}}, {"b", {1}}},
                   [](core::BlockBuilder& b) {
                     b.Op("mul").Input("X", "data").Input("Y", "w").Output("Out", "xw");
                     b.Op("elementwise_add").Input("X", "xw").Input("Y", "b").Output("Out", "pred");
                     b.Op("elementwise_sub").Input("X", "pred").Input("Y", "target").Output("Out", "err");
                     b.Op("square").Input("X", "err").Output("Out", "se");
                     b.Op("mean").Input("X", "se").Output("Out", "out");
                   },
                   1e-6,
                   [](core::Scope& s) {
                     core::Tensor* d = s.Var("data")->GetMutableTensor();
                     d->Allocate(RILL_FP64, {4, 3});
                     for (int i = 0; i < 12; ++i) d->data_as<double>()[i] = 0.1 * i - 0.4;
                     core::Tensor* t = s.Var("target")->GetMutableTensor();
                     t->Allocate(RILL_FP64, {4, 1});
                     for (int i = 0; i < 4; ++i) t->data_as<double>()[i] = i;
                   }});
  // Sequences: x packs three (one of them empty) by its LoD, set after the values.
  const auto sequences = [](const core::LoD& lod) {
    return [lod](core::Scope& s) { s.FindVar("x")->GetMutableTensor()->mutable_lod() = lod; };
  };
  for (const char* pool : {"SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"}) {
    cases.push_back({std::string("sequence_pool_") + pool,
                     {{"x", {5, 3}}},
                     [pool](core::BlockBuilder& b) {
                       b.Op("sequence_pool")
                           .Input("X", "x")
                           .Output("Out", "out")
                           .Output("MaxIndex", "max_index")
                           .Attr("pooltype", std::string(pool));
                     },
                     1e-6,
                     sequences({{0, 2, 2, 5}})});
  }
  cases.push_back({"sequence_conv",
                   {{"x", {6, 2}}, {"filter", {6, 4}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_conv")
                         .Input("X", "x")
                         .Input("Filter", "filter")
                         .Output("Out", "out")
                         .Attr("contextLength", int32_t{3})
                         .Attr("contextStart", int32_t{-1});
                   },
                   1e-6,
                   sequences({{0, 2, 6}})});
  // Trainable padding: context rows before (one) and after (two) a sequence read PaddingData's.
  cases.push_back({"sequence_conv_padding_trainable",
                   {{"x", {6, 2}}, {"filter", {8, 3}}, {"padding", {3, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_conv")
                         .Input("X", "x")
                         .Input("Filter", "filter")
                         .Input("PaddingData", "padding")
                         .Output("Out", "out")
                         .Attr("contextLength", int32_t{4})
                         .Attr("contextStart", int32_t{-1})
                         .Attr("paddingTrainable", true);
                   },
                   1e-6,
                   sequences({{0, 1, 1, 6}})});
  cases.push_back({"sequence_pad",
                   {{"x", {5, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_pad")
                         .Input("X", "x")
                         .Input("PadValue", "pad")
                         .Output("Out", "out")
                         .Output("Length", "length")
                         .Attr("padded_length", int64_t{4});
                   },
                   1e-6,
                   [](core::Scope& s) {
                     s.FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 5}};
                     *static_cast<double*>(s.Var("pad")->GetMutableTensor()->Allocate(RILL_FP64, {1})) = 0.5;
                   }});
  cases.push_back({"sequence_unpad",
                   {{"x", {3, 4, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_unpad").Input("X", "x").Input("Length", "length").Output("Out", "out");
                   },
                   1e-6,
                   [](core::Scope& s) {
                     auto* length =
                         static_cast<int64_t*>(s.Var("length")->GetMutableTensor()->Allocate(RILL_INT64, {3}));
                     length[0] = 2, length[1] = 0, length[2] = 4;
                   }});
  cases.push_back({"sequence_concat",
                   {{"x", {3, 2}}, {"x2", {4, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_concat").Input("X", {"x", "x2"}).Output("Out", "out");
                   },
                   1e-6,
                   [](core::Scope& s) {
                     s.FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 0, 3}};
                     s.FindVar("x2")->GetMutableTensor()->mutable_lod() = {{0, 1, 4}};
                   }});
  cases.push_back({"sequence_reshape",
                   {{"x", {4, 3}}},
                   [](core::BlockBuilder& b) {
                     b.Op("sequence_reshape").Input("X", "x").Output("Out", "out").Attr("new_dim", int32_t{6});
                   },
                   1e-6,
                   sequences({{0, 2, 2, 4}})});
  cases.push_back(
      {"sequence_slice",
       {{"x", {6, 2}}},
       [](core::BlockBuilder& b) {
         b.Op("sequence_slice")
             .Input("X", "x")
             .Input("Offset", "offset")
             .Input("Length", "length")
             .Output("Out", "out");
       },
       1e-6,
       [](core::Scope& s) {
         s.FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 4, 4, 6}};
         auto* offset = static_cast<int64_t*>(s.Var("offset")->GetMutableTensor()->Allocate(RILL_INT64, {3, 1}));
         auto* length = static_cast<int64_t*>(s.Var("length")->GetMutableTensor()->Allocate(RILL_INT64, {3, 1}));
         offset[0] = 1, offset[1] = 0, offset[2] = 1;
         length[0] = 2, length[1] = 0, length[2] = 1;
       }});
  cases.push_back({"sequence_softmax",
                   {{"x", {6, 1}}},
                   [](core::BlockBuilder& b) { b.Op("sequence_softmax").Input("X", "x").Output("Out", "out"); },
                   1e-6,
                   sequences({{0, 1, 1, 6}})});
  cases.push_back({"sequence_reverse",
                   {{"x", {5, 3}}},
                   [](core::BlockBuilder& b) { b.Op("sequence_reverse").Input("X", "x").Output("Y", "out"); },
                   1e-6,
                   sequences({{0, 2, 2, 5}})});
  // Y's LoD says how often each unit of x repeats (0, 1 and several times); y's values are
  // never read.
  const auto expanded_by = [](const core::LoD& y_lod, const core::LoD& x_lod) {
    return [y_lod, x_lod](core::Scope& s) {
      core::Tensor* y = s.Var("y")->GetMutableTensor();
      y->Allocate(RILL_FP64, {static_cast<int64_t>(y_lod.back().back()), 1});
      y->mutable_lod() = y_lod;
      s.FindVar("x")->GetMutableTensor()->mutable_lod() = x_lod;
    };
  };
  cases.push_back(
      {"sequence_expand_of_rows",
       {{"x", {3, 2}}},
       [](core::BlockBuilder& b) { b.Op("sequence_expand").Input("X", "x").Input("Y", "y").Output("Out", "out"); },
       1e-6,
       expanded_by({{0, 1, 1, 4}}, {})});
  cases.push_back(
      {"sequence_expand_of_sequences",
       {{"x", {4, 2}}},
       [](core::BlockBuilder& b) { b.Op("sequence_expand").Input("X", "x").Input("Y", "y").Output("Out", "out"); },
       1e-6,
       expanded_by({{0, 2, 2, 3}}, {{0, 1, 3, 4}})});
  cases.push_back(
      {"sequence_expand_as",
       {{"x", {3, 2}}},
       [](core::BlockBuilder& b) { b.Op("sequence_expand_as").Input("X", "x").Input("Y", "y").Output("Out", "out"); },
       1e-6,
       expanded_by({{0, 2, 2, 5}}, {})});
  cases.push_back(
      {"lod_reset",
       {{"x", {5, 2}}},
       [](core::BlockBuilder& b) {
         b.Op("lod_reset").Input("X", "x").Output("Out", "out").Attr("target_lod", std::vector<int64_t>{0, 4, 5});
       },
       1e-6,
       sequences({{0, 2, 2, 5}})});
  // Two ids of sequence 0 land on the same element of row 0; sequence 1 is empty.
  cases.push_back(
      {"sequence_scatter",
       {{"x", {3, 4}}, {"updates", {4, 1}}},
       [](core::BlockBuilder& b) {
         b.Op("sequence_scatter").Input("X", "x").Input("Ids", "ids").Input("Updates", "updates").Output("Out", "out");
       },
       1e-6,
       [](core::Scope& s) {
         core::Tensor* ids = s.Var("ids")->GetMutableTensor();
         auto* id = static_cast<int64_t*>(ids->Allocate(RILL_INT64, {4, 1}));
         id[0] = 1, id[1] = 1, id[2] = 3, id[3] = 0;
         ids->mutable_lod() = {{0, 2, 2, 4}};
         s.FindVar("updates")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 4}};
       }});
  cases.push_back({"im2sequence",
                   {{"x", {2, 2, 3, 4}}},
                   [](core::BlockBuilder& b) {
                     b.Op("im2sequence")
                         .Input("X", "x")
                         .Output("Out", "out")
                         .Attr("kernels", std::vector<int64_t>{2, 3})
                         .Attr("strides", std::vector<int64_t>{2, 1})
                         .Attr("paddings", std::vector<int64_t>{1, 1, 0, 1});
                   },
                   1e-6,
                   nullptr});
  const auto row_conv = [](core::BlockBuilder& b) {
    b.Op("row_conv").Input("X", "x").Input("Filter", "filter").Output("Out", "out");
  };
  cases.push_back(
      {"row_conv_of_sequences", {{"x", {6, 3}}, {"filter", {3, 3}}}, row_conv, 1e-6, sequences({{0, 1, 1, 6}})});
  cases.push_back({"row_conv_of_a_batch", {{"x", {2, 4, 3}}, {"filter", {2, 3}}}, row_conv, 1e-6, nullptr});
  // The recurrences: four sequences of lengths 3, 0, 1 and 3 (two of equal length, so the
  // batch order's tie rule is crossed), hidden size 2.
  const core::LoD recurrent_lod = {{0, 3, 3, 4, 7}};
  cases.push_back({"lstm_with_peepholes_and_initial_states",
                   {{"x", {7, 8}}, {"w", {2, 8}}, {"bias", {1, 14}}, {"h0", {4, 2}}, {"c0", {4, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("lstm")
                         .Input("Input", "x")
                         .Input("Weight", "w")
                         .Input("Bias", "bias")
                         .Input("H0", "h0")
                         .Input("C0", "c0")
                         .Output("Hidden", "out")
                         .Output("Cell", "cell")
                         .Output("BatchGate", "batch_gate")
                         .Output("BatchCellPreAct", "batch_cell_pre_act");
                   },
                   1e-6,
                   sequences(recurrent_lod)});
  cases.push_back({"lstm_reversed_without_peepholes",
                   {{"x", {7, 8}}, {"w", {2, 8}}, {"bias", {1, 8}}},
                   [](core::BlockBuilder& b) {
                     b.Op("lstm")
                         .Input("Input", "x")
                         .Input("Weight", "w")
                         .Input("Bias", "bias")
                         .Output("Hidden", "out")
                         .Output("Cell", "cell")
                         .Output("BatchGate", "batch_gate")
                         .Output("BatchCellPreAct", "batch_cell_pre_act")
                         .Attr("use_peepholes", false)
                         .Attr("is_reverse", true);
                   },
                   1e-6,
                   sequences(recurrent_lod)});
  const auto gru = [](core::BlockBuilder& b, bool with_h0, bool with_bias) {
    core::OpBuilder op = b.Op("gru");
    op.Input("Input", "x").Input("Weight", "w");
    if (with_h0) op.Input("H0", "h0");
    if (with_bias) op.Input("Bias", "bias");
    op.Output("Hidden", "out")
        .Output("BatchGate", "batch_gate")
        .Output("BatchResetHiddenPrev", "batch_reset_hidden_prev")
        .Output("BatchHidden", "batch_hidden");
    return op;
  };
  cases.push_back({"gru_with_initial_state",
                   {{"x", {7, 6}}, {"w", {2, 6}}, {"bias", {1, 6}}, {"h0", {4, 2}}},
                   [gru](core::BlockBuilder& b) { gru(b, true, true); },
                   1e-6,
                   sequences(recurrent_lod)});
  // One step of a batch: H and C both carry gradient back (out = H + C).
  cases.push_back({"lstm_unit",
                   {{"x", {3, 8}}, {"c_prev", {3, 2}}},
                   [](core::BlockBuilder& b) {
                     b.Op("lstm_unit")
                         .Input("X", "x")
                         .Input("C_prev", "c_prev")
                         .Output("C", "c")
                         .Output("H", "h")
                         .Attr("forget_bias", 0.5f);
                     b.Op("elementwise_add").Input("X", "h").Input("Y", "c").Output("Out", "out");
                   },
                   1e-6,
                   nullptr});
  const auto gru_unit = [](core::BlockBuilder& b, bool with_bias) {
    core::OpBuilder op = b.Op("gru_unit");
    op.Input("Input", "x").Input("HiddenPrev", "h_prev").Input("Weight", "w");
    if (with_bias) op.Input("Bias", "bias");
    op.Output("Gate", "gate").Output("ResetHiddenPrev", "reset_hidden_prev").Output("Hidden", "out");
    return op;
  };
  cases.push_back({"gru_unit",
                   {{"x", {3, 6}}, {"h_prev", {3, 2}}, {"w", {2, 6}}, {"bias", {1, 6}}},
                   [gru_unit](core::BlockBuilder& b) { gru_unit(b, true); },
                   1e-6,
                   nullptr});
  cases.push_back({"gru_unit_origin_mode_without_bias",
                   {{"x", {3, 6}}, {"h_prev", {3, 2}}, {"w", {2, 6}}},
                   [gru_unit](core::BlockBuilder& b) { gru_unit(b, false).Attr("origin_mode", true); },
                   1e-6,
                   nullptr});
  cases.push_back(
      {"gru_reversed_origin_mode_without_bias",
       {{"x", {7, 6}}, {"w", {2, 6}}},
       [gru](core::BlockBuilder& b) { gru(b, false, false).Attr("origin_mode", true).Attr("is_reverse", true); },
       1e-6,
       sequences(recurrent_lod)});
  // lstmp: hidden size 2 projected to 3; with the initial states and both clamps (0.5 is
  // within the range the values take, so some clamp and some do not), and without.
  const auto lstmp = [](core::BlockBuilder& b, bool with_states) {
    core::OpBuilder op = b.Op("lstmp");
    op.Input("Input", "x").Input("Weight", "w").Input("ProjWeight", "proj_w").Input("Bias", "bias");
    if (with_states) op.Input("H0", "h0").Input("C0", "c0");
    op.Output("Projection", "out")
        .Output("Cell", "cell")
        .Output("BatchGate", "batch_gate")
        .Output("BatchCellPreAct", "batch_cell_pre_act")
        .Output("BatchHidden", "batch_hidden");
    return op;
  };
  cases.push_back(
      {"lstmp_with_initial_states_and_clamps",
       {{"x", {7, 8}}, {"w", {3, 8}}, {"proj_w", {2, 3}}, {"bias", {1, 14}}, {"h0", {4, 3}}, {"c0", {4, 2}}},
       [lstmp](core::BlockBuilder& b) { lstmp(b, true).Attr("cell_clip", 0.5f).Attr("proj_clip", 0.5f); },
       1e-6,
       sequences(recurrent_lod)});
  cases.push_back({"lstmp_reversed_linear_projection",
                   {{"x", {7, 8}}, {"w", {3, 8}}, {"proj_w", {2, 3}}, {"bias", {1, 8}}},
                   [lstmp](core::BlockBuilder& b) {
                     lstmp(b, false)
                         .Attr("use_peepholes", false)
                         .Attr("is_reverse", true)
                         .Attr("proj_activation", std::string("identity"));
                   },
                   1e-6,
                   sequences(recurrent_lod)});
  // The linear-chain CRF: sequences of lengths 2, 0, 1 and 3 over 3 tags (LoD on Label, as
  // the op reads it), and the same sequences padded to length 3 with a Length input.
  const auto crf_labels = [](std::vector<int64_t> dims, std::vector<int64_t> values, core::LoD lod,
                             std::vector<int64_t> lengths) {
    return [=](core::Scope& s) {
      core::Tensor* t = s.Var("label")->GetMutableTensor();
      t->Allocate(RILL_INT64, dims);
      std::copy(values.begin(), values.end(), t->data_as<int64_t>());
      t->mutable_lod() = lod;
      if (lengths.empty()) return;
      core::Tensor* l = s.Var("length")->GetMutableTensor();
      l->Allocate(RILL_INT64, {static_cast<int64_t>(lengths.size())});
      std::copy(lengths.begin(), lengths.end(), l->data_as<int64_t>());
    };
  };
  const auto crf = [](core::BlockBuilder& b, bool padded) {
    core::OpBuilder op = b.Op("linear_chain_crf");
    op.Input("Emission", "x").Input("Transition", "transition").Input("Label", "label");
    if (padded) op.Input("Length", "length");
    op.Output("Alpha", "alpha")
        .Output("EmissionExps", "emission_exps")
        .Output("TransitionExps", "transition_exps")
        .Output("LogLikelihood", "out");
  };
  cases.push_back({"linear_chain_crf_of_sequences",
                   {{"x", {6, 3}, -2, 2}, {"transition", {5, 3}}},
                   [crf](core::BlockBuilder& b) { crf(b, false); },
                   1e-6,
                   crf_labels({6, 1}, {2, 0, 1, 0, 2, 2}, {{0, 2, 2, 3, 6}}, {})});
  cases.push_back({"linear_chain_crf_padded",
                   {{"x", {4, 3, 3}, -2, 2}, {"transition", {5, 3}}},
                   [crf](core::BlockBuilder& b) { crf(b, true); },
                   1e-6,
                   crf_labels({4, 3}, {2, 0, 0, 0, 0, 0, 1, 1, 1, 0, 2, 2}, {}, {2, 0, 1, 3})});
  const auto cos_sim = [](core::BlockBuilder& b) {
    b.Op("cos_sim")
        .Input("X", "x")
        .Input("Y", "y")
        .Output("Out", "out")
        .Output("XNorm", "x_norm")
        .Output("YNorm", "y_norm");
  };
  cases.push_back({"cos_sim", {{"x", {3, 2, 2}}, {"y", {3, 2, 2}}}, cos_sim, 1e-6, nullptr});
  cases.push_back({"cos_sim_of_one_y_row", {{"x", {3, 4}}, {"y", {1, 4}}}, cos_sim, 1e-6, nullptr});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryGradOp, GradientCheck, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) { return info.param.name; });

}  // namespace
}  // namespace rill::test
