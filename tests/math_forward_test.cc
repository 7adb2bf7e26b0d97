// Forward math ops against reference values worked out by hand, for every dtype each op
// registers; plus the dtype and shape errors users will hit.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "op_fixture.h"
#include "plugins/math/philox.h"

namespace rill::test {
namespace {

// ---- Elementwise binary ops, every numeric dtype ---------------------------------------

// Where `want` is NaN, infinite or zero, expects `have` to be the same (a zero's sign too)
// and returns true; else returns false, leaving the caller to bound |have - want| in ulp.
template <class T> bool ExpectSpecialValue(T have, T want, const ::testing::Message& where) {
  if (!(std::isnan(want) || std::isinf(want) || want == 0)) return false;
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(have)) << where << " gave " << have;
  } else {
    EXPECT_EQ(have, want) << where;
    EXPECT_EQ(std::signbit(have), std::signbit(want)) << where;
  }
  return true;
}

template <class T> class Elementwise : public OpFixture {};
using NumericTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(Elementwise, NumericTypes);

TYPED_TEST(Elementwise, BroadcastRowAgainstReference) {
  using T = TypeParam;
  this->template Set<T>("x", {2, 3}, {2, 4, 6, 8, 10, 12});
  this->template Set<T>("y", {3}, {1, 2, 4});
  this->template Set<T>("m", {3}, {3, 5, 7});
  this->template Set<T>("b", {2, 3}, {1, 2, 3, 1, 2, 3});
  this->template Set<T>("e", {3}, {2, 3, 2});
  for (const char* op : {"add", "sub", "mul", "div"}) {
    this->Op(std::string("elementwise_") + op).Input("X", "x").Input("Y", "y").Output("Out", op);
  }
  this->Op("elementwise_max").Input("X", "x").Input("Y", "m").Output("Out", "max");
  this->Op("elementwise_min").Input("X", "x").Input("Y", "m").Output("Out", "min");
  this->Op("elementwise_pow").Input("X", "b").Input("Y", "e").Output("Out", "pow");
  ASSERT_EQ(this->Run(), "");
  const bool integral = std::is_integral_v<T>;
  EXPECT_EQ(this->Values("add"), (std::vector<double>{3, 6, 10, 9, 12, 16}));
  EXPECT_EQ(this->Values("sub"), (std::vector<double>{1, 2, 2, 7, 8, 8}));
  EXPECT_EQ(this->Values("mul"), (std::vector<double>{2, 8, 24, 8, 20, 48}));
  EXPECT_EQ(this->Values("div"), (std::vector<double>{2, 2, integral ? 1 : 1.5, 8, 5, 3}));
  EXPECT_EQ(this->Values("max"), (std::vector<double>{3, 5, 7, 8, 10, 12}));
  EXPECT_EQ(this->Values("min"), (std::vector<double>{2, 4, 6, 3, 5, 7}));
  EXPECT_EQ(this->Values("pow"), (std::vector<double>{1, 8, 9, 1, 8, 9}));
  EXPECT_EQ(this->Dims("add"), (std::vector<int64_t>{2, 3}));
}

TYPED_TEST(Elementwise, SameShapeFastPath) {
  using T = TypeParam;
  this->template Set<T>("x", {4}, {1, 2, 3, 4});
  this->template Set<T>("y", {4}, {4, 3, 2, 1});
  this->Op("elementwise_sub").Input("X", "x").Input("Y", "y").Output("Out", "d");
  this->Op("elementwise_max").Input("X", "x").Input("Y", "y").Output("Out", "x");  // in place
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("d"), (std::vector<double>{-3, -1, 1, 3}));
  EXPECT_EQ(this->Values("x"), (std::vector<double>{4, 3, 3, 4}));
}

// Same-shape operands long enough to be split across the intra-op team and to leave a
// tail past the last whole vector: each element is the op of its pair, computed in T, in
// place too.
TYPED_TEST(Elementwise, SameShapeLoopsGiveEachPairsResult) {
  using T = TypeParam;
  const int64_t n = 300007;
  std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = static_cast<double>((i * 7919) % 201) - 100;
    y[static_cast<size_t>(i)] = static_cast<double>((i * 104729) % 97) + 1;  // never 0
  }
  this->template Set<T>("x", {n}, x);
  this->template Set<T>("y", {n}, y);
  this->template Set<T>("inplace", {n}, x);
  const std::vector<std::string> ops = {"add", "sub", "mul", "div", "max", "min"};
  for (const std::string& op : ops) {
    this->Op("elementwise_" + op).Input("X", "x").Input("Y", "y").Output("Out", op);
  }
  this->Op("elementwise_max").Input("X", "inplace").Input("Y", "y").Output("Out", "inplace");
  ASSERT_EQ(this->Run(), "");
  std::map<std::string, std::vector<double>> want;
  for (int64_t i = 0; i < n; ++i) {
    const T a = static_cast<T>(x[static_cast<size_t>(i)]), b = static_cast<T>(y[static_cast<size_t>(i)]);
    want["add"].push_back(static_cast<double>(static_cast<T>(a + b)));
    want["sub"].push_back(static_cast<double>(static_cast<T>(a - b)));
    want["mul"].push_back(static_cast<double>(static_cast<T>(a * b)));
    want["div"].push_back(static_cast<double>(static_cast<T>(a / b)));  // integers: truncated, as C's
    want["max"].push_back(static_cast<double>(std::max(a, b)));
    want["min"].push_back(static_cast<double>(std::min(a, b)));
  }
  for (const std::string& op : ops) EXPECT_EQ(this->Values(op), want[op]) << op;
  EXPECT_EQ(this->Values("inplace"), want["max"]);
}

class MathForward : public OpFixture {};

TEST_F(MathForward, IntegerDivisionByZeroIsAnError) {
  Set<int32_t>("x", {2}, {1, 2});
  Set<int32_t>("y", {2}, {1, 0});
  Op("elementwise_div").Input("X", "x").Input("Y", "y").Output("Out", "z");
  EXPECT_NE(Run().find("integer division by zero (Y[1] is 0)"), std::string::npos);
}

TEST_F(MathForward, ClipWithMinAboveMaxIsAnError) {
  Set<float>("x", {2}, {1, 2});
  Op("clip").Input("X", "x").Output("Out", "y").Attr("min", 2.0f).Attr("max", 1.0f);
  const std::string error = Run();
  EXPECT_NE(error.find("clip: min (2.000000) is greater than max (1.000000)"), std::string::npos) << error;
}

TEST_F(MathForward, ReshapesAndTransposesThatCannotBeAreErrors) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("reshape2").Input("X", "x").Output("Out", "y").Attr("shape", std::vector<int64_t>{4, -1});
  std::string error = Run();
  EXPECT_NE(error.find("reshape2"), std::string::npos) << error;
  EXPECT_NE(error.find("cannot reshape [2, 3] (6 elements) to [4, -1]"), std::string::npos) << error;
}

TEST_F(MathForward, TransposeNeedsAPermutation) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("transpose2").Input("X", "x").Output("Out", "y").Attr("axis", std::vector<int64_t>{1, 1});
  const std::string error = Run();
  EXPECT_NE(error.find("axis [1, 1] is not a permutation: 1 repeats"), std::string::npos) << error;
}

// Fluid 1.x's first forms of the shape ops (reshape, flatten, squeeze, unsqueeze, transpose),
// which programs saved then hold, give what their second forms give, without XShape, and
// have gradients.
TEST_F(MathForward, FirstFormsOfTheShapeOpsMatchTheirSecond) {
  Set<float>("x", {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<std::pair<std::string, std::function<void(core::OpBuilder&)>>> ops = {
      {"reshape",
       [](core::OpBuilder& o) {
         o.Attr("shape", std::vector<int64_t>{3, -1});
       }},
      {"flatten", [](core::OpBuilder& o) { o.Attr("axis", int64_t{2}); }},
      {"squeeze", [](core::OpBuilder& o) { o.Attr("axes", std::vector<int64_t>{1}); }},
      {"unsqueeze",
       [](core::OpBuilder& o) {
         o.Attr("axes", std::vector<int64_t>{0, -1});
       }},
      {"transpose",
       [](core::OpBuilder& o) {
         o.Attr("axis", std::vector<int64_t>{2, 0, 1});
       }},
  };
  for (const auto& [type, attrs] : ops) {
    for (const std::string& version : {std::string(""), std::string("2")}) {
      core::OpBuilder op = Op(type + version).Input("X", "x").Output("Out", type + version);
      attrs(op);
    }
  }
  ASSERT_EQ(Run(), "");
  for (const auto& [type, attrs] : ops) {
    EXPECT_EQ(Dims(type), Dims(type + "2")) << type;
    EXPECT_EQ(Values(type), Values(type + "2")) << type;
    EXPECT_TRUE(ShippedRegistry().FindOp(type + "_grad") != nullptr) << type;
  }
  EXPECT_EQ(Dims("transpose"), (std::vector<int64_t>{3, 2, 1}));
}

// tril_triu keeps a triangle of each matrix (of any element type: int64 here), bmm
// multiplies matrix by matrix and refuses shapes that are not [B, M, K] and [B, K, N], and
// index_sample reads each row at its indices and refuses one outside the row.
TEST_F(MathForward, TrilTriuBmmAndIndexSampleAsPaddles) {
  Set<int64_t>("m", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("tril_triu").Input("X", "m").Output("Out", "tril").Attr("diagonal", int64_t{0}).Attr("lower", true);
  Op("tril_triu").Input("X", "m").Output("Out", "triu1").Attr("diagonal", int64_t{1}).Attr("lower", false);
  Op("tril_triu").Input("X", "m").Output("Out", "tril_1").Attr("diagonal", int64_t{-1}).Attr("lower", true);
  Set<float>("a", {2, 1, 2}, {1, 2, 3, 4});
  Set<float>("b", {2, 2, 1}, {10, 20, 30, 40});
  Op("bmm").Input("X", "a").Input("Y", "b").Output("Out", "ab");
  Set<double>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<int64_t>("index", {2, 2}, {2, 2, 0, 1});
  Op("index_sample").Input("X", "x").Input("Index", "index").Output("Out", "sampled");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("tril"), (std::vector<double>{1, 0, 0, 4, 5, 0}));
  EXPECT_EQ(Values("triu1"), (std::vector<double>{0, 2, 3, 0, 0, 6}));
  EXPECT_EQ(Values("tril_1"), (std::vector<double>{0, 0, 0, 4, 0, 0}));
  EXPECT_EQ(Get("tril").dtype(), RILL_INT64);
  EXPECT_EQ(Dims("ab"), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(Values("ab"), (std::vector<double>{50, 250}));
  EXPECT_EQ(Values("sampled"), (std::vector<double>{3, 3, 4, 5}));
  pb_ = core::ProgramBuilder();
  Set<float>("c", {1, 2, 2}, {1, 2, 3, 4});
  Op("bmm").Input("X", "c").Input("Y", "b").Output("Out", "broadcast");
  std::string error = Run();
  EXPECT_NE(error.find("X [1, 2, 2] and Y [2, 2, 1] must be [B, M, K] and [B, K, N]"), std::string::npos) << error;
  pb_ = core::ProgramBuilder();
  Set<int64_t>("far", {2, 2}, {0, 3, 0, 0});
  Op("index_sample").Input("X", "x").Input("Index", "far").Output("Out", "far_out");
  error = Run();
  EXPECT_NE(error.find("Index[0, 1] = 3 is outside X's rows of 3"), std::string::npos) << error;
}

// scatter as Paddle's: overwrite gives a row named twice its last update; otherwise a named
// row is the sum of its updates (its own value dropped); a row outside X is refused by name.
// The gradient zeroes the named rows of Out@GRAD for X and gathers them for Updates.
TEST_F(MathForward, ScatterOverwritesOrSumsTheRowsIdsName) {
  Set<float>("x", {3, 2}, {1, 1, 2, 2, 3, 3});
  Set<int64_t>("ids", {3}, {2, 0, 2});
  Set<float>("updates", {3, 2}, {10, 11, 20, 21, 30, 31});
  Op("scatter").Input("X", "x").Input("Ids", "ids").Input("Updates", "updates").Output("Out", "last");
  Op("scatter")
      .Input("X", "x")
      .Input("Ids", "ids")
      .Input("Updates", "updates")
      .Output("Out", "summed")
      .Attr("overwrite", false);
  Set<float>("g", {3, 2}, {1, 2, 3, 4, 5, 6});
  Op("scatter_grad")
      .Input("Ids", "ids")
      .Input("Updates", "updates")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "dx")
      .Output("Updates@GRAD", "dupdates");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("last"), (std::vector<double>{20, 21, 2, 2, 30, 31}));
  EXPECT_EQ(Values("summed"), (std::vector<double>{20, 21, 2, 2, 40, 42}));
  EXPECT_EQ(Values("dx"), (std::vector<double>{0, 0, 3, 4, 0, 0}));
  EXPECT_EQ(Values("dupdates"), (std::vector<double>{5, 6, 1, 2, 5, 6}));
  pb_ = core::ProgramBuilder();
  Set<int32_t>("far", {1}, {3});
  Set<float>("one", {1, 2}, {1, 1});
  Op("scatter").Input("X", "x").Input("Ids", "far").Input("Updates", "one").Output("Out", "out");
  const std::string error = Run();
  EXPECT_NE(error.find("Ids[0] = 3 is not a row of X's 3"), std::string::npos) << error;
}

TEST_F(MathForward, StridedSliceTakesPythonsSlicesWithPaddlesBounds) {
  std::vector<double> x(4 * 10);
  std::iota(x.begin(), x.end(), 0.0);
  Set<float>("x", {4, 10}, x);
  const auto slice = [&](const std::string& out, std::vector<int64_t> axes, std::vector<int64_t> starts,
                         std::vector<int64_t> ends, std::vector<int64_t> strides) -> core::OpBuilder {
    return Op("strided_slice")
        .Input("Input", "x")
        .Output("Out", out)
        .Attr("axes", axes)
        .Attr("starts", starts)
        .Attr("ends", ends)
        .Attr("strides", strides);
  };
  slice("every_third", {1}, {1}, {100}, {3});              // the end clamped: columns 1, 4, 7
  slice("backwards", {0, 1}, {-1, 8}, {0, -1}, {-2, -3});  // rows 3, 1; columns 8, 5, 2 (end -1: past the first)
  slice("last_row", {0}, {-1}, {0}, {1})
      .Attr("infer_flags", std::vector<int64_t>{-1})
      .Attr("decrease_axis", std::vector<int64_t>{0});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Dims("every_third"), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(Values("every_third"), (std::vector<double>{1, 4, 7, 11, 14, 17, 21, 24, 27, 31, 34, 37}));
  EXPECT_EQ(Values("backwards"), (std::vector<double>{38, 35, 32, 18, 15, 12}));
  EXPECT_EQ(Dims("last_row"), (std::vector<int64_t>{10}));
  EXPECT_EQ(Values("last_row"), (std::vector<double>{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
  for (const auto& [starts, ends, strides, error] :
       std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>, std::string>>{
           {{2}, {1}, {1}, "axis 1: start 2 and end 1 make an empty range for stride 1"},
           {{1}, {5}, {-1}, "axis 1: start 1 and end 5 make an empty range for stride -1"},
           {{1}, {5}, {0}, "strides[0] is 0"},
           {{1, 2}, {5}, {1}, "one value per axis of axes (1), got 2, 1 and 1"}}) {
    pb_ = core::ProgramBuilder();
    Set<float>("x", {4, 10}, x);
    slice("out", {1}, starts, ends, strides);
    const std::string got = Run();
    EXPECT_NE(got.find(error), std::string::npos) << got;
  }
  pb_ = core::ProgramBuilder();
  Set<float>("x", {0, 10}, {});
  slice("out", {0}, {-1}, {0}, {1})
      .Attr("infer_flags", std::vector<int64_t>{-1})
      .Attr("decrease_axis", std::vector<int64_t>{0});
  const std::string got = Run();
  EXPECT_NE(got.find("axis 0 is empty: it has no last element to take"), std::string::npos) << got;
}

TEST_F(MathForward, BitwiseOpsWorkOnEveryBitBroadcastingBothWays) {
  // int64 values past 32 bits, and negative ones (two's complement), against a [3, 1]
  // operand broadcast along X's columns while X [2] broadcasts along its rows.
  const double big = static_cast<double>(int64_t{1} << 40);
  Set<int64_t>("x", {2}, {big + 5, -6});
  Set<int64_t>("y", {3, 1}, {3, -1, big});
  Op("bitwise_and").Input("X", "x").Input("Y", "y").Output("Out", "and");
  Op("bitwise_or").Input("X", "x").Input("Y", "y").Output("Out", "or");
  Op("bitwise_xor").Input("X", "x").Input("Y", "y").Output("Out", "xor");
  Op("bitwise_not").Input("X", "x").Output("Out", "not");
  Set<bool>("b", {3}, {1, 0, 1});
  Op("bitwise_not").Input("X", "b").Output("Out", "not_b");
  Set<int16_t>("u", {2}, {0x0f0f, -1});
  Set<int16_t>("v", {2}, {0x00ff, 0x3c});
  Op("bitwise_xor").Input("X", "u").Input("Y", "v").Output("Out", "xor_u");
  ASSERT_EQ(Run(), "");
  const int64_t a = (int64_t{1} << 40) + 5, c = int64_t{1} << 40;
  std::vector<double> want_and, want_or, want_xor;
  for (const int64_t y : {int64_t{3}, int64_t{-1}, c}) {
    for (const int64_t x : {a, int64_t{-6}}) {
      want_and.push_back(static_cast<double>(x & y));
      want_or.push_back(static_cast<double>(x | y));
      want_xor.push_back(static_cast<double>(x ^ y));
    }
  }
  EXPECT_EQ(Dims("and"), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values("and"), want_and);
  EXPECT_EQ(Values("or"), want_or);
  EXPECT_EQ(Values("xor"), want_xor);
  EXPECT_EQ(Values("not"), (std::vector<double>{static_cast<double>(~a), 5}));
  EXPECT_EQ(Values("not_b"), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(Values("xor_u"), (std::vector<double>{0x0ff0, -0x3d}));
}

TEST_F(MathForward, GatherNdAndScatterNdAddReadAndAddTheSlicesIndexRowsName) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<int64_t>("cells", {3, 2}, {1, 2, 0, 0, 1, 2});  // (1, 2) twice
  Set<int32_t>("rows", {2, 1}, {1, 0});
  Set<int64_t>("all", {2, 0}, {});  // the empty index: x whole, twice
  Op("gather_nd").Input("X", "x").Input("Index", "cells").Output("Out", "picked");
  Op("gather_nd").Input("X", "x").Input("Index", "rows").Output("Out", "swapped");
  Op("gather_nd").Input("X", "x").Input("Index", "all").Output("Out", "twice");
  Set<float>("three", {3}, {10, 20, 30});
  Op("scatter_nd_add").Input("X", "x").Input("Index", "cells").Input("Updates", "three").Output("Out", "added");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("picked"), (std::vector<double>{6, 1, 6}));
  EXPECT_EQ(Dims("swapped"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values("swapped"), (std::vector<double>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(Dims("twice"), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Values("added"), (std::vector<double>{21, 2, 3, 4, 5, 46}));
  for (const auto& [index, dims, values, error] :
       std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<double>, std::string>>{
           {"far", {1, 2}, {1, 3}, "Index[0][1] = 3 is outside dimension 1 of X [2, 3]"},
           {"negative", {1, 1}, {-1}, "Index[0][0] = -1 is outside dimension 0"},
           {"long", {1, 3}, {0, 0, 0}, "its last dimension (3) must be at most X's rank (2"}}) {
    pb_ = core::ProgramBuilder();
    Set<int64_t>(index, dims, values);
    Op("gather_nd").Input("X", "x").Input("Index", index).Output("Out", "out");
    const std::string got = Run();
    EXPECT_NE(got.find(error), std::string::npos) << got;
  }
  pb_ = core::ProgramBuilder();
  Set<float>("two", {2}, {1, 1});
  Op("scatter_nd_add").Input("X", "x").Input("Index", "cells").Input("Updates", "two").Output("Out", "out");
  const std::string got = Run();
  EXPECT_NE(got.find("Updates [2] must be [3]"), std::string::npos) << got;
}

// Every permutation of shapes with size-1 dims, neighbours that merge, and tensors large
// enough to be split across the intra-op team, of 1-, 4- and 8-byte elements, against an
// index walk.
template <class T> class Transposes : public OpFixture {};
using TransposeTypes = ::testing::Types<bool, float, double>;
TYPED_TEST_SUITE(Transposes, TransposeTypes);

TYPED_TEST(Transposes, EveryPermutationMatchesAnIndexWalk) {
  using T = TypeParam;
  const std::vector<std::vector<int64_t>> shapes = {{7},          {3, 1},         {5, 4},           {2, 3, 4},
                                                    {1, 6, 1, 5}, {3, 37, 2, 65}, {2, 129, 1, 257}, {40, 3, 70, 2}};
  int index = 0;
  std::vector<std::pair<std::string, std::vector<double>>> expected;
  for (const auto& dims : shapes) {
    const size_t rank = dims.size();
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = std::is_same_v<T, bool> ? (i * 7919 % 3 == 0) : i;
    const std::string x = "x" + std::to_string(index);
    this->template Set<T>(x, dims, values);
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    do {
      std::vector<int64_t> strides(rank, 1), out_dims(rank);
      for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * dims[k];
      for (size_t k = 0; k < rank; ++k) out_dims[k] = dims[perm[k]];
      std::vector<double> want(static_cast<size_t>(n));
      std::vector<int64_t> at(rank, 0);
      for (int64_t i = 0; i < n; ++i) {
        int64_t from = 0;
        for (size_t k = 0; k < rank; ++k) from += at[k] * strides[perm[k]];
        want[i] = values[from];
        for (size_t k = rank; k-- > 0;) {
          if (++at[k] < out_dims[k]) break;
          at[k] = 0;
        }
      }
      const std::string y = "y" + std::to_string(expected.size());
      this->Op("transpose2").Input("X", x).Output("Out", y).Attr("axis", perm);
      expected.emplace_back(y, std::move(want));
    } while (std::next_permutation(perm.begin(), perm.end()));
    ++index;
  }
  ASSERT_EQ(this->Run(), "");
  for (const auto& [y, want] : expected) EXPECT_EQ(this->Values(y), want) << y;
}

TEST_F(MathForward, FcShapeErrorsNameTheShapes) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<float>("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Op("fc").Input("Input", "x").Input("W", "w").Output("Out", "y");
  const std::string error = Run();
  EXPECT_NE(error.find("Input [2, 3] flattens to [2, 3] but W is [4, 2]"), std::string::npos) << error;
}

// lookup_table's sparse gradient: SelectedRows of the looked-up rows (repeats kept, the
// padding row zero), which sgd applies to those rows only, as the dense gradient would.
TEST_F(MathForward, LookupTableSparseGradientUpdatesOnlyItsRows) {
  const std::vector<double> table = {0, 1, 10, 11, 20, 21, 30, 31};
  for (bool sparse : {false, true}) {
    const std::string w = sparse ? "w_sparse" : "w_dense", g = w + "@GRAD";
    Set<float>(w, {4, 2}, table);
    Set<int64_t>("ids", {4}, {2, 0, 2, 3});
    Set<float>("dout", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    Set<float>("lr", {1}, {0.5});
    Op("lookup_table_v2_grad")
        .Input("W", w)
        .Input("Ids", "ids")
        .Input("Out@GRAD", "dout")
        .Output("W@GRAD", g)
        .Attr("is_sparse", sparse)
        .Attr("padding_idx", int64_t{3});
    Op("sgd").Input("Param", w).Input("Grad", g).Input("LearningRate", "lr").Output("ParamOut", w);
  }
  ASSERT_EQ(Run(), "");
  // Row 2 gets (1,2) + (5,6), row 0 gets (3,4), row 3 is padding; row 1 is untouched.
  const std::vector<double> want = {0 - 1.5, 1 - 2, 10, 11, 20 - 3, 21 - 4, 30, 31};
  EXPECT_EQ(Values("w_dense"), want);
  EXPECT_EQ(Values("w_sparse"), want);
  const core::Variable* grad = scope()->FindVar("w_sparse@GRAD");
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->KindName(), "selected_rows");
}

// adam with lookup_table's sparse gradient: as the dense gradient would (every row; the
// untouched ones' moments decay), or in lazy_mode the touched rows alone.
TEST_F(MathForward, DenseOnlyOptimizersNameWhatTheyRefuse) {
  Set<float>("w", {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Set<float>("m", {4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  Set<float>("small", {2, 2}, {0, 0, 0, 0});
  Set<int64_t>("ids", {2}, {2, 0});
  Set<float>("dout", {2, 2}, {1, 2, 3, 4});
  Set<float>("lr", {1}, {0.1});
  Op("lookup_table_v2_grad")
      .Input("W", "w")
      .Input("Ids", "ids")
      .Input("Out@GRAD", "dout")
      .Output("W@GRAD", "g")
      .Attr("is_sparse", true);
  Op("decayed_adagrad")
      .Input("Param", "w")
      .Input("Grad", "g")
      .Input("LearningRate", "lr")
      .Input("Moment", "m")
      .Output("ParamOut", "w")
      .Output("MomentOut", "m");
  const std::string refused = Run();
  EXPECT_NE(refused.find("decayed_adagrad takes a dense Grad, not SelectedRows (sgd, momentum, adam, adagrad and "
                         "rmsprop take rows)"),
            std::string::npos)
      << refused;

  pb_ = core::ProgramBuilder();
  Op("rmsprop")
      .Input("Param", "w")
      .Input("Grad", "m")
      .Input("LearningRate", "lr")
      .Input("Moment", "m")
      .Input("MeanSquare", "small")
      .Output("ParamOut", "w")
      .Output("MomentOut", "m")
      .Output("MeanSquareOut", "small");
  EXPECT_NE(Run().find("MeanSquare [2, 2] must have Param's shape [4, 2]"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Op("rmsprop")
      .Input("Param", "w")
      .Input("Grad", "m")
      .Input("LearningRate", "lr")
      .Input("Moment", "m")
      .Input("MeanSquare", "m")
      .Output("ParamOut", "w")
      .Output("MomentOut", "m")
      .Output("MeanSquareOut", "m")
      .Attr("centered", true);
  EXPECT_NE(Run().find("centered rmsprop needs MeanGrad"), std::string::npos);
}

TEST_F(MathForward, AdamWithASparseGradientMatchesDenseOrLazilyUpdatesItsRows) {
  const std::vector<double> table = {0, 1, 10, 11, 20, 21, 30, 31};
  for (const char* run : {"dense", "sparse", "lazy"}) {
    const std::string w = std::string("w_") + run, g = w + "@GRAD";
    Set<float>(w, {4, 2}, table);
    Set<float>(w + "_m1", {4, 2}, {0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4});
    Set<float>(w + "_m2", {4, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
    Set<float>(w + "_b1", {1}, {0.9});
    Set<float>(w + "_b2", {1}, {0.999});
    Set<int64_t>("ids", {3}, {2, 0, 2});
    Set<float>("dout", {3, 2}, {1, 2, 3, 4, 5, 6});
    Set<float>("lr", {1}, {0.1});
    Op("lookup_table_v2_grad")
        .Input("W", w)
        .Input("Ids", "ids")
        .Input("Out@GRAD", "dout")
        .Output("W@GRAD", g)
        .Attr("is_sparse", std::string(run) != "dense");
    Op("adam")
        .Input("Param", w)
        .Input("Grad", g)
        .Input("LearningRate", "lr")
        .Input("Moment1", w + "_m1")
        .Input("Moment2", w + "_m2")
        .Input("Beta1Pow", w + "_b1")
        .Input("Beta2Pow", w + "_b2")
        .Output("ParamOut", w)
        .Output("Moment1Out", w + "_m1")
        .Output("Moment2Out", w + "_m2")
        .Attr("lazy_mode", std::string(run) == "lazy");
  }
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("w_sparse"), Values("w_dense"));
  EXPECT_EQ(Values("w_sparse_m1"), Values("w_dense_m1"));
  const std::vector<double> lazy = Values("w_lazy"), dense = Values("w_dense"), m1 = Values("w_lazy_m1");
  for (int i : {0, 1, 4, 5}) EXPECT_EQ(lazy[i], dense[i]) << "touched rows 0 and 2 as dense Adam, element " << i;
  for (int i : {2, 3, 6, 7}) {
    EXPECT_EQ(lazy[i], table[i]) << "untouched rows 1 and 3 keep their values, element " << i;
    EXPECT_FLOAT_EQ(m1[i], i < 4 ? 0.2 : 0.4) << "and their moments, element " << i;
  }
  EXPECT_NE(dense[2], table[2]) << "dense Adam moves an untouched row (its moment is not 0)";
}

// One table looked up twice: backward sums the two gradients; sparse ones stay sparse
// (a row both name once, its values summed, as Paddle's MergeAdd), and a dense one among
// them takes theirs in.
TEST_F(MathForward, SumOfSparseGradientsStaysSparseOrAddsIntoADenseOne) {
  Set<float>("w", {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Set<int64_t>("ids_a", {2}, {2, 0});
  Set<int64_t>("ids_b", {1}, {2});
  Set<float>("dout_a", {2, 2}, {1, 2, 3, 4});
  Set<float>("dout_b", {1, 2}, {5, 6});
  Set<float>("dense", {4, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  for (const char* k : {"a", "b"}) {
    Op("lookup_table_v2_grad")
        .Input("W", "w")
        .Input("Ids", std::string("ids_") + k)
        .Input("Out@GRAD", std::string("dout_") + k)
        .Output("W@GRAD", std::string("g_") + k)
        .Attr("is_sparse", true);
  }
  Op("sum").Input("X", {"g_a", "g_b"}).Output("Out", "g_sparse");
  Op("sum").Input("X", {"g_a", "dense", "g_b"}).Output("Out", "g_dense");
  ASSERT_EQ(Run(), "");
  core::Variable* sparse = scope()->FindVar("g_sparse");
  ASSERT_TRUE(sparse->is_selected_rows()) << sparse->KindName();
  EXPECT_EQ(sparse->GetMutableSelectedRows()->rows, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(sparse->GetMutableSelectedRows()->value.ValuesToString(), "3 4 6 8");
  EXPECT_EQ(Values("g_dense"), (std::vector<double>{4, 5, 1, 1, 7, 9, 1, 1}));
}

// Paddle's own example (sequence_pool_op.cc): X packs [1, 3], [2, 4, 6], [5, 1]; a fourth,
// empty sequence gives pad_value. MaxIndex names the row of X each maximum came from.
TEST_F(MathForward, SequencePoolPoolsEachSequenceAsPaddlesExampleSays) {
  const std::map<std::string, std::vector<double>> want = {
      {"AVERAGE", {2, 4, 3, 9}}, {"SUM", {4, 12, 6, 9}}, {"SQRT", {2.828427, 6.928203, 4.242641, 9}},
      {"MAX", {3, 6, 5, 9}},     {"LAST", {3, 6, 1, 9}}, {"FIRST", {1, 2, 5, 9}}};
  Set<float>("x", {7, 1}, {1, 3, 2, 4, 6, 5, 1});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 5, 7, 7}};
  for (const auto& [pool, values] : want) {
    Op("sequence_pool")
        .Input("X", "x")
        .Output("Out", "out_" + pool)
        .Output("MaxIndex", "index_" + pool)
        .Attr("pooltype", pool)
        .Attr("pad_value", 9.0f);
  }
  ASSERT_EQ(Run(), "");
  for (const auto& [pool, values] : want) {
    SCOPED_TRACE(pool);
    EXPECT_EQ(Dims("out_" + pool), (std::vector<int64_t>{4, 1}));
    ExpectNear(Values("out_" + pool), values);
    EXPECT_TRUE(Get("out_" + pool).lod().empty()) << "one level pooled away";
  }
  ExpectNear(Values("index_MAX"), {1, 4, 5, -1});
}

// Rows of 37 (whole vector registers and a tail at every set), float and double: each MAX
// and MaxIndex matches a running maximum kept element by element, the earlier row keeping
// a tie, a NaN never winning and a NaN in a sequence's first row kept.
TEST_F(MathForward, SequencePoolMaxOfWideRowsMatchesARunningMaximum) {
  const int64_t width = 37;
  const std::vector<uint64_t> offsets = {0, 5, 6, 15};
  std::vector<double> x;
  for (int64_t i = 0; i < 15 * width; ++i) x.push_back(static_cast<double>((i * 37) % 11 / 3));  // 0-3: many ties
  x[3 * width + 4] = std::nan("");                                                               // never wins
  x[5 * width + 2] = std::nan("");  // the first (and only) row of sequence 1: kept
  for (const bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "double" : "float");
    if (wide) {
      Set<double>("x", {15, width}, x);
    } else {
      Set<float>("x", {15, width}, x);
    }
    scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {offsets};
    Op("sequence_pool")
        .Input("X", "x")
        .Output("Out", "out")
        .Output("MaxIndex", "index")
        .Attr("pooltype", std::string("MAX"));
    ASSERT_EQ(Run(), "");
    const std::vector<double> out = Values("out"), index = Values("index");
    for (size_t s = 0; s + 1 < offsets.size(); ++s) {
      for (int64_t k = 0; k < width; ++k) {
        double best = x[offsets[s] * width + k];
        uint64_t at = offsets[s];
        for (uint64_t r = offsets[s] + 1; r < offsets[s + 1]; ++r) {
          if (x[r * width + k] > best) best = x[r * width + k], at = r;
        }
        const size_t o = s * width + static_cast<size_t>(k);
        if (std::isnan(best)) {
          EXPECT_TRUE(std::isnan(out[o])) << "sequence " << s << ", element " << k;
        } else {
          EXPECT_EQ(out[o], best) << "sequence " << s << ", element " << k;
        }
        EXPECT_EQ(index[o], static_cast<double>(at)) << "sequence " << s << ", element " << k;
      }
    }
  }
}

// Two levels: Out keeps the first, which groups the sequences pooled.
TEST_F(MathForward, SequencePoolOfTwoLevelsKeepsTheFirst) {
  Set<double>("x", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}, {0, 1, 3, 4}};
  Op("sequence_pool").Input("X", "x").Output("Out", "out").Attr("pooltype", std::string("SUM"));
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {1, 2, 8, 10, 7, 8});
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 2, 3}}));
}

TEST_F(MathForward, SequenceOpsRefuseAMissingOrMalformedLoDNamingTheVariable) {
  Set<float>("x", {3, 2}, {1, 2, 3, 4, 5, 6});
  Op("sequence_pool").Input("X", "x").Output("Out", "out");
  EXPECT_NE(Run().find("input X ('x') has no LoD: it must pack sequences"), std::string::npos);
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 4}};
  EXPECT_NE(Run().find("input X ('x'): LoD level 0 {0, 2, 4} must rise from 0 to 3 (its rows)"), std::string::npos);
}

// Row t sees rows t - 1, t, t + 1 of its own sequence (zeros beyond it); Filter sums the
// three context rows' two features with weights 1, 10, 100.
TEST_F(MathForward, SequenceConvSeesEachRowsContextWithinItsSequence) {
  Set<float>("x", {5, 2}, {1, 0, 2, 0, 3, 0, 4, 0, 5, 0});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 3, 5}};
  Set<float>("filter", {6, 1}, {1, 1, 10, 10, 100, 100});
  Op("sequence_conv")
      .Input("X", "x")
      .Input("Filter", "filter")
      .Output("Out", "out")
      .Attr("contextLength", int32_t{3})
      .Attr("contextStart", int32_t{-1});
  ASSERT_EQ(Run(), "");
  // Sequence [1, 2, 3]: 0*1 + 1*10 + 2*100, 1 + 20 + 300, 2 + 30 + 0; sequence [4, 5]: 40 + 500, 4 + 50.
  ExpectNear(Values("out"), {210, 321, 32, 540, 54});
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 3, 5}}));
}

// Each sequence's rows reversed (the empty one too); the LoD stays.
TEST_F(MathForward, SequenceReverseReversesEachSequencesRows) {
  Set<int64_t>("x", {5, 1}, {1, 2, 3, 4, 5});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 5}};
  Op("sequence_reverse").Input("X", "x").Output("Y", "y");
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("y"), {2, 1, 5, 4, 3});
  EXPECT_EQ(Get("y").lod(), (core::LoD{{0, 2, 2, 5}}));
}

// Softmax within each sequence: [0, ln 3] -> [1/4, 3/4]; a sequence of one row -> 1.
TEST_F(MathForward, SequenceSoftmaxNormalizesWithinEachSequence) {
  Set<double>("x", {3, 1}, {0, std::log(3.0), 5});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 3}};
  Op("sequence_softmax").Input("X", "x").Output("Out", "out");
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {0.25, 0.75, 1});
  Set<double>("wide", {3, 2}, {1, 2, 3, 4, 5, 6});
  scope()->FindVar("wide")->GetMutableTensor()->mutable_lod() = {{0, 3}};
  Op("sequence_softmax").Input("X", "wide").Output("Out", "bad");
  EXPECT_NE(Run().find("X [3, 2] must be [R] or [R, 1]: one value per row"), std::string::npos);
}

// X's sequences [1] and [2, 3] repeated 2 and 1 times (Y's level); then X's rows by Y's
// last level, and without LoD in X each row is a unit.
TEST_F(MathForward, SequenceExpandRepeatsXsUnitsAsYsLoDSays) {
  Set<float>("x", {3, 1}, {1, 2, 3});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 3}};
  Set<float>("y", {3, 1}, {0, 0, 0});
  scope()->FindVar("y")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}};
  Op("sequence_expand").Input("X", "x").Input("Y", "y").Output("Out", "out");
  Set<float>("rows", {2, 1}, {7, 8});
  Set<float>("y2", {3, 1}, {0, 0, 0});
  scope()->FindVar("y2")->GetMutableTensor()->mutable_lod() = {{0, 2, 2}, {0, 0, 3}};
  Op("sequence_expand").Input("X", "rows").Input("Y", "y2").Output("Out", "by_level_0").Attr("ref_level", int64_t{0});
  Op("sequence_expand_as").Input("X", "rows").Input("Y", "y2").Output("Out", "as");
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {1, 1, 2, 3});
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 1, 2, 4}}));
  ExpectNear(Values("by_level_0"), {7, 7});  // level 0 holds 2 and 0 entries
  EXPECT_TRUE(Get("by_level_0").lod().empty());
  ExpectNear(Values("as"), {8, 8, 8});  // the last level's sequences hold 0 and 3 rows
  EXPECT_EQ(Get("as").lod(), (core::LoD{{0, 0, 3}}));
  Op("sequence_expand_as").Input("X", "x").Input("Y", "y").Output("Out", "mismatch");
  EXPECT_NE(Run().find("X has 3 rows but Y's LoD level has 2 entries: one per row of X"), std::string::npos);
}

// Sequences [1, 2], [], [3, 4, 5] padded with 9 to the longest; unpadded back by Length.
TEST_F(MathForward, SequencePadAndUnpadAreInverses) {
  Set<float>("x", {5, 1}, {1, 2, 3, 4, 5});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 5}};
  Set<float>("pad", {1}, {9});
  Op("sequence_pad").Input("X", "x").Input("PadValue", "pad").Output("Out", "padded").Output("Length", "length");
  Op("sequence_unpad").Input("X", "padded").Input("Length", "length").Output("Out", "packed");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Dims("padded"), (std::vector<int64_t>{3, 3, 1}));
  ExpectNear(Values("padded"), {1, 2, 9, 9, 9, 9, 3, 4, 5});
  ExpectNear(Values("length"), {2, 0, 3});
  ExpectNear(Values("packed"), {1, 2, 3, 4, 5});
  EXPECT_EQ(Get("packed").lod(), (core::LoD{{0, 2, 2, 5}}));
}

TEST_F(MathForward, SequencePadRefusesAPaddedLengthShorterThanASequence) {
  Set<float>("x", {5, 1}, {1, 2, 3, 4, 5});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 2, 5}};
  Set<float>("pad", {1}, {9});
  Op("sequence_pad")
      .Input("X", "x")
      .Input("PadValue", "pad")
      .Output("Out", "short")
      .Output("Length", "length")
      .Attr("padded_length", int64_t{2});
  EXPECT_NE(Run().find("padded_length 2 is shorter than the longest sequence of X (3)"), std::string::npos);
}

TEST_F(MathForward, SequenceMaskMarksTheFirstLengthEntries) {
  Set<int64_t>("lengths", {3}, {0, 2, 3});
  Op("sequence_mask").Input("X", "lengths").Output("Y", "mask").Attr("maxlen", int64_t{4});
  Op("sequence_mask").Input("X", "lengths").Output("Y", "longest").Attr("out_dtype", int64_t{RILL_FP32});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Dims("mask"), (std::vector<int64_t>{3, 4}));
  ExpectNear(Values("mask"), {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0});
  EXPECT_EQ(Dims("longest"), (std::vector<int64_t>{3, 3}));
  ExpectNear(Values("longest"), {0, 0, 0, 1, 1, 0, 1, 1, 1});
}

// Sequence s of each input after one another; then each row re-cut to 4 values; then
// slices of it; then windows of ids.
TEST_F(MathForward, SequenceConcatReshapeSliceAndEnumerateFollowTheLoD) {
  Set<float>("a", {3, 2}, {1, 2, 3, 4, 5, 6});
  scope()->FindVar("a")->GetMutableTensor()->mutable_lod() = {{0, 1, 3}};
  Set<float>("b", {2, 2}, {7, 8, 9, 10});
  scope()->FindVar("b")->GetMutableTensor()->mutable_lod() = {{0, 1, 2}};
  Op("sequence_concat").Input("X", {"a", "b"}).Output("Out", "joined");
  Op("sequence_reshape").Input("X", "joined").Output("Out", "recut").Attr("new_dim", int32_t{1});
  Set<int64_t>("offset", {2, 1}, {1, 2});
  Set<int64_t>("length", {2, 1}, {2, 3});
  Op("sequence_slice").Input("X", "recut").Input("Offset", "offset").Input("Length", "length").Output("Out", "cut");
  Set<int64_t>("ids", {4, 1}, {5, 6, 7, 8});
  scope()->FindVar("ids")->GetMutableTensor()->mutable_lod() = {{0, 3, 4}};
  Op("sequence_enumerate").Input("X", "ids").Output("Out", "windows").Attr("win_size", int32_t{2});
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("joined"), {1, 2, 7, 8, 3, 4, 5, 6, 9, 10});
  EXPECT_EQ(Get("joined").lod(), (core::LoD{{0, 2, 5}}));
  EXPECT_EQ(Dims("recut"), (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(Get("recut").lod(), (core::LoD{{0, 4, 10}}));  // 4 and 6 values, one a row
  ExpectNear(Values("cut"), {2, 7, 5, 6, 9});
  EXPECT_EQ(Get("cut").lod(), (core::LoD{{0, 2, 5}}));
  ExpectNear(Values("windows"), {5, 6, 6, 7, 7, 0, 8, 0});
  EXPECT_EQ(Get("windows").lod(), (core::LoD{{0, 3, 4}}));
}

// Windows of every width from 1 to past a 64-byte run of ids, of both id types, over
// sequences shorter than, as long as and longer than the window (and an empty one, and the
// last ending at X's end): each row matches the window read id by id, padded past its
// sequence's end.
TEST_F(MathForward, SequenceEnumerateOfEveryWidthMatchesWindowsReadIdById) {
  const std::vector<uint64_t> offsets = {0, 1, 5, 5, 25, 60, 63};
  const auto rows = static_cast<int64_t>(offsets.back());
  std::vector<double> ids;
  for (int64_t i = 0; i < rows; ++i) ids.push_back(static_cast<double>(100 + i));
  for (const char* type : {"int32", "int64"}) {
    for (int64_t win = 1; win <= 18; ++win) {
      SCOPED_TRACE(std::string(type) + ", win_size " + std::to_string(win));
      if (std::string(type) == "int32") {
        Set<int32_t>("x", {rows, 1}, ids);
      } else {
        Set<int64_t>("x", {rows, 1}, ids);
      }
      scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {offsets};
      Op("sequence_enumerate")
          .Input("X", "x")
          .Output("Out", "out")
          .Attr("win_size", win)
          .Attr("pad_value", int64_t{-1});
      ASSERT_EQ(Run(), "");
      std::vector<double> expected;
      for (size_t s = 0; s + 1 < offsets.size(); ++s) {
        for (uint64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
          for (uint64_t k = 0; k < static_cast<uint64_t>(win); ++k) {
            expected.push_back(t + k < offsets[s + 1] ? ids[t + k] : -1.0);
          }
        }
      }
      EXPECT_EQ(Dims("out"), (std::vector<int64_t>{rows, win}));
      EXPECT_EQ(Values("out"), expected);
    }
  }
}

TEST_F(MathForward, SequenceReshapeAndSliceRefuseWhatDoesNotFit) {
  Set<float>("x", {3, 2}, {1, 2, 3, 4, 5, 6});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 3}};
  Op("sequence_reshape").Input("X", "x").Output("Out", "out").Attr("new_dim", int32_t{4});
  EXPECT_NE(Run().find("sequence 0 of X holds 2 elements, which new_dim 4 does not divide"), std::string::npos);
}

TEST_F(MathForward, SequenceSliceRefusesASliceOutsideItsSequence) {
  Set<float>("x", {3, 2}, {1, 2, 3, 4, 5, 6});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 3}};
  Set<int64_t>("offset", {2, 1}, {0, 1});
  Set<int64_t>("length", {2, 1}, {1, 2});
  Op("sequence_slice").Input("X", "x").Input("Offset", "offset").Input("Length", "length").Output("Out", "out");
  EXPECT_NE(Run().find("sequence 1 of X has 2 rows: Offset 1 and Length 2 reach outside it"), std::string::npos);
}

TEST_F(MathForward, LookupTableIdOutOfRangeIsAnError) {
  Set<float>("w", {2, 2}, {1, 2, 3, 4});
  Set<int64_t>("ids", {2}, {1, 2});
  Op("lookup_table_v2").Input("W", "w").Input("Ids", "ids").Output("Out", "y");
  const std::string error = Run();
  EXPECT_NE(error.find("Ids[1] is 2, not a row of W's 2"), std::string::npos) << error;
}

// padding_idx's default -1 means "no padding row": an id of -1 is refused like -2, not
// looked up as zeros; with padding_idx -1 given, the same.
TEST_F(MathForward, LookupTableIdMinusOneIsRefusedWithoutPadding) {
  Set<float>("w", {2, 2}, {1, 2, 3, 4});
  Set<int64_t>("ids", {2}, {1, -1});
  Op("lookup_table_v2").Input("W", "w").Input("Ids", "ids").Output("Out", "y");
  const std::string error = Run();
  EXPECT_NE(error.find("Ids[1] is -1, not a row of W's 2"), std::string::npos) << error;
}

TEST_F(MathForward, LookupTableGradientIdMinusOneIsRefusedWithoutPadding) {
  Set<float>("w", {2, 2}, {1, 2, 3, 4});
  Set<int64_t>("ids", {2}, {1, -1});
  Set<float>("dout", {2, 2}, {1, 1, 1, 1});
  Op("lookup_table_v2_grad")
      .Input("W", "w")
      .Input("Ids", "ids")
      .Input("Out@GRAD", "dout")
      .Output("W@GRAD", "g")
      .Attr("padding_idx", int64_t{-1});
  const std::string error = Run();
  EXPECT_NE(error.find("Ids[1] is -1, not a row of W's 2"), std::string::npos) << error;
}

// NaN among the values (nan_order.h): above every number for top_k, and the winner of
// every maximum and arg_max/arg_min, as in PyTorch and NumPy.
TEST_F(MathForward, NanIsLargestInTopKAndWinsEveryMaximum) {
  const double nan = std::nan("");
  auto is_nan = [](double v) { return std::isnan(v); };
  Set<float>("x", {4}, {2, nan, 1, 3});
  Op("top_k").Input("X", "x").Output("Out", "v").Output("Indices", "i").Attr("k", int64_t{3});
  Op("top_k_v2")
      .Input("X", "x")
      .Output("Out", "sv")
      .Output("Indices", "si")
      .Attr("k", int64_t{4})
      .Attr("largest", false);
  Op("arg_max").Input("X", "x").Output("Out", "amax");
  Op("arg_min").Input("X", "x").Output("Out", "amin");
  Op("reduce_max").Input("X", "x").Output("Out", "rmax").Attr("reduce_all", true);
  Set<float>("img", {1, 1, 2, 2}, {1, nan, 3, 2});
  Set<double>("img64", {1, 1, 2, 2}, {1, nan, 3, 2});
  for (const char* img : {"img", "img64"}) {
    Op("pool2d")
        .Input("X", img)
        .Output("Out", std::string(img) + "_max")
        .Attr("pooling_type", std::string("max"))
        .Attr("ksize", std::vector<int64_t>{2, 2});
  }
  ASSERT_EQ(Run(), "");
  const std::vector<double> v = Values("v");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(is_nan(v[0]));
  EXPECT_EQ(std::vector<double>(v.begin() + 1, v.end()), (std::vector<double>{3, 2}));
  EXPECT_EQ(Values("i"), (std::vector<double>{1, 3, 0}));
  EXPECT_EQ(Values("si"), (std::vector<double>{2, 0, 3, 1}));  // smallest first: NaN last
  EXPECT_EQ(Values("amax"), (std::vector<double>{1}));
  EXPECT_EQ(Values("amin"), (std::vector<double>{1}));
  EXPECT_TRUE(is_nan(Values("rmax").at(0)));
  EXPECT_TRUE(is_nan(Values("img_max").at(0))) << "fp32 (oneDNN)";
  EXPECT_TRUE(is_nan(Values("img64_max").at(0))) << "fp64 (loops)";
}

// Out's shape with 1-D operands, as Paddle's InferShape gives it: matmul (v1) transposes
// a vector as the row (X) or column (Y) it stands for and drops its dim only where it is
// 1; matmul_v2 ignores a vector's transpose and always drops it.
TEST_F(MathForward, MatmulShapesWithVectorsAreThoseOfPaddle) {
  struct Case {
    const char* op;
    std::vector<int64_t> x, y;
    bool tx, ty;
    std::vector<int64_t> out;
  };
  const std::vector<Case> cases = {
      {"matmul", {3}, {2, 1, 4}, true, false, {2, 3, 4}},
      {"matmul", {3}, {1, 4}, true, false, {3, 4}},
      {"matmul", {3}, {3, 4}, false, false, {4}},
      {"matmul", {2, 1}, {3}, false, true, {2, 3}},
      {"matmul", {3}, {3}, false, false, {1}},
      {"matmul_v2", {3}, {2, 3, 4}, true, false, {2, 4}},
      {"matmul_v2", {2, 3}, {3}, false, true, {2}},
  };
  for (const Case& c : cases) {
    pb_ = core::ProgramBuilder();
    const bool v2 = std::string(c.op) == "matmul_v2";
    auto count = [](const std::vector<int64_t>& d) {
      int64_t n = 1;
      for (int64_t v : d) n *= v;
      return static_cast<size_t>(n);
    };
    Set<float>("x", c.x, std::vector<double>(count(c.x), 1.0));
    Set<float>("y", c.y, std::vector<double>(count(c.y), 1.0));
    Op(c.op)
        .Input("X", "x")
        .Input("Y", "y")
        .Output("Out", "out")
        .Attr(v2 ? "trans_x" : "transpose_X", c.tx)
        .Attr(v2 ? "trans_y" : "transpose_Y", c.ty);
    ASSERT_EQ(Run(), "") << c.op;
    EXPECT_EQ(Dims("out"), c.out) << c.op << " case " << (&c - cases.data());
  }
}

// Max pooling's gradient goes to each window's first largest element (row by row), a NaN
// being the largest: the same in fp32 (oneDNN, or the loops where X holds a NaN) and fp64
// (the loops), given the forward's Out (as backward writes pool2d_grad, and Paddle does)
// or not (as a program differentiated before it was read does). An Out that is not X's
// pooling falls back to the maximum; one of the wrong size is an error naming it.
TEST_F(MathForward, MaxPoolGradientGoesToTheFirstLargestWithOrWithoutOut) {
  const double nan = std::nan("");
  // Windows 2x2, stride 2, over a 2x4 image: a tie in the first (3 at (0, 1) and (1, 0));
  // the second's largest at (0, 3), or its NaN at (1, 3).
  struct Image {
    std::vector<double> x, want;
  };
  const std::vector<Image> images = {{{1, 3, 0, 5, 3, 2, 4, 1}, {0, 10, 0, 20, 0, 0, 0, 0}},
                                     {{1, 3, 0, 5, 3, 2, 4, nan}, {0, 10, 0, 0, 0, 0, 0, 20}}};
  for (const char* dtype : {"fp32", "fp64"}) {
    const bool fp32 = std::string(dtype) == "fp32";
    const auto set = [&](const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v) {
      if (fp32) Set<float>(name, dims, v);
      else Set<double>(name, dims, v);
    };
    const auto pool = [&](const std::string& type) -> core::OpBuilder {
      return Op(type)
          .Attr("pooling_type", std::string("max"))
          .Attr("ksize", std::vector<int64_t>{2, 2})
          .Attr("strides", std::vector<int64_t>{2, 2});
    };
    for (const Image& image : images) {
      pb_ = core::ProgramBuilder();
      set("x", {1, 1, 2, 4}, image.x);
      set("g", {1, 1, 1, 2}, {10, 20});
      set("wrong", {1, 1, 1, 2}, {7, 7});  // equals no element
      pool("pool2d").Input("X", "x").Output("Out", "out");
      pool("pool2d_grad").Input("X", "x").Input("Out", "out").Input("Out@GRAD", "g").Output("X@GRAD", "with_out");
      pool("pool2d_grad").Input("X", "x").Input("Out@GRAD", "g").Output("X@GRAD", "without_out");
      pool("pool2d_grad").Input("X", "x").Input("Out", "wrong").Input("Out@GRAD", "g").Output("X@GRAD", "wrong_dx");
      ASSERT_EQ(Run(), "") << dtype;
      EXPECT_EQ(Values("with_out"), image.want) << dtype;
      EXPECT_EQ(Values("without_out"), image.want) << dtype;
      EXPECT_EQ(Values("wrong_dx"), image.want) << dtype;
    }
    pb_ = core::ProgramBuilder();
    set("x", {1, 1, 2, 4}, images[0].x);
    set("g", {1, 1, 1, 2}, {10, 20});
    set("short", {1, 1, 1, 1}, {3});
    pool("pool2d_grad").Input("X", "x").Input("Out", "short").Input("Out@GRAD", "g").Output("X@GRAD", "dx");
    const std::string error = Run();
    EXPECT_NE(error.find("Out [1, 1, 1, 1] is not X's pooling, [1, 1, 1, 2]"), std::string::npos) << error;
  }
}

// max_pool2d/3d_with_index as Paddle's: each window's first element above all before it
// from -FLT_MAX (a NaN or -inf never taken; a window of only those gives -FLT_MAX and -1),
// Mask its index within the plane; the gradient adds Out@GRAD at Mask, twice where two
// windows chose one element, nowhere for -1; global pooling over a volume.
TEST_F(MathForward, MaxPoolWithIndexTakesTheFirstLargestAboveFltMax) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  Set<float>("x", {1, 1, 2, 3}, {nan, 5, 5, -inf, 7, -inf});
  Op("max_pool2d_with_index")
      .Input("X", "x")
      .Output("Out", "out")
      .Output("Mask", "mask")
      .Attr("ksize", std::vector<int64_t>{1, 2});
  Set<float>("g", {1, 1, 2, 2}, {1, 10, 100, 1000});
  Op("max_pool2d_with_index_grad")
      .Input("X", "x")
      .Input("Mask", "mask")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "dx")
      .Attr("ksize", std::vector<int64_t>{1, 2});
  Set<double>("empty", {1, 1, 1, 2}, {nan, -inf});
  Op("max_pool2d_with_index")
      .Input("X", "empty")
      .Output("Out", "empty_out")
      .Output("Mask", "empty_mask")
      .Attr("ksize", std::vector<int64_t>{1, 2});
  Set<double>("v", {1, 2, 2, 1, 2}, {1, 4, 3, 2, -1, -2, -4, -3});
  Op("max_pool3d_with_index")
      .Input("X", "v")
      .Output("Out", "v_out")
      .Output("Mask", "v_mask")
      .Attr("ksize", std::vector<int64_t>{1, 1, 1})
      .Attr("global_pooling", true);
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("out"), (std::vector<double>{5, 5, 7, 7}));
  EXPECT_EQ(Values("mask"), (std::vector<double>{1, 1, 4, 4}));
  EXPECT_EQ(Values("dx"), (std::vector<double>{0, 11, 0, 0, 1100, 0}));
  EXPECT_EQ(Values("empty_out"), (std::vector<double>{-FLT_MAX}));
  EXPECT_EQ(Values("empty_mask"), (std::vector<double>{-1}));
  EXPECT_EQ(Dims("v_out"), (std::vector<int64_t>{1, 2, 1, 1, 1}));
  EXPECT_EQ(Values("v_out"), (std::vector<double>{4, -1}));
  EXPECT_EQ(Values("v_mask"), (std::vector<double>{1, 0}));
  pb_ = core::ProgramBuilder();
  Set<int32_t>("bad_mask", {1, 1, 2, 2}, {1, 1, 6, 4});
  Op("max_pool2d_with_index_grad")
      .Input("X", "x")
      .Input("Mask", "bad_mask")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "bad_dx")
      .Attr("ksize", std::vector<int64_t>{1, 2});
  const std::string error = Run();
  EXPECT_NE(error.find("Mask[2] = 6 is not an index within a plane of X [1, 1, 2, 3]"), std::string::npos) << error;
}

// Max pooling's gradient against a search of each window written here, in the geometries
// the kernels take apart: windows that share no element (stored) or do (added), rows of
// fewer and of more than a vector's sixteen windows, windows clipped by padding and
// ceil_mode at a row's ends, adaptive windows, NCHW and NHWC (a position's windows across
// sixteen channels and more), fp32 and fp64. Values are small integers, so that a window's
// largest is often tied (the first row by row wins); a second pass scatters NaNs (the
// first NaN wins). The same with Out given and without.
TEST_F(MathForward, MaxPoolGradientMatchesASearchOfEachWindowInEveryGeometry) {
  struct Geometry {
    std::vector<int64_t> dims, ksize, strides, paddings;
    bool ceil_mode, adaptive, nhwc;
  };
  const std::vector<Geometry> geometries = {
      {{2, 3, 6, 40}, {2, 2}, {2, 2}, {0, 0}, false, false, false},  // 20 windows a row, disjoint
      {{1, 2, 4, 10}, {2, 2}, {2, 2}, {0, 0}, false, false, false},  // 5 a row
      {{1, 2, 9, 37}, {3, 3}, {2, 2}, {1, 1}, false, false, false},  // overlapping, clipped ends
      {{1, 1, 5, 40}, {3, 2}, {1, 2}, {0, 1}, true, false, false},   // ceil_mode's partial last window
      {{1, 2, 5, 24}, {3, 3}, {1, 1}, {0, 0}, false, false, false},  // step 1
      {{1, 2, 7, 33}, {3, 5}, {1, 1}, {0, 0}, false, true, false},   // adaptive
      {{2, 6, 8, 20}, {2, 2}, {2, 2}, {0, 0}, false, false, true},   // 20 channels
      {{1, 5, 7, 17}, {3, 3}, {2, 2}, {1, 1}, true, false, true},
  };
  // The windows along one dim: [begin, end) of each output position.
  const auto windows = [](int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode, bool adaptive) {
    std::vector<std::pair<int64_t, int64_t>> w;
    if (adaptive) {
      for (int64_t o = 0; o < k; ++o) w.emplace_back(o * in / k, ((o + 1) * in + k - 1) / k);
      return w;
    }
    const int64_t span = in + 2 * pad - k, out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    for (int64_t o = 0; o < out; ++o) {
      w.emplace_back(std::max<int64_t>(o * s - pad, 0), std::min<int64_t>(o * s - pad + k, in));
    }
    return w;
  };
  std::mt19937 rng(11);
  const double nan = std::nan("");
  for (const Geometry& geo : geometries) {
    const int64_t n = geo.dims[0], c = geo.nhwc ? geo.dims[3] : geo.dims[1];
    const int64_t h = geo.nhwc ? geo.dims[1] : geo.dims[2], w = geo.nhwc ? geo.dims[2] : geo.dims[3];
    const auto rows = windows(h, geo.ksize[0], geo.strides[0], geo.paddings[0], geo.ceil_mode, geo.adaptive);
    const auto cols = windows(w, geo.ksize[1], geo.strides[1], geo.paddings[1], geo.ceil_mode, geo.adaptive);
    const auto oh = static_cast<int64_t>(rows.size()), ow = static_cast<int64_t>(cols.size());
    const auto at = [&](int64_t i, int64_t ch, int64_t y, int64_t x, int64_t hh, int64_t ww) {
      return geo.nhwc ? ((i * hh + y) * ww + x) * c + ch : ((i * c + ch) * hh + y) * ww + x;
    };
    const std::vector<int64_t> out_dims =
        geo.nhwc ? std::vector<int64_t>{n, oh, ow, c} : std::vector<int64_t>{n, c, oh, ow};
    for (const bool nans : {false, true}) {
      std::vector<double> x(static_cast<size_t>(n * c * h * w)), g(static_cast<size_t>(n * c * oh * ow));
      for (double& v : x) v = nans && rng() % 7 == 0 ? nan : static_cast<double>(rng() % 4);
      for (double& v : g) v = static_cast<double>(1 + rng() % 9);
      std::vector<double> want(x.size(), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t y = 0; y < oh; ++y) {
            for (int64_t xx = 0; xx < ow; ++xx) {
              int64_t best = -1;
              for (int64_t r = rows[y].first; r < rows[y].second; ++r) {
                for (int64_t q = cols[xx].first; q < cols[xx].second; ++q) {
                  const int64_t e = at(i, ch, r, q, h, w);
                  const double v = x[e], b = best < 0 ? 0 : x[best];
                  if (best < 0 || (!std::isnan(b) && (std::isnan(v) || v > b))) best = e;
                }
              }
              ASSERT_GE(best, 0) << "an empty window";
              want[static_cast<size_t>(best)] += g[static_cast<size_t>(at(i, ch, y, xx, oh, ow))];
            }
          }
        }
      }
      for (const char* dtype : {"fp32", "fp64"}) {
        const std::string label = std::string(dtype) + " geometry " + std::to_string(&geo - geometries.data()) +
                                  (geo.adaptive ? " adaptive" : "") + (nans ? " with NaNs" : "");
        pb_ = core::ProgramBuilder();
        if (std::string(dtype) == "fp32") {
          Set<float>("x", geo.dims, x);
          Set<float>("g", out_dims, g);
        } else {
          Set<double>("x", geo.dims, x);
          Set<double>("g", out_dims, g);
        }
        const auto pool = [&](const std::string& type) -> core::OpBuilder {
          return Op(type)
              .Attr("pooling_type", std::string("max"))
              .Attr("ksize", geo.ksize)
              .Attr("strides", geo.strides)
              .Attr("paddings", geo.paddings)
              .Attr("ceil_mode", geo.ceil_mode)
              .Attr("adaptive", geo.adaptive)
              .Attr("data_format", std::string(geo.nhwc ? "NHWC" : "NCHW"));
        };
        pool("pool2d").Input("X", "x").Output("Out", "out");
        pool("pool2d_grad").Input("X", "x").Input("Out", "out").Input("Out@GRAD", "g").Output("X@GRAD", "with_out");
        pool("pool2d_grad").Input("X", "x").Input("Out@GRAD", "g").Output("X@GRAD", "without_out");
        ASSERT_EQ(Run(), "") << label;
        ASSERT_EQ(Dims("out"), out_dims) << label;
        EXPECT_EQ(Values("with_out"), want) << label;
        EXPECT_EQ(Values("without_out"), want) << label;
      }
    }
  }
}

// Paddings far past the input are refused before the windows are planned (they would
// number 2^30 per row), naming the geometry.
TEST_F(MathForward, Pool2dPaddingsPastTheInputAreRefusedBeforeAllocating) {
  Set<float>("img", {1, 1, 2, 2}, {1, 2, 3, 4});
  Op("pool2d")
      .Input("X", "img")
      .Output("Out", "out")
      .Attr("pooling_type", std::string("max"))
      .Attr("ksize", std::vector<int64_t>{2, 2})
      .Attr("paddings", std::vector<int64_t>{1 << 30, 1 << 30});
  std::string error = Run();
  EXPECT_NE(error.find("a pooling window lies wholly in the padding (input 2, window 2, stride 1, paddings 1073741824"),
            std::string::npos)
      << error;
  pb_ = core::ProgramBuilder();
  Set<float>("img", {1, 1, 2, 2}, {1, 2, 3, 4});
  Op("pool2d")
      .Input("X", "img")
      .Output("Out", "out")
      .Attr("pooling_type", std::string("max"))
      .Attr("adaptive", true)
      .Attr("ksize", std::vector<int64_t>{(int64_t{1} << 31) - 1, (int64_t{1} << 31) - 1});
  error = Run();
  EXPECT_NE(error.find("pool2d's adaptive output (ksize): shape [1, 1, 2147483647, 2147483647]"), std::string::npos)
      << error;
}

// Attribute values that are wrong are named as given: a negative num_col_dims as itself,
// not as the size_t it would wrap to; conv2d_transpose's groups 0 as groups.
TEST_F(MathForward, BadNumColDimsAndGroupsAreNamedAsGiven) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<float>("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  Op("mul").Input("X", "x").Input("Y", "w").Output("Out", "o").Attr("y_num_col_dims", int64_t{-1});
  std::string error = Run();
  EXPECT_NE(error.find("x_num_col_dims 1 / y_num_col_dims -1 do not split X [2, 3] and Y [3, 2] into matrices"),
            std::string::npos)
      << error;
  pb_ = core::ProgramBuilder();
  Set<float>("img", {1, 2, 2, 2}, std::vector<double>(8, 1.0));
  Set<float>("filter", {2, 1, 1, 1}, {1, 1});
  Op("conv2d_transpose")
      .Input("Input", "img")
      .Input("Filter", "filter")
      .Output("Output", "out")
      .Attr("groups", int64_t{0});
  error = Run();
  EXPECT_NE(error.find("groups 0 must be at least 1"), std::string::npos) << error;
}

// Equal values come out lower index first; a k beyond the axis is an error naming it.
TEST_F(MathForward, TopKTiesAndBadK) {
  Set<float>("x", {4}, {1, 3, 3, 2});
  Op("top_k_v2").Input("X", "x").Output("Out", "v").Output("Indices", "i").Attr("k", int64_t{2});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("v"), (std::vector<double>{3, 3}));
  EXPECT_EQ(Values("i"), (std::vector<double>{1, 2}));
  Op("top_k").Input("X", "x").Output("Out", "w").Output("Indices", "j").Attr("k", int64_t{5});
  const std::string error = Run();
  EXPECT_NE(error.find("k 5 is not in [1, 4], the size of the axis"), std::string::npos) << error;
}

TEST_F(MathForward, BatchNormBadLayoutIsAnError) {
  Set<float>("x", {1, 2, 1, 1}, {1, 2});
  for (const char* name : {"s", "b", "m", "v"}) Set<float>(name, {2}, {1, 1});
  Op("batch_norm")
      .Input("X", "x")
      .Input("Scale", "s")
      .Input("Bias", "b")
      .Input("Mean", "m")
      .Input("Variance", "v")
      .Output("Y", "y")
      .Attr("data_layout", std::string("NCDHW"));
  const std::string error = Run();
  EXPECT_NE(error.find("data_layout 'NCDHW' is neither NCHW nor NHWC"), std::string::npos) << error;
}

TEST_F(MathForward, BatchNormScaleMustHoldAChannelEach) {
  Set<float>("x", {1, 2, 1, 1}, {1, 2});
  for (const char* name : {"b", "m", "v"}) Set<float>(name, {2}, {1, 1});
  Set<float>("s3", {3}, {1, 1, 1});
  Op("batch_norm")
      .Input("X", "x")
      .Input("Scale", "s3")
      .Input("Bias", "b")
      .Input("Mean", "m")
      .Input("Variance", "v")
      .Output("Y", "y");
  const std::string error = Run();
  EXPECT_NE(error.find("Scale [3] must hold one value per channel (2)"), std::string::npos) << error;
}

TEST_F(MathForward, BatchNormStatisticsOfAnotherDtypeAreAnError) {
  Set<float>("x", {1, 2, 1, 1}, {1, 2});
  for (const char* name : {"s", "b", "m"}) Set<float>(name, {2}, {1, 1});
  Set<double>("v64", {2}, {1, 1});
  Op("batch_norm")
      .Input("X", "x")
      .Input("Scale", "s")
      .Input("Bias", "b")
      .Input("Mean", "m")
      .Input("Variance", "v64")
      .Output("Y", "y");
  const std::string error = Run();
  EXPECT_NE(error.find("Variance holds fp64 where this kernel takes fp32"), std::string::npos) << error;
}

TEST_F(MathForward, AnInputTheProgramLeavesOutIsNamed) {
  Set<float>("x", {1, 2, 1, 1}, {1, 2});
  for (const char* name : {"s", "g"}) Set<float>(name, {2}, {1, 1});
  Op("batch_norm_grad").Input("X", "x").Input("Scale", "s").Input("Y@GRAD", "x").Output("X@GRAD", "dx");
  const std::string error = Run();
  EXPECT_NE(error.find("op 'batch_norm_grad' has no input SavedMean[0]"), std::string::npos) << error;
}

// Bad shapes and attributes of the convolutions: each a clear error naming what is wrong.
class ConvErrors : public OpFixture {
 protected:
  std::string ErrorOf(std::vector<int64_t> x, std::vector<int64_t> w,
                      const std::function<void(core::OpBuilder&)>& attrs) {
    Set<float>("x", x, std::vector<double>(static_cast<size_t>(x[0] * x[1] * x[2] * x[3]), 1));
    Set<float>("w", w, std::vector<double>(static_cast<size_t>(w[0] * w[1] * w[2] * w[3]), 1));
    core::OpBuilder op = Op("conv2d").Input("Input", "x").Input("Filter", "w").Output("Output", "y");
    attrs(op);
    return Run();
  }
};

TEST_F(ConvErrors, ChannelsNotDivisibleByGroups) {
  const std::string e = ErrorOf({1, 3, 4, 4}, {4, 1, 3, 3}, [](core::OpBuilder& o) { o.Attr("groups", int32_t{2}); });
  EXPECT_NE(e.find("conv2d"), std::string::npos) << e;
  EXPECT_NE(e.find("groups 2 must divide Input's 3 channels and Filter's 4 outputs"), std::string::npos) << e;
}

TEST_F(ConvErrors, KernelLargerThanTheUnpaddedInput) {
  const std::string e = ErrorOf({1, 2, 2, 2}, {1, 2, 3, 3}, [](core::OpBuilder&) {});
  EXPECT_NE(e.find("the height 2 padded by 0 is smaller than the dilated kernel 3"), std::string::npos) << e;
}

TEST_F(ConvErrors, BadDataFormat) {
  const std::string e =
      ErrorOf({1, 2, 4, 4}, {1, 2, 3, 3}, [](core::OpBuilder& o) { o.Attr("data_format", std::string("CHWN")); });
  EXPECT_NE(e.find("data_format 'CHWN' is neither NCHW nor NHWC"), std::string::npos) << e;
}

TEST_F(MathForward, UnsupportedDtypeNamesOpAndDtype) {
  Set<bool>("x", {1}, {1});
  Op("elementwise_add").Input("X", "x").Input("Y", "x").Output("Out", "z");
  EXPECT_EQ(Run(),
            "block 0, op 0 (elementwise_add X=[x] Y=[x] -> Out=[z]): no CPU kernel for dtype bool "
            "(registered: " +
                WithCudaKernels("CPU/fp32, CPU/fp64, CPU/int32, CPU/int64") + ")");
}

// ---- Comparisons and logical ops ----------------------------------------------------------

template <class T> class Comparison : public OpFixture {};
TYPED_TEST_SUITE(Comparison, NumericTypes);

TYPED_TEST(Comparison, AllSixAgainstReference) {
  using T = TypeParam;
  this->template Set<T>("x", {4}, {1, 2, 3, 4});
  this->template Set<T>("y", {1}, {3});
  for (const char* op : {"less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal"}) {
    this->Op(op).Input("X", "x").Input("Y", "y").Output("Out", op);
  }
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("less_than"), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(this->Values("less_equal"), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(this->Values("greater_than"), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(this->Values("greater_equal"), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(this->Values("equal"), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(this->Values("not_equal"), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(this->Get("equal").dtype(), RILL_BOOL);
}

TEST_F(MathForward, LogicalOps) {
  Set<bool>("a", {4}, {0, 0, 1, 1});
  Set<bool>("b", {4}, {0, 1, 0, 1});
  Op("logical_and").Input("X", "a").Input("Y", "b").Output("Out", "and");
  Op("logical_or").Input("X", "a").Input("Y", "b").Output("Out", "or");
  Op("logical_xor").Input("X", "a").Input("Y", "b").Output("Out", "xor");
  Op("logical_not").Input("X", "a").Output("Out", "not");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("and"), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(Values("or"), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(Values("xor"), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(Values("not"), (std::vector<double>{1, 1, 0, 0}));
}

// logical_not over runs long enough for the vector loop and its tail, into another variable
// and over X itself.
TEST_F(MathForward, LogicalNotOfLongRunsMatchesAWalk) {
  std::vector<double> bits;
  for (int i = 0; i < 1000; ++i) bits.push_back((i * 7 + i / 3) % 5 < 2);
  Set<bool>("a", {1000}, bits);
  Set<bool>("b", {1000}, bits);
  Op("logical_not").Input("X", "a").Output("Out", "not");
  Op("logical_not").Input("X", "b").Output("Out", "b");
  ASSERT_EQ(Run(), "");
  std::vector<double> want;
  for (double b : bits) want.push_back(b == 0);
  EXPECT_EQ(Values("not"), want);
  EXPECT_EQ(Values("b"), want);
}

TEST_F(MathForward, LogicalOpsRefuseNonBool) {
  Set<float>("a", {1}, {1});
  Op("logical_and").Input("X", "a").Input("Y", "a").Output("Out", "z");
  EXPECT_NE(Run().find("no CPU kernel for dtype fp32 (registered: CPU/bool"), std::string::npos);
}

// ---- Unary ops, scale, cast -----------------------------------------------------------------

template <class T> class FloatOps : public OpFixture {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FloatOps, FloatTypes);

// elementwise_max and _min take Paddle's rule, a > b ? a : b (a < b ? a : b): where either
// operand is NaN, Y's element; the same whether the operands have one shape (a vector loop,
// with NaNs in every lane and in the tail) or Y is broadcast (an element walk).
TYPED_TEST(FloatOps, MaxAndMinWithANanGiveY) {
  using T = TypeParam;
  const double nan = std::nan("");
  const int64_t n = 67;
  std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = i % 3 == 0 ? nan : static_cast<double>(i);
    y[static_cast<size_t>(i)] = i % 3 == 1 ? nan : static_cast<double>(n - i);
  }
  this->template Set<T>("x", {n}, x);
  this->template Set<T>("y", {n}, y);
  this->template Set<T>("ynan", {1}, {nan});
  this->template Set<T>("yone", {1}, {5});
  for (const char* op : {"max", "min"}) {
    this->Op(std::string("elementwise_") + op).Input("X", "x").Input("Y", "y").Output("Out", op);
    this->Op(std::string("elementwise_") + op)
        .Input("X", "x")
        .Input("Y", "ynan")
        .Output("Out", op + std::string("_nan"));
    this->Op(std::string("elementwise_") + op)
        .Input("X", "x")
        .Input("Y", "yone")
        .Output("Out", op + std::string("_one"));
  }
  ASSERT_EQ(this->Run(), "");
  const std::vector<double> mx = this->Values("max"), mn = this->Values("min");
  const std::vector<double> mx_nan = this->Values("max_nan"), mn_nan = this->Values("min_nan");
  const std::vector<double> mx_one = this->Values("max_one"), mn_one = this->Values("min_one");
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    const double a = x[i], b = y[i];
    if (std::isnan(a) || std::isnan(b)) {
      EXPECT_EQ(std::isnan(mx[i]), std::isnan(b)) << "max at " << i;
      EXPECT_EQ(std::isnan(mn[i]), std::isnan(b)) << "min at " << i;
      if (!std::isnan(b)) {
        EXPECT_EQ(mx[i], b) << "max at " << i;
        EXPECT_EQ(mn[i], b) << "min at " << i;
      }
    } else {
      EXPECT_EQ(mx[i], std::max(a, b)) << "max at " << i;
      EXPECT_EQ(mn[i], std::min(a, b)) << "min at " << i;
    }
    EXPECT_TRUE(std::isnan(mx_nan[i]) && std::isnan(mn_nan[i])) << "a NaN Y at " << i;
    EXPECT_EQ(mx_one[i], std::isnan(a) ? 5 : std::max(a, 5.0)) << "broadcast max at " << i;
    EXPECT_EQ(mn_one[i], std::isnan(a) ? 5 : std::min(a, 5.0)) << "broadcast min at " << i;
  }
}

TYPED_TEST(FloatOps, Activations) {
  using T = TypeParam;
  this->template Set<T>("x", {4}, {-2, -0.5, 0, 1.5});
  this->Op("relu").Input("X", "x").Output("Out", "relu");
  this->Op("sigmoid").Input("X", "x").Output("Out", "sigmoid");
  this->Op("tanh").Input("X", "x").Output("Out", "tanh");
  this->Op("square").Input("X", "x").Output("Out", "square");
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("relu"), (std::vector<double>{0, 0, 0, 1.5}));
  std::vector<double> sig, th;
  for (double v : {-2.0, -0.5, 0.0, 1.5}) {
    sig.push_back(1 / (1 + std::exp(-v)));
    th.push_back(std::tanh(v));
  }
  ExpectNear(this->Values("sigmoid"), sig);
  ExpectNear(this->Values("tanh"), th);
  EXPECT_EQ(this->Values("square"), (std::vector<double>{4, 0.25, 0, 2.25}));
}

// pow keeps std::pow's results for every factor: products for integer factors (signs,
// signed zeros, infinities, NaN ^ 0 = 1), std::pow for the others; values within a few
// roundings, the special ones exactly. The values come three times over, so that each meets
// both the vector chunks and the scalar tail.
TYPED_TEST(FloatOps, PowMatchesStdPow) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> values = {T(-2.5), T(-1), T(-0.0), T(0), T(0.75), T(3), T(1e-3), T(40), -inf, inf, nan};
  std::vector<T> xs;
  for (int copy = 0; copy < 3; ++copy) xs.insert(xs.end(), values.begin(), values.end());
  const std::vector<double> factors = {3, 4, -1, -2, -3, 0, 1, 2.5, 0.5, 33};
  this->template Set<T>("x", {static_cast<int64_t>(xs.size())}, std::vector<double>(xs.begin(), xs.end()));
  for (size_t f = 0; f < factors.size(); ++f) {
    this->Op("pow")
        .Input("X", "x")
        .Output("Out", "p" + std::to_string(f))
        .Attr("factor", static_cast<float>(factors[f]));
  }
  ASSERT_EQ(this->Run(), "");
  for (size_t f = 0; f < factors.size(); ++f) {
    const std::vector<double> got = this->Values("p" + std::to_string(f));
    for (size_t i = 0; i < xs.size(); ++i) {
      const T want = std::pow(xs[i], static_cast<T>(factors[f]));
      const auto where = ::testing::Message() << xs[i] << " ^ " << factors[f];
      if (!ExpectSpecialValue(static_cast<T>(got[i]), want, where)) {
        EXPECT_NEAR(got[i], want, 8 * std::numeric_limits<T>::epsilon() * std::fabs(want)) << where;
      }
    }
  }
}

// elementwise_pow of same-shape operands: what std::pow gives in double precision, rounded to
// T (single precision computes exp(y log x) in double for positive finite x and finite y:
// within an ulp of that), with std::pow's signs, zeros, infinities and NaNs exactly; and
// the same with Out written over X.
TYPED_TEST(FloatOps, ElementwisePowMatchesStdPow) {
  using T = TypeParam;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> bases = {0.0,   -0.0, 1.0,  -1.0,      2.0, -2.5, 0.3,
                                     1e-30, 3e30, 7.25, 1.0000001, inf, -inf, nan};
  const std::vector<double> exponents = {0.0, -0.0, 1.0,  2.0,   3.0,    -1.0, -2.0, 0.5,  -0.5,
                                         1.5, 10.3, -7.7, 100.0, -100.0, 1e-7, inf,  -inf, nan};
  std::vector<double> xs, ys;
  for (double b : bases) {
    for (double e : exponents) xs.push_back(b), ys.push_back(e);
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> base(0.0, 20.0), exponent(-30.0, 30.0);
  for (int i = 0; i < 20000; ++i) xs.push_back(base(rng)), ys.push_back(exponent(rng));
  const int64_t n = static_cast<int64_t>(xs.size());
  this->template Set<T>("x", {n}, xs);
  this->template Set<T>("y", {n}, ys);
  this->template Set<T>("z", {n}, xs);
  this->Op("elementwise_pow").Input("X", "x").Input("Y", "y").Output("Out", "pow");
  this->Op("elementwise_pow").Input("X", "z").Input("Y", "y").Output("Out", "z");  // in place
  ASSERT_EQ(this->Run(), "");
  for (const char* out : {"pow", "z"}) {
    const std::vector<double> got = this->Values(out);
    for (int64_t i = 0; i < n; ++i) {
      const T x = static_cast<T>(xs[i]), y = static_cast<T>(ys[i]);
      const T want = static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      const T have = static_cast<T>(got[i]);
      const auto where = ::testing::Message() << out << ": " << x << " ^ " << y;
      if (!ExpectSpecialValue(have, want, where)) {
        const T ulp = std::nextafter(std::fabs(want), std::numeric_limits<T>::infinity()) - std::fabs(want);
        EXPECT_LE(std::fabs(have - want), ulp) << where << " gave " << have << ", not " << want;
      }
    }
  }
}

// asin, acos, atan, tan and expm1: single precision by our own polynomials, promised within
// 3 ulp of the exact value (here: double precision's, rounded) over a sweep of every binade
// (expm1 within 5: Eigen's exp, which it uses above |x| = 0.7, is that far off above 43
// under AVX-512), with libm's NaNs, infinities and signed zeros; double precision within 3
// ulp of libm's (our own forms, tested more closely in DoublePrecisionFormsWithinFewUlp).
// tan is also held to it at the floats
// nearest its poles (where an inexact reduction by pi/2 shows most), and on both sides of
// where it hands over to libm; expm1 on both sides of where its series hands over to exp.
TYPED_TEST(FloatOps, PolynomialFunctionsWithinThreeUlp) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<double> xs = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            0.5,
                            -0.5,
                            1.0000001,
                            -1.5,
                            2.414213562373095,
                            0.41421356,
                            static_cast<double>(inf),
                            static_cast<double>(-inf),
                            static_cast<double>(nan)};
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 0x7f800000u / 20011) {  // positive floats, every binade
    float f;
    std::memcpy(&f, &bits, sizeof f);
    xs.push_back(f);
    xs.push_back(-f);
  }
  for (int i = -4000; i <= 4000; ++i) xs.push_back(i / 4000.0);  // asin's and acos's domain, densely
  for (int k = 1; k < 2600; k += 7) {                            // tan's poles, k pi / 2, up to past 4096
    const float pole = static_cast<float>(k * 1.5707963267948966);
    for (float v = std::nextafter(pole, 0.0f), n = 0; n < 3; v = std::nextafter(v, 1e9f), ++n) {
      xs.push_back(v);
      xs.push_back(-v);
    }
  }
  for (float v : {4095.99f, 4096.0f, 4096.01f, 1e6f, 0.69999f, 0.7f, 0.70001f, -0.69999f, -0.7f, -0.70001f, 88.0f,
                  -88.0f, 1e-30f, -1e-30f}) {
    xs.push_back(v);
  }
  for (int i = -20000; i <= 20000; ++i) xs.push_back(i / 1000.0);  // tan over its first periods, densely
  this->template Set<T>("x", {static_cast<int64_t>(xs.size())}, xs);
  for (const char* op : {"asin", "acos", "atan", "tan", "expm1"}) this->Op(op).Input("X", "x").Output("Out", op);
  ASSERT_EQ(this->Run(), "");
  const std::vector<std::pair<const char*, double (*)(double)>> exact = {
      {"asin", [](double v) { return std::asin(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"expm1", [](double v) { return std::expm1(v); }}};
  for (const auto& [op, f] : exact) {
    const std::vector<double> got = this->Values(op);
    double worst = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const T x = static_cast<T>(xs[i]);
      const T want = std::is_same_v<T, float> ? static_cast<T>(f(static_cast<double>(x))) : static_cast<T>(f(x));
      const T have = static_cast<T>(got[i]);
      const auto where = ::testing::Message() << op << "(" << x << ")";
      if (ExpectSpecialValue(have, want, where)) continue;
      const T ulp = std::nextafter(std::fabs(want), inf) - std::fabs(want);
      worst = std::max(worst, static_cast<double>(std::fabs(have - want) / ulp));
    }
    EXPECT_LE(worst, std::string(op) == "expm1" ? 5.0 : 3.0) << op << "'s largest error in ulp";
  }
}

// The double-precision forms built on Eigen's vectorized exp and log (expm1 by its series
// and exp, Kahan's log1p, tanh from expm1 and exp, erf by fdlibm's rational functions and
// exp) and the activations made of them, sin, cos and tan reduced by pi/2, and asin, acos
// and atan by Cephes' rational functions:
// within 3 ulp (tanh 5) of the exact value (long double's, rounded) over a sweep of every
// binade of both signs, densely where they bend (asin's and acos's domain too, and where
// their forms change), and at the doubles nearest multiples of pi/2 (where a reduction's
// error shows most) up to past where sin and cos hand over to libm; with libm's infinities,
// NaNs and signed zeros.
TEST_F(MathForward, DoublePrecisionFormsWithinFewUlp) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> xs = {0.0,    -0.0, 1e-300, -1e-300, 5e-324,       709.0, 709.8, 710.0, -745.0,
                            -746.0, 19.0, 20.0,   21.0,    -1.0 + 1e-16, inf,   -inf,  nan};
  for (uint64_t bits = 0; bits < 0x7ff0000000000000ull; bits += 0x7ff0000000000000ull / 40009) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    xs.push_back(d);
    xs.push_back(-d);
  }
  for (int i = -40000; i <= 40000; ++i) xs.push_back(i / 1000.0);
  for (int k = 1; k < 700000; k += 997) {  // near multiples of pi/2, up to past 2^20, where sin or cos nears 0
    const double near = k * 1.5707963267948966;
    for (double v = std::nextafter(near, 0.0), n = 0; n < 3; v = std::nextafter(v, inf), ++n) {
      xs.push_back(v);
      xs.push_back(-v);
    }
  }
  for (double v : {1048575.9, 1048576.0, 1048576.1, 1e10, 1e300}) xs.push_back(v), xs.push_back(-v);
  for (int i = -4000; i <= 4000; ++i) xs.push_back(i / 4000.0);  // asin's and acos's domain, densely
  for (double v : {0.5, 0.625, std::nextafter(0.5, 1.0), std::nextafter(0.625, 1.0), 1.0, std::nextafter(1.0, 2.0)}) {
    xs.push_back(v), xs.push_back(-v);
  }
  for (double v : {0.66, 2.41421356237309504880,     // where atan's forms change
                   0.84375, 1.25, 1 / 0.35, 6.0}) {  // and erf's
    for (double w : {std::nextafter(v, 0.0), v, std::nextafter(v, 3.0)}) xs.push_back(w), xs.push_back(-w);
  }
  Set<double>("x", {static_cast<int64_t>(xs.size())}, xs);
  for (const char* op : {"expm1", "log1p", "tanh", "softplus", "elu", "logsigmoid", "sin", "cos", "tan", "asin", "acos",
                         "atan", "erf"}) {
    Op(op).Input("X", "x").Output("Out", op);
  }
  ASSERT_EQ(Run(), "");
  using Exact = long double (*)(long double);
  const std::vector<std::pair<const char*, Exact>> exact = {
      {"expm1", [](long double v) { return std::expm1(v); }},
      {"log1p", [](long double v) { return std::log1p(v); }},
      {"tanh", [](long double v) { return std::tanh(v); }},
      {"softplus", [](long double v) { return v > 20 ? v : std::log1p(std::exp(v)); }},  // beta 1, threshold 20
      {"elu", [](long double v) { return v > 0 ? v : std::expm1(v); }},                  // alpha 1
      {"logsigmoid", [](long double v) { return std::fmin(v, 0.0L) - std::log1p(std::exp(-std::fabs(v))); }},
      {"sin", [](long double v) { return std::sin(v); }},
      {"cos", [](long double v) { return std::cos(v); }},
      {"tan", [](long double v) { return std::tan(v); }},
      {"asin", [](long double v) { return std::asin(v); }},
      {"acos", [](long double v) { return std::acos(v); }},
      {"atan", [](long double v) { return std::atan(v); }},
      {"erf", [](long double v) { return std::erf(v); }}};
  for (const auto& [op, f] : exact) {
    const std::vector<double> got = Values(op);
    double worst = 0, worst_at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = static_cast<double>(f(xs[i])), have = got[i];
      const auto where = ::testing::Message() << op << "(" << xs[i] << ")";
      if (std::fabs(want) < std::numeric_limits<double>::min() && xs[i] != 0) {
        // Below the normal range Eigen's exp stops at exp(-709.78), 5.6e-309, where libm's
        // goes on down to 0: held to that absolutely.
        EXPECT_LE(std::fabs(have - want), 5.6e-309) << where << " gave " << have;
        continue;
      }
      if (ExpectSpecialValue(have, want, where)) continue;
      const double ulp = std::nextafter(std::fabs(want), inf) - std::fabs(want);
      if (std::fabs(have - want) / ulp > worst) worst = std::fabs(have - want) / ulp, worst_at = xs[i];
    }
    // tanh below 0.55 is a quotient of expm1 (within 2 ulp), whose error the quotient carries.
    EXPECT_LE(worst, std::string(op) == "tanh" ? 5.0 : 3.0) << op << "'s largest error in ulp, at " << worst_at;
  }
}

TYPED_TEST(Elementwise, ScaleAndSquare) {
  using T = TypeParam;
  this->template Set<T>("x", {3}, {1, 2, 3});
  this->Op("scale").Input("X", "x").Output("Out", "after").Attr("scale", 2.0f).Attr("bias", 1.0f);
  this->Op("scale")
      .Input("X", "x")
      .Output("Out", "before")
      .Attr("scale", 2.0f)
      .Attr("bias", 1.0f)
      .Attr("bias_after_scale", false);
  this->Op("square").Input("X", "x").Output("Out", "sq");
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("after"), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(this->Values("before"), (std::vector<double>{4, 6, 8}));
  EXPECT_EQ(this->Values("sq"), (std::vector<double>{1, 4, 9}));
}

TEST_F(MathForward, CastBetweenEveryPair) {
  Set<double>("x", {3}, {-1.75, 0, 2.5});
  const std::vector<std::pair<int32_t, std::vector<double>>> to = {
      {RILL_FP32, {-1.75, 0, 2.5}}, {RILL_INT32, {-1, 0, 2}}, {RILL_INT64, {-1, 0, 2}}, {RILL_BOOL, {1, 0, 1}}};
  for (const auto& [dtype, want] : to) {
    Op("cast").Input("X", "x").Output("Out", "c" + std::to_string(dtype)).Attr("out_dtype", dtype);
  }
  Op("cast").Input("X", "c0").Output("Out", "back").Attr("out_dtype", int32_t{RILL_FP64});  // bool -> fp64
  ASSERT_EQ(Run(), "");
  for (const auto& [dtype, want] : to) {
    EXPECT_EQ(Get("c" + std::to_string(dtype)).dtype(), dtype);
    EXPECT_EQ(Values("c" + std::to_string(dtype)), want) << dtype;
  }
  EXPECT_EQ(Values("back"), (std::vector<double>{1, 0, 1}));
}

// ---- Reductions ---------------------------------------------------------------------------------

TYPED_TEST(Elementwise, Reductions) {
  using T = TypeParam;
  this->template Set<T>("x", {2, 3}, {1, 5, 3, 4, 2, 6});
  this->template Set<T>("y", {2, 3}, {1, 1, 1, 1, 1, 1});
  this->Op("reduce_sum").Input("X", "x").Output("Out", "sum0");  // dim defaults to [0]
  this->Op("reduce_sum")
      .Input("X", "x")
      .Output("Out", "sum1")
      .Attr("dim", std::vector<int64_t>{-1})
      .Attr("keep_dim", true);
  this->Op("reduce_max").Input("X", "x").Output("Out", "max1").Attr("dim", std::vector<int64_t>{1});
  this->Op("reduce_mean").Input("X", "x").Output("Out", "mean_all").Attr("reduce_all", true);
  this->Op("sum").Input("X", {"x", "y", "x"}).Output("Out", "total");
  this->template Set<T>("acc", {2, 3}, {1, 1, 1, 1, 1, 1});
  this->Op("sum").Input("X", {"x", "acc"}).Output("Out", "acc");  // a gradient summed into itself
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("acc"), (std::vector<double>{2, 6, 4, 5, 3, 7}));
  EXPECT_EQ(this->Values("sum0"), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(this->Dims("sum0"), (std::vector<int64_t>{3}));
  EXPECT_EQ(this->Values("sum1"), (std::vector<double>{9, 12}));
  EXPECT_EQ(this->Dims("sum1"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(this->Values("max1"), (std::vector<double>{5, 6}));
  EXPECT_EQ(this->Values("mean_all"), (std::vector<double>{std::is_integral_v<T> ? 3 : 3.5}));
  EXPECT_EQ(this->Dims("mean_all"), (std::vector<int64_t>{1}));
  EXPECT_EQ(this->Values("total"), (std::vector<double>{3, 11, 7, 9, 5, 13}));
}

// Every reduction over every set of dims of a tensor whose rows are longer than any vector
// register, against a walk over its elements: small integers, so that every order of
// summation gives the same exact result in every dtype.
TYPED_TEST(Elementwise, ReductionsOverEveryDimSetMatchAnElementWalk) {
  using T = TypeParam;
  const std::vector<int64_t> dims = {3, 37, 2, 41};
  const int64_t n = 3 * 37 * 2 * 41;
  std::vector<double> x(static_cast<size_t>(n)), signs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = static_cast<double>((i * 7919) % 17) - 8;
    signs[static_cast<size_t>(i)] = (i * 31) % 5 == 0 ? -1 : 1;  // products stay in range
  }
  this->template Set<T>("x", dims, x);
  this->template Set<T>("signs", dims, signs);
  const std::vector<std::string> ops = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};
  for (int mask = 1; mask < 16; ++mask) {
    std::vector<int64_t> dim;
    for (int k = 0; k < 4; ++k) {
      if (mask & (1 << k)) dim.push_back(k);
    }
    for (const std::string& op : ops) {
      this->Op(op)
          .Input("X", op == "reduce_prod" ? "signs" : "x")
          .Output("Out", op + std::to_string(mask))
          .Attr("dim", dim);
    }
  }
  ASSERT_EQ(this->Run(), "");
  for (int mask = 1; mask < 16; ++mask) {
    // Output index of each element: its kept dims' indices, row-major.
    std::vector<int64_t> out_of(static_cast<size_t>(n));
    int64_t out_n = 1, count = 1;
    for (int k = 0; k < 4; ++k) (mask & (1 << k) ? count : out_n) *= dims[static_cast<size_t>(k)];
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, o = 0, stride = 1;
      for (int k = 3; k >= 0; --k) {
        const int64_t idx = rest % dims[static_cast<size_t>(k)];
        rest /= dims[static_cast<size_t>(k)];
        if (!(mask & (1 << k))) o += idx * stride, stride *= dims[static_cast<size_t>(k)];
      }
      out_of[static_cast<size_t>(i)] = o;
    }
    std::vector<double> sum(static_cast<size_t>(out_n), 0), mx(static_cast<size_t>(out_n), -1e9),
        mn(static_cast<size_t>(out_n), 1e9), prod(static_cast<size_t>(out_n), 1);
    for (int64_t i = 0; i < n; ++i) {
      const size_t o = static_cast<size_t>(out_of[static_cast<size_t>(i)]);
      const double v = x[static_cast<size_t>(i)];
      sum[o] += v, mx[o] = std::max(mx[o], v), mn[o] = std::min(mn[o], v), prod[o] *= signs[static_cast<size_t>(i)];
    }
    std::vector<double> mean(sum.size());
    for (size_t o = 0; o < sum.size(); ++o) {
      mean[o] = static_cast<double>(static_cast<T>(sum[o]) / static_cast<T>(count));
    }
    const std::string m = std::to_string(mask);
    EXPECT_EQ(this->Values("reduce_sum" + m), sum) << "dims mask " << mask;
    EXPECT_EQ(this->Values("reduce_mean" + m), mean) << "dims mask " << mask;
    EXPECT_EQ(this->Values("reduce_max" + m), mx) << "dims mask " << mask;
    EXPECT_EQ(this->Values("reduce_min" + m), mn) << "dims mask " << mask;
    EXPECT_EQ(this->Values("reduce_prod" + m), prod) << "dims mask " << mask;
  }
}

// A NaN anywhere in a long row is that row's maximum and minimum, whichever vector lane or
// accumulator it lands in, or past the last whole vector.
TYPED_TEST(FloatOps, ReducedNanWinsEveryLane) {
  using T = TypeParam;
  const int64_t rows = 40, width = 67;
  std::vector<double> x(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 13);
  for (int64_t r = 0; r < rows; r += 2) x[static_cast<size_t>(r * width + r)] = std::nan("");  // column r
  x[static_cast<size_t>(width - 1)] = std::nan("");      // row 0's last element, too
  x[static_cast<size_t>(2 * width - 1)] = std::nan("");  // row 1's only NaN: its last element
  this->template Set<T>("x", {rows, width}, x);
  this->Op("reduce_max").Input("X", "x").Output("Out", "max").Attr("dim", std::vector<int64_t>{1});
  this->Op("reduce_min").Input("X", "x").Output("Out", "min").Attr("dim", std::vector<int64_t>{1});
  this->Op("reduce_max").Input("X", "x").Output("Out", "col").Attr("dim", std::vector<int64_t>{0});
  ASSERT_EQ(this->Run(), "");
  const std::vector<double> mx = this->Values("max"), mn = this->Values("min"), col = this->Values("col");
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(std::isnan(mx[static_cast<size_t>(r)]), r % 2 == 0 || r == 1) << "row " << r;
    EXPECT_EQ(std::isnan(mn[static_cast<size_t>(r)]), r % 2 == 0 || r == 1) << "row " << r;
  }
  for (int64_t c = 0; c < width; ++c) {
    EXPECT_EQ(std::isnan(col[static_cast<size_t>(c)]), (c < rows && c % 2 == 0) || c == width - 1) << "column " << c;
  }
}

// flip and roll of rows longer than any vector register and than the copies' vector-loop
// threshold, for elements of 1, 4 and 8 bytes, against a walk over the elements: every
// row reversed, shifted (both ways, by amounts that leave the stores off the rows'
// alignment), and the rows themselves moved.
template <class T> class EveryElementSize : public OpFixture {};
using ElementSizes = ::testing::Types<bool, float, double, int64_t>;
TYPED_TEST_SUITE(EveryElementSize, ElementSizes);

TYPED_TEST(EveryElementSize, FlipAndRollOfLongRowsMatchAWalk) {
  using T = TypeParam;
  auto& f = *this;
  const int64_t rows = 3, width = 300;
  std::vector<double> x(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::is_same_v<T, bool> ? (i * 7) % 3 == 0 : static_cast<double>(i % 251);
  f.template Set<T>("x", {rows, width}, x);
  f.Op("flip").Input("X", "x").Output("Out", "flipped").Attr("axis", std::vector<int64_t>{1});
  f.Op("flip").Input("X", "x").Output("Out", "both").Attr("axis", std::vector<int64_t>{0, 1});
  f.Op("roll")
      .Input("X", "x")
      .Output("Out", "right")
      .Attr("shifts", std::vector<int64_t>{3})
      .Attr("axis", std::vector<int64_t>{1});
  f.Op("roll")
      .Input("X", "x")
      .Output("Out", "left_down")
      .Attr("shifts", std::vector<int64_t>{-7, 1})
      .Attr("axis", std::vector<int64_t>{1, 0});
  ASSERT_EQ(f.Run(), "");
  std::vector<double> flipped, both, right, left_down;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j) {
      const auto at = [&](int64_t rr, int64_t jj) { return x[static_cast<size_t>(rr * width + jj)]; };
      flipped.push_back(at(r, width - 1 - j));
      both.push_back(at(rows - 1 - r, width - 1 - j));
      right.push_back(at(r, (j - 3 + width) % width));
      left_down.push_back(at((r - 1 + rows) % rows, (j + 7) % width));
    }
  }
  EXPECT_EQ(f.Values("flipped"), flipped);
  EXPECT_EQ(f.Values("both"), both);
  EXPECT_EQ(f.Values("right"), right);
  EXPECT_EQ(f.Values("left_down"), left_down);
}

// reduce_all and reduce_any over every set of dims, against a walk over the elements: rows
// longer than any vector register, most of them all true or all false, a few with a single
// odd element at each end and in the middle.
TEST_F(MathForward, BoolReductionsOverEveryDimSetMatchAnElementWalk) {
  const std::vector<int64_t> dims = {3, 5, 130};
  const int64_t n = 3 * 5 * 130;
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = i / 130, j = i % 130;
    const bool odd = (row % 3 == 1 && j == 0) || (row % 3 == 2 && j == 129) || (row % 5 == 0 && j == 64);
    x[static_cast<size_t>(i)] = ((row / 2) % 2 == 0) != odd ? 1 : 0;
  }
  Set<bool>("x", dims, x);
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int64_t> dim;
    for (int k = 0; k < 3; ++k) {
      if (mask & (1 << k)) dim.push_back(k);
    }
    Op("reduce_all").Input("X", "x").Output("Out", "all" + std::to_string(mask)).Attr("dim", dim);
    Op("reduce_any").Input("X", "x").Output("Out", "any" + std::to_string(mask)).Attr("dim", dim);
  }
  ASSERT_EQ(Run(), "");
  for (int mask = 1; mask < 8; ++mask) {
    int64_t out_n = 1;
    for (int k = 0; k < 3; ++k) {
      if (!(mask & (1 << k))) out_n *= dims[static_cast<size_t>(k)];
    }
    std::vector<double> all(static_cast<size_t>(out_n), 1), any(static_cast<size_t>(out_n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t idx[3] = {i / (5 * 130), (i / 130) % 5, i % 130};
      int64_t o = 0;
      for (int k = 0; k < 3; ++k) {
        if (!(mask & (1 << k))) o = o * dims[static_cast<size_t>(k)] + idx[k];
      }
      const double v = x[static_cast<size_t>(i)];
      all[static_cast<size_t>(o)] = std::min(all[static_cast<size_t>(o)], v);
      any[static_cast<size_t>(o)] = std::max(any[static_cast<size_t>(o)], v);
    }
    EXPECT_EQ(Values("all" + std::to_string(mask)), all) << "dims mask " << mask;
    EXPECT_EQ(Values("any" + std::to_string(mask)), any) << "dims mask " << mask;
  }
}

TYPED_TEST(FloatOps, Mean) {
  using T = TypeParam;
  this->template Set<T>("x", {2, 2}, {1, 2, 3, 5});
  this->Op("mean").Input("X", "x").Output("Out", "m");
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("m"), (std::vector<double>{2.75}));
  EXPECT_EQ(this->Dims("m"), (std::vector<int64_t>{1}));
}

TEST_F(MathForward, ReduceDimOutOfRange) {
  Set<float>("x", {2}, {1, 2});
  Op("reduce_sum").Input("X", "x").Output("Out", "y").Attr("dim", std::vector<int64_t>{3});
  EXPECT_NE(Run().find("dim 3 is out of range for rank 1"), std::string::npos);
}

// ---- mul, matmul ------------------------------------------------------------------------------------

TYPED_TEST(FloatOps, MulFlattensAtNumColDims) {
  using T = TypeParam;
  // X [2, 1, 3] flattened at 1 -> [2, 3]; Y [3, 2].
  this->template Set<T>("x", {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  this->template Set<T>("y", {3, 2}, {1, 0, 0, 1, 1, 1});
  this->Op("mul").Input("X", "x").Input("Y", "y").Output("Out", "out");
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("out"), (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(this->Dims("out"), (std::vector<int64_t>{2, 2}));
}

TYPED_TEST(FloatOps, MatMulTransposesBatchesAndVectors) {
  using T = TypeParam;
  this->template Set<T>("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  this->template Set<T>("b", {2, 3}, {1, 0, 1, 0, 1, 0});
  this->template Set<T>("batch", {2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2});
  this->template Set<T>("v", {3}, {1, 1, 1});
  this->Op("matmul").Input("X", "a").Input("Y", "b").Output("Out", "abt").Attr("transpose_Y", true);
  this->Op("matmul").Input("X", "a").Input("Y", "b").Output("Out", "atb").Attr("transpose_X", true).Attr("alpha", 0.5f);
  this->Op("matmul").Input("X", "batch").Input("Y", "a").Output("Out", "batched");
  this->Op("matmul").Input("X", "a").Input("Y", "v").Output("Out", "mv");
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("abt"), (std::vector<double>{4, 2, 10, 5}));
  EXPECT_EQ(this->Dims("abt"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(this->Values("atb"), (std::vector<double>{0.5, 2, 0.5, 1, 2.5, 1, 1.5, 3, 1.5}));
  EXPECT_EQ(this->Values("batched"), (std::vector<double>{1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(this->Dims("batched"), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(this->Values("mv"), (std::vector<double>{6, 15}));
  EXPECT_EQ(this->Dims("mv"), (std::vector<int64_t>{2}));
}

TEST_F(MathForward, MatMulShapeMismatch) {
  Set<float>("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("matmul").Input("X", "a").Input("Y", "a").Output("Out", "c");
  EXPECT_NE(Run().find("have inner dimensions 3 and 2"), std::string::npos);
}

// ---- softmax, cross_entropy ---------------------------------------------------------------------------

TYPED_TEST(FloatOps, SoftmaxAndCrossEntropy) {
  using T = TypeParam;
  this->template Set<T>("logits", {2, 3}, {1, 2, 3, 1, 1, 1});
  this->template Set<int64_t>("label", {2, 1}, {2, 0});
  this->template Set<T>("soft", {2, 3}, {0, 0, 1, 0.5, 0.5, 0});
  this->Op("softmax").Input("X", "logits").Output("Out", "p");
  this->Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "hard");
  this->Op("cross_entropy").Input("X", "p").Input("Label", "soft").Output("Y", "softl").Attr("soft_label", true);
  ASSERT_EQ(this->Run(), "");
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  ExpectNear(this->Values("p"), {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1 / 3.0, 1 / 3.0, 1 / 3.0});
  ExpectNear(this->Values("hard"), {-std::log(std::exp(3.0) / z), std::log(3.0)});
  ExpectNear(this->Values("softl"), {-std::log(std::exp(3.0) / z), std::log(3.0)});
  EXPECT_EQ(this->Dims("hard"), (std::vector<int64_t>{2, 1}));
}

TEST_F(MathForward, CrossEntropyLabelOutOfRange) {
  Set<float>("p", {1, 2}, {0.5, 0.5});
  Set<int64_t>("label", {1, 1}, {5});
  Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "y");
  EXPECT_NE(Run().find("Label[0] = 5 is not a class in [0, 2)"), std::string::npos);
}

TEST_F(MathForward, CrossEntropyShapeErrors) {
  Set<float>("p", {2, 2}, {0.5, 0.5, 0.5, 0.5});
  Set<int64_t>("label", {3, 1}, {0, 1, 0});
  Set<float>("soft", {2, 3}, {1, 0, 0, 1, 0, 0});
  Op("cross_entropy").Input("X", "p").Input("Label", "label").Output("Y", "y");
  EXPECT_NE(Run().find("Label must hold one class index per row of X (2), got [3, 1]"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("cross_entropy").Input("X", "p").Input("Label", "soft").Output("Y", "y").Attr("soft_label", true);
  EXPECT_NE(Run().find("soft Label must be shaped like X [2, 2], got [2, 3]"), std::string::npos);
}

// ---- random ------------------------------------------------------------------------------------------------

TEST_F(MathForward, SeededRandomIsReproducibleAndInRange) {
  for (const char* name : {"u1", "u2"}) {
    Op("uniform_random")
        .Output("Out", name)
        .Attr("shape", std::vector<int64_t>{1000})
        .Attr("seed", int32_t{42})
        .Attr("min", -2.0f)
        .Attr("max", 3.0f);
  }
  Op("uniform_random").Output("Out", "u3").Attr("shape", std::vector<int64_t>{1000}).Attr("seed", int32_t{43});
  Op("gaussian_random")
      .Output("Out", "g")
      .Attr("shape", std::vector<int64_t>{20000})
      .Attr("seed", int32_t{7})
      .Attr("mean", 1.0f)
      .Attr("std", 2.0f)
      .Attr("dtype", int32_t{RILL_FP64});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("u1"), Values("u2"));
  EXPECT_NE(Values("u1"), Values("u3"));
  for (double v : Values("u1")) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
  }
  const auto g = Values("g");
  double mean = 0, var = 0;
  for (double v : g) mean += v / g.size();
  for (double v : g) var += (v - mean) * (v - mean) / g.size();
  EXPECT_NEAR(mean, 1.0, 0.05);  // 20,000 draws: standard error 0.014
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  // A normal's share within one std of its mean is 0.6827 (standard error 0.0033 here).
  EXPECT_NEAR(std::count_if(g.begin(), g.end(), [](double v) { return std::fabs(v - 1.0) < 2.0; }) / double(g.size()),
              0.6827, 0.015);
  EXPECT_EQ(Get("g").dtype(), RILL_FP64);
}

class TruncatedGaussian : public MathForward, public ::testing::WithParamInterface<RillDataType> {};

TEST_P(TruncatedGaussian, StaysWithinTwoStdAndIsReproducible) {
  for (const char* name : {"t1", "t2"}) {
    Op("truncated_gaussian_random")
        .Output("Out", name)
        .Attr("shape", std::vector<int64_t>{20000})
        .Attr("seed", int32_t{9})
        .Attr("mean", 1.0f)
        .Attr("std", 0.5f)
        .Attr("dtype", static_cast<int32_t>(GetParam()));
  }
  ASSERT_EQ(Run(), "");
  const auto t = Values("t1");
  EXPECT_EQ(t, Values("t2"));
  EXPECT_EQ(Get("t1").dtype(), GetParam());
  double mean = 0, var = 0;
  for (double v : t) {
    ASSERT_GE(v, 0.0);  // mean - 2 std
    ASSERT_LE(v, 2.0);  // mean + 2 std
    mean += v / t.size();
  }
  for (double v : t) var += (v - mean) * (v - mean) / t.size();
  EXPECT_NEAR(mean, 1.0, 0.02);
  // A normal truncated at 2 std keeps 0.774 of its variance: std 0.5 * 0.880.
  EXPECT_NEAR(std::sqrt(var), 0.44, 0.01);
  // Its shares within 1 std and within 0.25 std of the mean: 0.6827 / 0.9545 and
  // 0.1974 / 0.9545 (standard errors 0.0032 and 0.0029 here).
  const auto within = [&](double d) {
    return std::count_if(t.begin(), t.end(), [&](double v) { return std::fabs(v - 1.0) < d * 0.5; }) / double(t.size());
  };
  EXPECT_NEAR(within(1.0), 0.7152, 0.015);
  EXPECT_NEAR(within(0.25), 0.2068, 0.015);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TruncatedGaussian, ::testing::Values(RILL_FP32, RILL_FP64));

// ---- indexing and made tensors ------------------------------------------------------------------------------

TEST_F(MathForward, GatherOverwriteKeepsTheLastSliceOfARepeatedIndex) {
  Set<double>("x", {3, 2}, {0, 0, 0, 0, 0, 0});
  Set<int64_t>("index", {3}, {2, 0, 2});
  Set<double>("g", {3, 2}, {1, 2, 3, 4, 5, 6});
  Op("gather_grad").Input("X", "x").Input("Index", "index").Input("Out@GRAD", "g").Output("X@GRAD", "sum");
  Op("gather_grad")
      .Input("X", "x")
      .Input("Index", "index")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "last")
      .Attr("overwrite", true);
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("sum"), (std::vector<double>{3, 4, 0, 0, 6, 8}));
  EXPECT_EQ(Values("last"), (std::vector<double>{3, 4, 0, 0, 5, 6}));
}

TEST_F(MathForward, IndexingErrorsNameTheBadValue) {
  Set<float>("x", {3, 2}, {1, 2, 3, 4, 5, 6});
  Set<int64_t>("index", {2}, {1, 3});
  Op("gather").Input("X", "x").Input("Index", "index").Output("Out", "out");
  EXPECT_NE(Run().find("Index[1] = 3 is out of range for axis 0 of size 3"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Set<int64_t>("ids", {2, 1}, {1, 4});
  Op("one_hot").Input("X", "ids").Output("Out", "out").Attr("depth", int32_t{4});
  EXPECT_NE(Run().find("X[1] = 4 is not in [0, depth = 4)"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Set<int64_t>("flat", {2}, {1, 2});
  Op("one_hot").Input("X", "flat").Output("Out", "out").Attr("depth", int32_t{4});
  EXPECT_NE(Run().find("X must end in a dim of 1 ([..., 1]), not [2]"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Set<bool>("c", {2}, {true, false});
  Op("where").Input("Condition", "c").Input("X", "x").Input("Y", "x").Output("Out", "out");
  EXPECT_NE(Run().find("Condition [2] is not shaped like X [3, 2]"), std::string::npos);
}

TEST_F(MathForward, ExpandingToAShapeThatIsNoBroadcastIsAnError) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("expand_v2").Input("X", "x").Output("Out", "out").Attr("shape", std::vector<int64_t>{4, 3});
  EXPECT_NE(Run().find("shape [4, 3] is no broadcast of X [2, 3]"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("expand_v2").Input("X", "x").Output("Out", "out").Attr("shape", std::vector<int64_t>{3});
  EXPECT_NE(Run().find("shape [3] has fewer dims than X [2, 3]"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("tile").Input("X", "x").Output("Out", "out").Attr("repeat_times", std::vector<int64_t>{2, 0});
  EXPECT_NE(Run().find("repeat_times [2, 0] must be positive"), std::string::npos);
}

TEST_F(MathForward, PaddingErrorsNameTheBadAttribute) {
  Set<float>("x", {1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Op("pad2d")
      .Input("X", "x")
      .Output("Out", "out")
      .Attr("paddings", std::vector<int64_t>{2, 0, 0, 0})
      .Attr("mode", std::string("reflect"));
  EXPECT_NE(Run().find("reflect padding of 2 needs a dim longer than that, dim 2 is 2"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("pad2d").Input("X", "x").Output("Out", "out").Attr("mode", std::string("circular"));
  EXPECT_NE(Run().find("mode 'circular' is none of constant, reflect, and edge"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("pad2d").Input("X", "x").Output("Out", "out").Attr("data_format", std::string("NCDHW"));
  EXPECT_NE(Run().find("data_format 'NCDHW' is neither NCHW nor NHWC"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("pad").Input("X", "x").Output("Out", "out").Attr("paddings", std::vector<int64_t>{1, 1});
  EXPECT_NE(Run().find("paddings [1, 1] must hold two values per dim of X [1, 1, 2, 3]"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("pad3d").Input("X", "x").Output("Out", "out");
  EXPECT_NE(Run().find("X [1, 1, 2, 3] must have rank 5"), std::string::npos);
}

// prelu and its gradient on an X large enough to split across the passes' team, its runs
// of one Alpha (a channel's 1,000 elements, or all of X) cut between chunks, in each mode
// against the definition; X's values and gradients small integers, so every result is exact.
TEST_F(MathForward, PreluMatchesItsDefinitionInEveryModeAcrossThreads) {
  const std::vector<int64_t> dims = {4, 50, 10, 100};
  const int64_t n = 4 * 50 * 10 * 100, per_sample = n / 4;
  std::vector<double> x(static_cast<size_t>(n)), g(x.size());
  std::mt19937 rng(4);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<double>(static_cast<int>(rng() % 9) - 4);
    g[i] = static_cast<double>(1 + rng() % 5);
  }
  for (const std::string mode : {"all", "channel", "element"}) {
    const int64_t alphas = mode == "all" ? 1 : mode == "channel" ? 50 : per_sample;
    const auto alpha_of = [&](int64_t i) {
      return mode == "all" ? 0 : mode == "channel" ? (i / 1000) % 50 : i % per_sample;
    };
    std::vector<double> alpha(static_cast<size_t>(alphas));
    for (size_t k = 0; k < alpha.size(); ++k) alpha[k] = 0.25 * static_cast<double>(1 + k % 3);
    std::vector<double> out(x.size()), dx(x.size()), dalpha(alpha.size(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(alpha_of(i));
      const auto e = static_cast<size_t>(i);
      out[e] = x[e] > 0 ? x[e] : alpha[k] * x[e];
      dx[e] = x[e] > 0 ? g[e] : alpha[k] * g[e];
      dalpha[k] += x[e] > 0 ? 0.0 : x[e] * g[e];
    }
    pb_ = core::ProgramBuilder();
    Set<float>("x", dims, x);
    Set<float>("alpha", {alphas}, alpha);
    Set<float>("g", dims, g);
    Op("prelu").Input("X", "x").Input("Alpha", "alpha").Output("Out", "out").Attr("mode", mode);
    Op("prelu_grad")
        .Input("X", "x")
        .Input("Alpha", "alpha")
        .Input("Out@GRAD", "g")
        .Output("X@GRAD", "dx")
        .Output("Alpha@GRAD", "dalpha")
        .Attr("mode", mode);
    ASSERT_EQ(Run(), "") << mode;
    EXPECT_EQ(Values("out"), out) << mode;
    EXPECT_EQ(Values("dx"), dx) << mode;
    EXPECT_EQ(Values("dalpha"), dalpha) << mode;
  }
}

TEST_F(MathForward, PreluAlphaOfTheWrongSizeIsNamed) {
  Set<float>("x", {2, 3, 2}, {1, -2, 3, -4, 5, -6, 1, -2, 3, -4, 5, -6});
  Set<float>("alpha", {2}, {0.1f, 0.2f});
  Op("prelu").Input("X", "x").Input("Alpha", "alpha").Output("Out", "out").Attr("mode", std::string("channel"));
  EXPECT_NE(Run().find("Alpha holds 2 values; mode channel on X [2, 3, 2] takes 3"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("prelu").Input("X", "x").Input("Alpha", "alpha").Output("Out", "out").Attr("mode", std::string("row"));
  EXPECT_NE(Run().find("mode 'row' is none of all, channel and element"), std::string::npos);
}

TEST_F(MathForward, ResizeErrorsNameTheBadSizeOrMethod) {
  Set<float>("x", {1, 1, 2, 2}, {1, 2, 3, 4});
  Op("bilinear_interp_v2").Input("X", "x").Output("Out", "out").Attr("interp_method", std::string("bilinear"));
  EXPECT_NE(Run().find("the output size [-1, -1] must be two positive values"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Op("nearest_interp")
      .Input("X", "x")
      .Output("Out", "out")
      .Attr("out_h", int32_t{3})
      .Attr("out_w", int32_t{3})
      .Attr("interp_method", std::string("bilinear"));
  EXPECT_NE(Run().find("interp_method 'bilinear' does not match the op (nearest)"), std::string::npos);
  pb_ = core::ProgramBuilder();
  Set<float>("flat", {4}, {1, 2, 3, 4});
  Op("bilinear_interp")
      .Input("X", "flat")
      .Output("Out", "out")
      .Attr("out_h", int32_t{3})
      .Attr("out_w", int32_t{3})
      .Attr("interp_method", std::string("bilinear"));
  EXPECT_NE(Run().find("X [4] must be a 4-D image"), std::string::npos);
}

TEST_F(MathForward, GroupNormGroupsMustDivideTheChannels) {
  Set<float>("x", {1, 6, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Op("group_norm").Input("X", "x").Output("Y", "y").Attr("groups", int32_t{4});
  EXPECT_NE(Run().find("groups (4) must divide the 6 channels"), std::string::npos);
}

TEST_F(MathForward, IntegerModAndFloorDivByZeroAreErrors) {
  for (const char* op : {"elementwise_mod", "elementwise_floordiv"}) {
    pb_ = core::ProgramBuilder();
    Set<int32_t>("x", {2}, {7, -7});
    Set<int32_t>("y", {2}, {2, 0});
    Op(op).Input("X", "x").Input("Y", "y").Output("Out", "out");
    EXPECT_NE(Run().find("integer division by zero (Y[1] is 0)"), std::string::npos) << op;
  }
}

// The most negative integer by -1 (undefined in C++, a SIGFPE on x86) is defined as Go
// defines it: the quotient wraps to the dividend, the remainder is 0. On tensors and on
// one-element operands (the kernels' scalar path) alike.
TEST_F(MathForward, MostNegativeIntegerByMinusOneWrapsAsInGo) {
  auto check = [&](auto tag, int64_t n) {
    using T = decltype(tag);
    const double lowest = static_cast<double>(std::numeric_limits<T>::min());
    for (const auto& [op, want] : std::vector<std::pair<const char*, double>>{
             {"elementwise_div", lowest}, {"elementwise_floordiv", lowest}, {"elementwise_mod", 0}}) {
      pb_ = core::ProgramBuilder();
      this->template Set<T>("x", {n}, std::vector<double>(n, lowest));
      this->template Set<T>("y", {n}, std::vector<double>(n, -1));
      Op(op).Input("X", "x").Input("Y", "y").Output("Out", "out");
      ASSERT_EQ(Run(), "") << op;
      EXPECT_EQ(Values("out"), std::vector<double>(n, want)) << op << " on " << n << " elements";
    }
  };
  for (int64_t n : {1, 3}) {
    check(int32_t{}, n);
    check(int64_t{}, n);
  }
}

// Integer div (truncating), floordiv and mod are exact over the whole range, on both sides
// of 2^53 (below it the kernels divide in double precision, above it in integers): every
// pair of dividends and divisors from a set of both signs, near 2^53 and the type's ends,
// and random pairs, against the integer formulas.
TEST_F(MathForward, IntegerDivisionIsExactOnBothSidesOfTwoToThe53) {
  auto check = [&](auto tag) {
    using T = decltype(tag);
    constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::min();
    std::vector<T> special = {0, 1, 2, 3, 7, 10, 1000, kMax, kMax - 1, kMin, kMin + 1};
    if constexpr (sizeof(T) == 8) {
      for (int64_t d : {-2, -1, 0, 1, 2}) special.push_back((int64_t{1} << 53) + d);
      for (int64_t d : {-1, 0, 1}) special.push_back((int64_t{1} << 54) + d);
      special.push_back(9007199254740993 * 3);  // 3 (2^53 + 1): a quotient by 3 in double rounds
    }
    const size_t n_special = special.size();
    for (size_t i = 0; i < n_special; ++i)
      special.push_back(static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(special[i])));
    std::vector<T> xs, ys;
    for (T a : special) {
      for (T b : special) {
        if (b == 0) continue;
        xs.push_back(a);
        ys.push_back(b);
      }
    }
    std::mt19937_64 rng(5);
    for (int i = 0; i < 20000; ++i) {
      const int shift = static_cast<int>(rng() % (8 * sizeof(T)));
      xs.push_back(static_cast<T>(rng() >> shift));
      const T b = static_cast<T>(static_cast<T>(rng() >> (rng() % (8 * sizeof(T)))) | 1);
      ys.push_back(b);
    }
    const int64_t n = static_cast<int64_t>(xs.size());
    for (const auto& [name, values] : {std::pair<const char*, const std::vector<T>*>{"x", &xs}, {"y", &ys}}) {
      core::Tensor* t = scope()->Var(name)->GetMutableTensor();
      t->Allocate(rill::DataTypeOf<T>::value, {n});
      std::copy(values->begin(), values->end(), t->data_as<T>());
    }
    for (const char* op : {"elementwise_div", "elementwise_floordiv", "elementwise_mod"}) {
      Op(op).Input("X", "x").Input("Y", "y").Output("Out", op);
    }
    ASSERT_EQ(Run(), "");
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < n; ++i) {
      const T a = xs[i], b = ys[i];
      const T q = b == -1 ? static_cast<T>(U(0) - static_cast<U>(a)) : a / b;
      const T r = b == -1 ? 0 : a % b;
      const bool down = r != 0 && (r < 0) != (b < 0);
      const T floor_q = static_cast<T>(static_cast<U>(q) - U(down));
      const T mod = down ? static_cast<T>(r + b) : r;
      const auto where = ::testing::Message() << a << " by " << b;
      ASSERT_EQ(Get("elementwise_div").data_as<T>()[i], q) << "div of " << where;
      ASSERT_EQ(Get("elementwise_floordiv").data_as<T>()[i], floor_q) << "floordiv of " << where;
      ASSERT_EQ(Get("elementwise_mod").data_as<T>()[i], mod) << "mod of " << where;
    }
  };
  check(int32_t{});
  pb_ = core::ProgramBuilder();
  check(int64_t{});
}

// assign's copy carries X's LoD whole: levels the output held from before go, on the CPU
// copy (a tensor) as on the host's (selected rows).
TEST_F(MathForward, AssignReplacesTheOutputsLod) {
  Set<float>("x", {4}, {1, 2, 3, 4});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 4}};
  Set<float>("out", {4}, {0, 0, 0, 0});
  scope()->FindVar("out")->GetMutableTensor()->mutable_lod() = {{0, 2, 4}, {0, 1, 2, 3, 4}};
  Op("assign").Input("X", "x").Output("Out", "out");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("out"), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 1, 4}}));
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod().clear();
  ASSERT_EQ(Run(), "");
  EXPECT_TRUE(Get("out").lod().empty()) << "X has no LoD now";
}

// Outputs that are an input's values unchanged view its memory (tensor_share): the
// gradients add and sub pass through, sum's, reshape2's result and its gradient, and
// inference dropout that scales nothing. Memory so shared is rewritten in place by nobody:
// sgd updating a parameter that a reshape views gives the parameter new memory, and the
// view keeps the values it was given.
TEST_F(MathForward, OutputsThatAreAnInputViewItsMemory) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<float>("bias", {3}, {1, 1, 1});
  Set<float>("g", {2, 3}, {1, 2, 3, 4, 5, 6});
  Op("elementwise_add_grad")
      .Input("X", "x")
      .Input("Y", "bias")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "add_dx")
      .Output("Y@GRAD", "add_dy")
      .Attr("axis", int64_t{-1});
  Op("elementwise_sub_grad")
      .Input("X", "x")
      .Input("Y", "x")
      .Input("Out@GRAD", "g")
      .Output("X@GRAD", "sub_dx")
      .Output("Y@GRAD", "sub_dy")
      .Attr("axis", int64_t{-1});
  Op("sum_grad").Input("Out@GRAD", "g").Output("X@GRAD", "sum_dx");
  Op("reshape2").Input("X", "x").Output("Out", "flat").Attr("shape", std::vector<int64_t>{6});
  Op("reshape2_grad").Input("X", "x").Input("Out@GRAD", "flat").Output("X@GRAD", "reshape_dx");
  Op("dropout")
      .Input("X", "x")
      .Output("Out", "kept")
      .Attr("is_test", true)
      .Attr("dropout_implementation", std::string("upscale_in_train"));
  ASSERT_EQ(Run(), "");
  const void* g = Get("g").data();
  const void* x = Get("x").data();
  for (const char* view : {"add_dx", "sub_dx", "sum_dx"}) {
    EXPECT_EQ(Get(view).data(), g) << view;
    EXPECT_EQ(Values(view), (std::vector<double>{1, 2, 3, 4, 5, 6})) << view;
  }
  EXPECT_EQ(Get("add_dx").dims().ToVector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values("add_dy"), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(Values("sub_dy"), (std::vector<double>{-1, -2, -3, -4, -5, -6}));
  EXPECT_NE(Get("sub_dy").data(), g);
  for (const char* view : {"flat", "reshape_dx", "kept"}) EXPECT_EQ(Get(view).data(), x) << view;
  EXPECT_EQ(Get("flat").dims().ToVector(), (std::vector<int64_t>{6}));
  EXPECT_EQ(Get("reshape_dx").dims().ToVector(), (std::vector<int64_t>{2, 3}));

  pb_ = core::ProgramBuilder();
  Set<float>("lr", {1}, {1});
  Op("reshape2").Input("X", "x").Output("Out", "flat").Attr("shape", std::vector<int64_t>{6});
  Op("sgd").Input("Param", "x").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "x");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("x"), (std::vector<double>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Values("flat"), (std::vector<double>{1, 2, 3, 4, 5, 6})) << "the view kept its values";
  EXPECT_NE(Get("flat").data(), Get("x").data());
}

// abs of integers, as Paddle registers it: magnitudes exact, the most negative value
// (whose magnitude its type cannot hold) itself.
TEST_F(MathForward, AbsOfIntegersKeepsTheMostNegativeValue) {
  auto check = [&](auto tag) {
    using T = decltype(tag);
    const double lowest = static_cast<double>(std::numeric_limits<T>::min());  // -2^31, -2^63: exact
    const double big = 1073741824.0;                                           // 2^30
    pb_ = core::ProgramBuilder();
    this->template Set<T>("x", {6}, {-3, 0, 7, -big, big, lowest});
    Op("abs").Input("X", "x").Output("Out", "out");
    ASSERT_EQ(Run(), "");
    EXPECT_EQ(Values("out"), (std::vector<double>{3, 0, 7, big, big, lowest}));
  };
  check(int32_t{});
  check(int64_t{});
}

// Philox4x32-10 (plugins/math/philox.h) gives Random123's known answers (its kat_vectors:
// counter, key, output).
TEST(Philox, GivesRandom123sKnownAnswers) {
  using Words = std::array<uint32_t, 4>;
  EXPECT_EQ(math::Philox4x32({0, 0, 0, 0}, {0, 0}), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(math::Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(math::Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// PhiloxBlocks (consecutive blocks, computed a run of lanes at a time) gives each block's
// Philox4x32 words, across a carry into the counter's second word and for a count that
// leaves a partial run.
TEST(Philox, BlocksAreEachBlocksWords) {
  const math::PhiloxKey key = math::PhiloxKeyOf(0xfeedface12345678);
  const uint64_t first = (uint64_t{1} << 32) - 21;
  constexpr int64_t kCount = 45;
  std::vector<uint32_t> words(4 * kCount);
  math::PhiloxBlocks(first, kCount, key, words.data());
  for (int64_t b = 0; b < kCount; ++b) {
    const uint64_t index = first + static_cast<uint64_t>(b);
    const std::array<uint32_t, 4> want =
        math::Philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0}, key);
    for (int w = 0; w < 4; ++w) ASSERT_EQ(words[4 * b + w], want[w]) << "block " << index << " word " << w;
  }
}

// Training dropout keeps element i exactly when the top 24 bits of word i % 4 of Philox
// block i / 4 under the seed are at least 2^24 p, over a tensor large enough to be split
// across the passes' team (so the split changes nothing), scales what it keeps, and keeps
// about 1 - p of them; a fixed seed repeats.
TEST_F(MathForward, TrainingDropoutFollowsThePhiloxStreamOfItsSeed) {
  constexpr int64_t n = 200003;
  constexpr double p = 0.3;
  std::vector<double> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<double>(i % 1000) + 1;
  Set<float>("x", {n}, xs);
  for (const char* out : {"a", "b"}) {
    Op("dropout")
        .Input("X", "x")
        .Output("Out", out)
        .Output("Mask", std::string(out) + "_mask")
        .Attr("dropout_prob", static_cast<float>(p))
        .Attr("fix_seed", true)
        .Attr("seed", int64_t{0x123456789})
        .Attr("dropout_implementation", std::string("upscale_in_train"));
  }
  ASSERT_EQ(Run(), "");
  const math::PhiloxKey key = math::PhiloxKeyOf(0x123456789);
  const auto threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));
  const float scale = static_cast<float>(1 / (1 - p));
  const std::vector<double> out = Values("a");
  const uint8_t* mask = Get("a_mask").data_as<uint8_t>();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto block = static_cast<uint32_t>(i / 4);
    const bool want = (math::Philox4x32({block, 0, 0, 0}, key)[i % 4] >> 8) >= threshold;
    ASSERT_EQ(mask[i], want ? 1 : 0) << "element " << i;
    ASSERT_EQ(out[i], want ? static_cast<double>(static_cast<float>(xs[i]) * scale) : 0.0) << "element " << i;
    kept += want;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 1 - p, 4 * std::sqrt(p * (1 - p) / n));
  EXPECT_EQ(Values("b"), out) << "the same seed, the same mask";
}

TEST_F(MathForward, RoundTakesHalvesAwayFromZero) {
  Set<double>("x", {5}, {0.5, -0.5, 1.5, 2.5, -2.5});
  Op("round").Input("X", "x").Output("Out", "out");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("out"), (std::vector<double>{1, -1, 2, 3, -3}));
}

// Sizes from attributes that do not fit int64 are errors, never a wrapped size (UBSan
// would also flag the signed overflow).
TEST_F(MathForward, SizesPastInt64FromAttributesAreErrors) {
  Set<float>("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  Set<float>("img", {1, 1, 2, 2}, {1, 2, 3, 4});
  const int64_t huge = (int64_t{1} << 31) - 1;  // the largest INTS value
  const std::vector<int64_t> three_huge = {huge, huge, huge};
  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[&] { Op("tile").Input("X", "x").Output("Out", "o").Attr("repeat_times", three_huge); },
       "more elements than int64 can count"},
      {[&] {
         Op("expand_v2").Input("X", "x").Output("Out", "o").Attr("shape", std::vector<int64_t>{huge, huge, huge, 2, 3});
       },
       "more elements than int64 can count"},
      {[&] {
         Op("pad").Input("X", "x").Output("Out", "o").Attr("paddings", std::vector<int64_t>{huge, huge, huge, huge});
         Op("pad").Input("X", "o").Output("Out", "o").Attr("paddings", std::vector<int64_t>{huge, huge, huge, huge});
       },
       "more"},
      {[&] {
         Op("bilinear_interp_v2")
             .Input("X", "img")
             .Output("Out", "o")
             .Attr("interp_method", std::string("bilinear"))
             .Attr("scale", std::vector<float>{1e30f, 1e30f});
       },
       "pixels"},
      {[&] { Op("assign_value").Output("Out", "o").Attr("shape", three_huge).Attr("dtype", int32_t{RILL_FP32}); },
       "more elements than int64 can count"},
  };
  for (const auto& [build, want] : cases) {
    pb_ = core::ProgramBuilder();
    build();
    const std::string error = Run();
    EXPECT_NE(error.find(want), std::string::npos) << error;
  }
}

TEST_F(MathForward, MadeTensorErrorsNameTheBadAttribute) {
  Set<int64_t>("zero", {1}, {0});
  Set<int64_t>("one", {1}, {1});
  Op("range").Input("Start", "one").Input("End", "one").Input("Step", "zero").Output("Out", "out");
  EXPECT_NE(Run().find("Step is 0"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Op("assign_value")
      .Output("Out", "out")
      .Attr("shape", std::vector<int64_t>{2, 2})
      .Attr("dtype", int32_t{RILL_FP32})
      .Attr("fp32_values", std::vector<float>{1, 2, 3});
  EXPECT_NE(Run().find("fp32_values holds 3 values, shape [2, 2] takes 4"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Op("assign_value").Output("Out", "out").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", int32_t{RILL_FP64});
  EXPECT_NE(Run().find("dtype 6 is none of BOOL (0), INT32 (2), INT64 (3) and FP32 (5)"), std::string::npos);

  pb_ = core::ProgramBuilder();
  Set<float>("x", {3, 2}, {1, 2, 3, 4, 5, 6});
  Op("fill_constant_batch_size_like")
      .Input("Input", "x")
      .Output("Out", "out")
      .Attr("shape", std::vector<int64_t>{-1, 4})
      .Attr("input_dim_idx", int32_t{2});
  EXPECT_NE(Run().find("input_dim_idx 2 is out of range for rank 2"), std::string::npos);
}

TEST_F(MathForward, AssignValueOfEveryDtypeAndShapeOfAnyTensor) {
  Set<float>("x", {3, 0, 2}, {});
  Op("assign_value")
      .Output("Out", "b")
      .Attr("shape", std::vector<int64_t>{3})
      .Attr("dtype", int32_t{RILL_BOOL})
      .Attr("bool_values", std::vector<int64_t>{1, 0, 1});
  Op("assign_value")
      .Output("Out", "i")
      .Attr("shape", std::vector<int64_t>{2})
      .Attr("dtype", int32_t{RILL_INT32})
      .Attr("int32_values", std::vector<int64_t>{-7, 9});
  Op("shape").Input("Input", "x").Output("Out", "s");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Get("b").dtype(), RILL_BOOL);
  EXPECT_EQ(Values("b"), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(Get("i").dtype(), RILL_INT32);
  EXPECT_EQ(Values("i"), (std::vector<double>{-7, 9}));
  EXPECT_EQ(Get("s").dtype(), RILL_INT32);
  EXPECT_EQ(Values("s"), (std::vector<double>{3, 0, 2}));
}

// ---- concat, split ------------------------------------------------------------------------------------------

TYPED_TEST(Elementwise, ConcatAndSplitInvert) {
  using T = TypeParam;
  this->template Set<T>("a", {2, 1}, {1, 2});
  this->template Set<T>("b", {2, 2}, {3, 4, 5, 6});
  this->Op("concat").Input("X", {"a", "b"}).Output("Out", "ab").Attr("axis", int32_t{1});
  this->Op("split")
      .Input("X", "ab")
      .Output("Out", {"a2", "b2"})
      .Attr("axis", int32_t{-1})
      .Attr("sections", std::vector<int64_t>{1, 2});
  this->Op("split").Input("X", "ab").Output("Out", {"r0", "r1"});  // two equal parts along 0
  ASSERT_EQ(this->Run(), "");
  EXPECT_EQ(this->Values("ab"), (std::vector<double>{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(this->Values("a2"), this->Values("a"));
  EXPECT_EQ(this->Values("b2"), this->Values("b"));
  EXPECT_EQ(this->Values("r1"), (std::vector<double>{2, 5, 6}));
  EXPECT_EQ(this->Dims("r1"), (std::vector<int64_t>{1, 3}));
}

TEST_F(MathForward, ConcatAndSplitBool) {
  Set<bool>("a", {2}, {1, 0});
  Set<bool>("b", {1}, {1});
  Op("concat").Input("X", {"a", "b"}).Output("Out", "ab");
  Op("split").Input("X", "ab").Output("Out", {"p", "q"}).Attr("sections", std::vector<int64_t>{1, 2});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("ab"), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(Get("ab").dtype(), RILL_BOOL);
  EXPECT_EQ(Values("q"), (std::vector<double>{0, 1}));
}

TEST_F(MathForward, SplitThatDoesNotDivide) {
  Set<float>("x", {3}, {1, 2, 3});
  Op("split").Input("X", "x").Output("Out", {"a", "b"});
  EXPECT_NE(Run().find("cannot split dimension 0 of size 3 into 2 equal parts"), std::string::npos);
}

// ---- optimizers ----------------------------------------------------------------------------------------------

TYPED_TEST(FloatOps, Optimizers) {
  using T = TypeParam;
  this->template Set<T>("p", {2}, {1, 2});
  this->template Set<T>("g", {2}, {0.5, -1});
  this->template Set<T>("lr", {1}, {0.1});
  this->Op("sgd").Input("Param", "p").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "p");
  this->template Set<T>("q", {2}, {1, 2});
  this->template Set<T>("v", {2}, {1, 1});
  this->Op("momentum")
      .Input("Param", "q")
      .Input("Grad", "g")
      .Input("Velocity", "v")
      .Input("LearningRate", "lr")
      .Output("ParamOut", "q")
      .Output("VelocityOut", "v")
      .Attr("mu", 0.5f);
  this->template Set<T>("w", {2}, {1, 2});
  this->template Set<T>("m1", {2}, {0, 0});
  this->template Set<T>("m2", {2}, {0, 0});
  this->template Set<T>("b1p", {1}, {0.9});
  this->template Set<T>("b2p", {1}, {0.999});
  this->Op("adam")
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
  ASSERT_EQ(this->Run(), "");
  ExpectNear(this->Values("p"), {0.95, 2.1});
  ExpectNear(this->Values("v"), {1.0, -0.5});
  ExpectNear(this->Values("q"), {0.9, 2.05});
  // First Adam step: m1 = 0.1 g, m2 = 0.001 g^2, lr_t = 0.1 * sqrt(0.001) / 0.1, so the
  // step is lr_t * m1 / sqrt(m2) = 0.1 * sign(g) (up to epsilon).
  ExpectNear(this->Values("w"), {0.9, 2.1}, 1e-4);
  ExpectNear(this->Values("m1"), {0.05, -0.1});
  ExpectNear(this->Values("b1p"), {0.81});
  ExpectNear(this->Values("b2p"), {0.999 * 0.999});
}

TEST_F(MathForward, SgdShapeMismatch) {
  Set<float>("p", {2}, {1, 2});
  Set<float>("g", {3}, {1, 2, 3});
  Set<float>("lr", {1}, {0.1});
  Op("sgd").Input("Param", "p").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "p");
  EXPECT_NE(Run().find("Grad [3] must have Param's shape [2]"), std::string::npos);
}

// A sparse gradient (Fluid's SelectedRows) moves only its rows of the parameter.
TYPED_TEST(FloatOps, SgdWithSelectedRowsGradient) {
  using T = TypeParam;
  this->template Set<T>("p", {4, 2}, {1, 1, 2, 2, 3, 3, 4, 4});
  this->template Set<T>("lr", {1}, {0.5});
  core::SelectedRows* g = this->scope()->Var("g")->GetMutableSelectedRows();
  g->rows = {3, 1, 3};  // a row twice: both contributions apply
  g->height = 4;
  g->value.Allocate(rill::DataTypeOf<T>::value, {3, 2});
  const T values[] = {2, 4, 1, 1, 2, 2};
  std::copy(values, values + 6, g->value.template data_as<T>());
  this->Op("sgd").Input("Param", "p").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "p");
  ASSERT_EQ(this->Run(), "");
  ExpectNear(this->Values("p"), {1, 1, 1.5, 1.5, 3, 3, 2, 1});
  g->rows = {4, 0, 0};
  EXPECT_NE(this->Run().find("Grad row 4 is outside [0, 4)"), std::string::npos);
  g->height = 5;
  const std::string height_error = this->Run();
  EXPECT_NE(height_error.find("Grad is SelectedRows of height 5; Param [4, 2] needs height 4"), std::string::npos)
      << height_error;
}

// clip_by_norm of a sparse gradient clips the dense gradient it stands for: repeated rows
// summed first (into each row once, ascending), the norm theirs.
TYPED_TEST(FloatOps, ClipByNormOfSelectedRowsMergesRepeatedRows) {
  using T = TypeParam;
  core::SelectedRows* g = this->scope()->Var("g")->GetMutableSelectedRows();
  g->rows = {2, 0, 2};
  g->height = 5;
  g->value.Allocate(rill::DataTypeOf<T>::value, {3, 2});
  const T values[] = {1, 2, 0, 4, 2, 2};  // row 2: (3, 4); row 0: (0, 4); norm sqrt(9 + 16 + 16)
  std::copy(values, values + 6, g->value.template data_as<T>());
  this->Op("clip_by_norm").Input("X", "g").Output("Out", "clipped").Attr("max_norm", 1.0f);
  this->Op("clip_by_norm").Input("X", "g").Output("Out", "kept").Attr("max_norm", 100.0f);
  ASSERT_EQ(this->Run(), "");
  core::Variable* clipped = this->scope()->FindVar("clipped");
  ASSERT_TRUE(clipped->is_selected_rows()) << clipped->KindName();
  EXPECT_EQ(clipped->GetMutableSelectedRows()->rows, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(clipped->GetMutableSelectedRows()->height, 5);
  const auto values_of = [](core::Variable* v) {
    const core::Tensor& t = v->GetMutableSelectedRows()->value;
    return std::vector<double>(t.template data_as<T>(), t.template data_as<T>() + t.numel());
  };
  const double norm = std::sqrt(41.0);
  ExpectNear(values_of(clipped), {0, 4 / norm, 3 / norm, 4 / norm});
  ExpectNear(values_of(this->scope()->FindVar("kept")), {0, 4, 3, 4});
}

// momentum, adagrad and rmsprop take SelectedRows gradients as Paddle's sparse kernels do:
// a row the gradient lacks counts as zero, so each matches the op fed the dense gradient.
TEST_F(MathForward, SparseGradientsUpdateAsTheirDenseGradient) {
  const std::vector<double> param = {1, 2, 3, 4, 5, 6, 7, 8}, state = {0.5, 0.5, 1, 1, 2, 2, 0.25, 0.25};
  const std::vector<double> dense = {0, 0, 3, 5, 0, 0, 2, 2};  // rows 1 (1+2, 2+3) and 3
  for (const std::string op : {"momentum", "adagrad", "rmsprop"}) {
    for (bool sparse : {false, true}) {
      const std::string p = op + (sparse ? "_sparse" : "_dense"), g = p + "@GRAD";
      Set<float>(p, {4, 2}, param);
      Set<float>(p + "_a", {4, 2}, state);
      Set<float>(p + "_b", {4, 2}, state);
      Set<float>("lr", {1}, {0.1});
      if (sparse) {
        core::SelectedRows* rows = scope()->Var(g)->GetMutableSelectedRows();
        rows->rows = {3, 1, 1};
        rows->height = 4;
        rows->value.Allocate(RILL_FP32, {3, 2});
        const float values[] = {2, 2, 1, 2, 2, 3};
        std::copy(values, values + 6, rows->value.data_as<float>());
      } else {
        Set<float>(g, {4, 2}, dense);
      }
      core::OpBuilder o = Op(op).Input("Param", p).Input("Grad", g).Input("LearningRate", "lr").Output("ParamOut", p);
      if (op == "momentum") o.Input("Velocity", p + "_a").Output("VelocityOut", p + "_a");
      if (op == "adagrad") o.Input("Moment", p + "_a").Output("MomentOut", p + "_a");
      if (op == "rmsprop") {
        o.Input("MeanSquare", p + "_a")
            .Output("MeanSquareOut", p + "_a")
            .Input("Moment", p + "_b")
            .Output("MomentOut", p + "_b");
      }
    }
  }
  ASSERT_EQ(Run(), "");
  for (const std::string op : {"momentum", "adagrad", "rmsprop"}) {
    EXPECT_EQ(Values(op + "_sparse"), Values(op + "_dense")) << op;
    EXPECT_EQ(Values(op + "_sparse_a"), Values(op + "_dense_a")) << op;
    EXPECT_NE(Values(op + "_sparse"), param) << op;
  }
}

// sum of SelectedRows, as Paddle's MergeAdd: rows one after the other when none repeats,
// else each row once, ascending, its values summed.
TEST_F(MathForward, SumOfSelectedRowsMergesRepeatedRows) {
  auto rows_of = [&](const std::string& name, std::vector<int64_t> rows, std::vector<float> values) {
    core::SelectedRows* sr = scope()->Var(name)->GetMutableSelectedRows();
    sr->rows = std::move(rows);
    sr->height = 6;
    sr->value.Allocate(RILL_FP32, {static_cast<int64_t>(sr->rows.size()), 1});
    std::copy(values.begin(), values.end(), sr->value.data_as<float>());
  };
  rows_of("a", {4, 1}, {40, 10});
  rows_of("b", {2}, {20});
  rows_of("c", {1, 5}, {1, 50});
  rows_of("none", {}, {});
  Op("sum").Input("X", {"a", "b", "none"}).Output("Out", "apart");
  Op("sum").Input("X", {"a", "b", "c"}).Output("Out", "merged");
  ASSERT_EQ(Run(), "");
  const core::SelectedRows* apart = scope()->FindVar("apart")->GetMutableSelectedRows();
  EXPECT_EQ(apart->rows, (std::vector<int64_t>{4, 1, 2}));
  const core::SelectedRows* merged = scope()->FindVar("merged")->GetMutableSelectedRows();
  EXPECT_EQ(merged->rows, (std::vector<int64_t>{1, 2, 4, 5}));
  const float* v = merged->value.data_as<float>();
  EXPECT_EQ(std::vector<float>(v, v + 4), (std::vector<float>{11, 20, 40, 50}));
}

// merge_selected_rows: each row once, ascending, its value rows added in their input order
// from zero (so the bits are a serial sum's), for row numbers of any span (negative, the
// whole int64 range), counts across the grouping's digit sizes and the team's split, and
// Out written over X.
TEST_F(MathForward, MergeSelectedRowsSumsEachRowInInputOrder) {
  std::mt19937_64 rng(8);
  struct Case {
    std::string out;
    int64_t width;
    std::map<int64_t, std::vector<float>> expected;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& name, std::vector<int64_t> rows, int64_t width, bool in_place) {
    std::vector<float> values(rows.size() * static_cast<size_t>(width));
    std::uniform_real_distribution<float> value(-1, 1);
    for (float& v : values) v = value(rng);
    values[0] = -0.0f;  // 0 + -0 is +0: the sum starts from zero, as a serial one does
    Case c{in_place ? name : name + "_merged", width, {}};
    for (size_t i = 0; i < rows.size(); ++i) {
      auto at = c.expected.try_emplace(rows[i], std::vector<float>(static_cast<size_t>(width), 0.0f)).first;
      for (int64_t j = 0; j < width; ++j) at->second[static_cast<size_t>(j)] += values[i * width + j];
    }
    core::SelectedRows* sr = scope()->Var(name)->GetMutableSelectedRows();
    sr->rows = std::move(rows);
    sr->height = std::numeric_limits<int64_t>::max();
    sr->value.Allocate(RILL_FP32, {static_cast<int64_t>(sr->rows.size()), width});
    std::copy(values.begin(), values.end(), sr->value.data_as<float>());
    Op("merge_selected_rows").Input("X", name).Output("Out", c.out);
    cases.push_back(std::move(c));
  };
  std::vector<int64_t> many(65536);
  for (int64_t& r : many) r = static_cast<int64_t>(rng() % 16384);
  add("many", many, 5, false);
  add("many_in_place", many, 5, true);
  std::vector<int64_t> wide = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -1, 0, 1, -1};
  for (int i = 0; i < 3000; ++i) wide.push_back(static_cast<int64_t>(rng() >> (rng() % 64)) * (i % 2 ? -1 : 1));
  add("wide", wide, 2, false);
  add("one", {42}, 3, false);
  add("one_row_repeated", std::vector<int64_t>(100, -7), 1, false);
  add("few", {3, 1, 3, 2, 1}, 4, false);
  ASSERT_EQ(Run(), "");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.out);
    const core::SelectedRows* merged = scope()->FindVar(c.out)->GetMutableSelectedRows();
    ASSERT_EQ(merged->rows.size(), c.expected.size());
    ASSERT_EQ(merged->value.dims().ToVector(),
              (std::vector<int64_t>{static_cast<int64_t>(c.expected.size()), c.width}));
    size_t g = 0;
    for (const auto& [row, sum] : c.expected) {
      ASSERT_EQ(merged->rows[g], row) << g;
      const float* got = merged->value.data_as<float>() + g * static_cast<size_t>(c.width);
      for (size_t j = 0; j < sum.size(); ++j) {
        ASSERT_EQ(std::memcmp(&got[j], &sum[j], sizeof(float)), 0)
            << "row " << row << "[" << j << "]: " << got[j] << " against " << sum[j];
      }
      ++g;
    }
  }
}

// A table held as SelectedRows (part of it): lookup_table finds each id among its rows, and
// sgd updates the rows a SelectedRows gradient names.
TEST_F(MathForward, LookupAndSgdOnATableHeldAsSelectedRows) {
  core::SelectedRows* w = scope()->Var("w")->GetMutableSelectedRows();
  w->rows = {7, 2, 9};
  w->height = 10;
  w->value.Allocate(RILL_FP32, {3, 2});
  const float values[] = {70, 71, 20, 21, 90, 91};
  std::copy(values, values + 6, w->value.data_as<float>());
  core::SelectedRows* g = scope()->Var("g")->GetMutableSelectedRows();
  g->rows = {9};
  g->height = 10;
  g->value.Allocate(RILL_FP32, {1, 2});
  g->value.data_as<float>()[0] = 10;
  g->value.data_as<float>()[1] = 20;
  Set<int64_t>("ids", {3}, {9, 7, 9});
  Set<float>("lr", {1}, {0.5});
  Op("lookup_table_v2").Input("W", "w").Input("Ids", "ids").Output("Out", "out");
  Op("sgd").Input("Param", "w").Input("Grad", "g").Input("LearningRate", "lr").Output("ParamOut", "w");
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Values("out"), (std::vector<double>{90, 91, 70, 71, 90, 91}));
  const float* updated = w->value.data_as<float>();
  EXPECT_EQ(std::vector<float>(updated, updated + 6), (std::vector<float>{70, 71, 20, 21, 85, 81}));
  Set<int64_t>("ids", {1}, {3});
  const std::string error = Run();
  EXPECT_NE(error.find("Ids names row 3, which W's SelectedRows do not hold"), std::string::npos) << error;
}

// The new LoD from target_lod, from Y's values, from Y's LoD, and appended below X's own.
TEST_F(MathForward, LodResetSetsTheLoDFromEachSource) {
  Set<float>("x", {4, 1}, {1, 2, 3, 4});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 4}};
  Op("lod_reset").Input("X", "x").Output("Out", "by_attr").Attr("target_lod", std::vector<int64_t>{0, 2, 4});
  Set<int32_t>("offsets", {1, 3}, {0, 3, 4});
  Op("lod_reset").Input("X", "x").Input("Y", "offsets").Output("Out", "by_values");
  Set<float>("y", {4, 1}, {0, 0, 0, 0});
  scope()->FindVar("y")->GetMutableTensor()->mutable_lod() = {{0, 1, 2}, {0, 0, 4}};
  Op("lod_reset").Input("X", "x").Input("Y", "y").Output("Out", "by_lod");
  // X's own LoD is the upper level: its 2 sequences are the ones the appended level makes.
  Set<float>("x2", {4, 1}, {1, 2, 3, 4});
  scope()->FindVar("x2")->GetMutableTensor()->mutable_lod() = {{0, 1, 2}};
  Op("lod_reset")
      .Input("X", "x2")
      .Output("Out", "appended")
      .Attr("target_lod", std::vector<int64_t>{0, 3, 4})
      .Attr("append", true);
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("by_attr"), {1, 2, 3, 4});
  EXPECT_EQ(Get("by_attr").lod(), (core::LoD{{0, 2, 4}}));
  EXPECT_EQ(Get("by_values").lod(), (core::LoD{{0, 3, 4}}));
  EXPECT_EQ(Get("by_lod").lod(), (core::LoD{{0, 1, 2}, {0, 0, 4}}));
  EXPECT_EQ(Get("appended").lod(), (core::LoD{{0, 1, 2}, {0, 3, 4}}));
}

TEST_F(MathForward, LodResetRefusesALoDThatDoesNotPackX) {
  Set<float>("x", {4, 1}, {1, 2, 3, 4});
  Op("lod_reset").Input("X", "x").Output("Out", "out").Attr("target_lod", std::vector<int64_t>{0, 3, 2, 4});
  EXPECT_NE(Run().find("the new LoD (attribute target_lod) {0, 3, 2, 4} must rise from 0 to X's rows (4)"),
            std::string::npos);
}

TEST_F(MathForward, LodAppendRefusesALevelThatDoesNotMatchXsSequences) {
  Set<float>("x", {4, 1}, {1, 2, 3, 4});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 1, 3}};
  Op("lod_reset")
      .Input("X", "x")
      .Output("Out", "out")
      .Attr("target_lod", std::vector<int64_t>{0, 4})
      .Attr("append", true);
  EXPECT_NE(Run().find("appending a level of 1 sequences below X's LoD, whose last level ends at 3"),
            std::string::npos);
}

// Tokens 2 and 5 erased: the second sequence loses all it had; the upper level stays.
TEST_F(MathForward, SequenceEraseDropsTheTokensAndRecountsTheLoD) {
  Set<int64_t>("x", {6, 1}, {1, 2, 5, 2, 3, 5});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}, {0, 2, 4, 6}};
  Op("sequence_erase").Input("X", "x").Output("Out", "out").Attr("tokens", std::vector<int64_t>{5, 2});
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {1, 3});
  EXPECT_EQ(Dims("out"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 2, 3}, {0, 1, 1, 2}}));
}

// Long sequences (the instruction set's vector loops, a register of ids at a time), of
// int32 and int64 ids, with lists of tokens of each length the vector loops take (1, 2, 3
// and 4 of them, up to 8) and one longer than they take: each matches erasing id by id. A sequence whose tail is all tokens, and one
// that is nothing else, end where they should.
TEST_F(MathForward, SequenceEraseOfLongSequencesMatchesErasingIdByIdForEveryListAndType) {
  const std::vector<uint64_t> offsets = {0, 100, 137, 187};
  std::vector<double> ids;
  for (int i = 0; i < 187; ++i) ids.push_back(static_cast<double>((i * 7919) % 23));
  for (int i = 127; i < 137; ++i) ids[static_cast<size_t>(i)] = 4;  // the second sequence's tail
  for (int i = 137; i < 187; ++i) ids[static_cast<size_t>(i)] = 9;  // all of the third
  const std::vector<std::vector<int64_t>> lists = {
      {9}, {4, 9}, {1, 4, 9}, {1, 4, 9, 11}, {1, 4, 9, 11, 12, 13}, {1, 4, 9, 11, 12, 13, 14, 15, 16, 17}};
  for (const char* type : {"int32", "int64"}) {
    for (const auto& tokens : lists) {
      SCOPED_TRACE(std::string(type) + ", " + std::to_string(tokens.size()) + " tokens");
      if (std::string(type) == "int32") {
        Set<int32_t>("x", {187, 1}, ids);
      } else {
        Set<int64_t>("x", {187, 1}, ids);
      }
      scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {offsets};
      Op("sequence_erase").Input("X", "x").Output("Out", "out").Attr("tokens", tokens);
      ASSERT_EQ(Run(), "");
      std::vector<double> kept;
      std::vector<uint64_t> level = {0};
      for (size_t s = 0; s + 1 < offsets.size(); ++s) {
        for (uint64_t r = offsets[s]; r < offsets[s + 1]; ++r) {
          const auto id = static_cast<int64_t>(ids[r]);
          if (std::find(tokens.begin(), tokens.end(), id) == tokens.end()) kept.push_back(ids[r]);
        }
        level.push_back(kept.size());
      }
      EXPECT_EQ(Values("out"), kept);
      EXPECT_EQ(Get("out").lod(), (core::LoD{level}));
      EXPECT_EQ(level[3], level[2]);  // the third sequence was all tokens
    }
  }
}

// Sequence s of Ids adds into row s of X; a repeated id adds twice; a row past the last
// sequence is X's.
TEST_F(MathForward, SequenceScatterAddsEachSequenceIntoItsRow) {
  Set<float>("x", {3, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3});
  Set<int64_t>("ids", {3, 1}, {2, 2, 0});
  scope()->FindVar("ids")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}};
  Set<float>("updates", {3, 1}, {10, 20, 5});
  Op("sequence_scatter").Input("X", "x").Input("Ids", "ids").Input("Updates", "updates").Output("Out", "out");
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {1, 1, 31, 7, 2, 2, 3, 3, 3});
  Set<int64_t>("far", {1, 1}, {3});
  scope()->FindVar("far")->GetMutableTensor()->mutable_lod() = {{0, 1}};
  Set<float>("one", {1, 1}, {1});
  Op("sequence_scatter").Input("X", "x").Input("Ids", "far").Input("Updates", "one").Output("Out", "bad");
  EXPECT_NE(Run().find("Ids[0] = 3 is outside X's row (3 elements)"), std::string::npos);
}

// Two 1x2x2 images, 2x2 windows by 1 with the bottom and right padded by one: 4 windows each.
TEST_F(MathForward, Im2SequenceMakesEachImagesWindowsASequence) {
  Set<float>("x", {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Op("im2sequence")
      .Input("X", "x")
      .Output("Out", "out")
      .Attr("kernels", std::vector<int64_t>{2, 2})
      .Attr("paddings", std::vector<int64_t>{0, 0, 1, 1});
  ASSERT_EQ(Run(), "");
  EXPECT_EQ(Dims("out"), (std::vector<int64_t>{8, 4}));
  ExpectNear(Values("out"), {1, 2, 3, 4, 2, 0, 4, 0, 3, 4, 0, 0, 4, 0, 0, 0,  //
                             5, 6, 7, 8, 6, 0, 8, 0, 7, 8, 0, 0, 8, 0, 0, 0});
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 4, 8}}));
}

// Each row plus the next, scaled by the filter's rows, never across a sequence's end;
// without LoD each batch entry is a sequence.
TEST_F(MathForward, RowConvLooksAheadWithinEachSequence) {
  Set<float>("x", {3, 1}, {1, 2, 3});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}};
  Set<float>("w", {2, 1}, {1, 10});
  Op("row_conv").Input("X", "x").Input("Filter", "w").Output("Out", "out");
  Set<float>("batch", {1, 3, 1}, {1, 2, 3});
  Op("row_conv").Input("X", "batch").Input("Filter", "w").Output("Out", "batched");
  ASSERT_EQ(Run(), "");
  ExpectNear(Values("out"), {21, 2, 3});
  EXPECT_EQ(Get("out").lod(), (core::LoD{{0, 2, 3}}));
  ExpectNear(Values("batched"), {21, 32, 3});
}

// row_conv over rows wider than a vector (37: whole vectors and a tail), a lookahead of 4
// over sequences shorter and longer than it, both element types: each element the sum of
// its products in k's order, the bits of that sum written out (every instruction set keeps
// the products and sums apart).
TYPED_TEST(FloatOps, RowConvSumsItsLookaheadInOrder) {
  using T = TypeParam;
  const int64_t d = 37, context = 4;
  const std::vector<uint64_t> offsets = {0, 1, 3, 9, 20};
  const int64_t rows = static_cast<int64_t>(offsets.back());
  std::mt19937 rng(12);
  std::uniform_real_distribution<double> value(-1, 1);
  std::vector<double> x(static_cast<size_t>(rows * d)), w(static_cast<size_t>(context * d));
  for (double& v : x) v = static_cast<double>(static_cast<T>(value(rng)));
  for (double& v : w) v = static_cast<double>(static_cast<T>(value(rng)));
  this->template Set<T>("x", {rows, d}, x);
  this->scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {offsets};
  this->template Set<T>("w", {context, d}, w);
  this->Op("row_conv").Input("X", "x").Input("Filter", "w").Output("Out", "out");
  ASSERT_EQ(this->Run(), "");
  const std::vector<double> got = this->Values("out");
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    for (auto t = static_cast<int64_t>(offsets[s]); t < static_cast<int64_t>(offsets[s + 1]); ++t) {
      for (int64_t j = 0; j < d; ++j) {
        T sum = static_cast<T>(x[t * d + j]) * static_cast<T>(w[j]);
        for (int64_t k = 1; k < context && t + k < static_cast<int64_t>(offsets[s + 1]); ++k) {
          sum += static_cast<T>(x[(t + k) * d + j]) * static_cast<T>(w[k * d + j]);
        }
        ASSERT_EQ(static_cast<T>(got[t * d + j]), sum) << "row " << t << ", column " << j;
      }
    }
  }
}

// ftrl's dense update (Paddle's formula, lr_power -0.5 by roots and -0.6 by powers) over a
// parameter wider than a vector, against the formula in long double: within a few ulps
// (an instruction set may fuse a product into a sum).
TYPED_TEST(FloatOps, FtrlFollowsPaddlesFormula) {
  using T = TypeParam;
  const int64_t n = 111;
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> value(-1, 1), positive(0.1, 1);
  std::vector<double> param(n), grad(n), squared(n), linear(n);
  for (int64_t i = 0; i < n; ++i) {
    param[i] = static_cast<T>(value(rng));
    grad[i] = static_cast<T>(value(rng));
    squared[i] = static_cast<T>(positive(rng));
    linear[i] = static_cast<T>(value(rng));
  }
  const double lr = 0.02, l1 = 0.1, l2 = 0.2;
  for (const double power : {-0.5, -0.6}) {
    SCOPED_TRACE(power);
    const std::string tag = std::to_string(power);
    this->template Set<T>("p" + tag, {n}, param);
    this->template Set<T>("g" + tag, {n}, grad);
    this->template Set<T>("sq" + tag, {n}, squared);
    this->template Set<T>("lin" + tag, {n}, linear);
    this->template Set<T>("lr" + tag, {1}, {lr});
    this->Op("ftrl")
        .Input("Param", "p" + tag)
        .Input("Grad", "g" + tag)
        .Input("SquaredAccumulator", "sq" + tag)
        .Input("LinearAccumulator", "lin" + tag)
        .Input("LearningRate", "lr" + tag)
        .Output("ParamOut", "p" + tag)
        .Output("SquaredAccumOut", "sq" + tag)
        .Output("LinearAccumOut", "lin" + tag)
        .Attr("l1", static_cast<float>(l1))
        .Attr("l2", static_cast<float>(l2))
        .Attr("lr_power", static_cast<float>(power));
    ASSERT_EQ(this->Run(), "");
    this->pb_ = core::ProgramBuilder();
    const std::vector<double> got_p = this->Values("p" + tag), got_sq = this->Values("sq" + tag),
                              got_lin = this->Values("lin" + tag);
    using Wide = long double;
    const Wide l1e = static_cast<Wide>(static_cast<float>(l1)) + 1e-10L;
    const Wide l2e = static_cast<Wide>(static_cast<float>(l2)) + 1e-10L;
    const Wide lre = static_cast<T>(lr);
    const Wide exponent = -static_cast<Wide>(static_cast<T>(static_cast<float>(power)));  // lr_power, a float
    const auto rate = [&](Wide a) { return power == -0.5 ? std::sqrt(a) : std::pow(a, exponent); };
    for (int64_t i = 0; i < n; ++i) {
      const Wide next = Wide(squared[i]) + Wide(grad[i]) * Wide(grad[i]);
      const Wide lin = Wide(linear[i]) + Wide(grad[i]) - (rate(next) - rate(Wide(squared[i]))) / lre * Wide(param[i]);
      const Wide p = std::fabs(lin) > l1e ? (l1e * (lin > 0 ? 1 : -1) - lin) / (rate(next) / lre + 2 * l2e) : 0;
      const double tol = 64 * std::numeric_limits<T>::epsilon();
      EXPECT_NEAR(got_sq[i], static_cast<double>(next), tol * static_cast<double>(std::fabs(next))) << i;
      EXPECT_NEAR(got_lin[i], static_cast<double>(lin), tol * (1 + static_cast<double>(std::fabs(lin)))) << i;
      EXPECT_NEAR(got_p[i], static_cast<double>(p), tol * (1 + static_cast<double>(std::fabs(p)))) << i;
    }
  }
}

// With identity activations a recurrence is arithmetic to follow by hand. The LSTM (hidden
// size 1, gates candidate, input, forget, output): step 0 from zero states, step 1 from
// step 0's h through the weight.
TEST_F(MathForward, LstmCarriesItsStatesAlongASequence) {
  Set<float>("x", {2, 4}, {1, 0.5f, 0.2f, 2, 0, 0, 0, 0});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2}};
  Set<float>("w", {1, 4}, {0.5f, 0.5f, 0.5f, 0.5f});
  Set<float>("bias", {1, 4}, {0, 0, 0, 0});
  Op("lstm")
      .Input("Input", "x")
      .Input("Weight", "w")
      .Input("Bias", "bias")
      .Output("Hidden", "hidden")
      .Output("Cell", "cell")
      .Output("BatchGate", "batch_gate")
      .Output("BatchCellPreAct", "batch_cell_pre_act")
      .Attr("use_peepholes", false)
      .Attr("gate_activation", std::string("identity"))
      .Attr("cell_activation", std::string("identity"))
      .Attr("candidate_activation", std::string("identity"));
  ASSERT_EQ(Run(), "");
  // c0 = i cand = 0.5, h0 = o c0 = 1; every gate of step 1 is 0.5 h0 = 0.5: c1 = 0.5, h1 = 0.25.
  ExpectNear(Values("cell"), {0.5f, 0.5f});
  ExpectNear(Values("hidden"), {1, 0.25f});
  EXPECT_EQ(Get("hidden").lod(), (core::LoD{{0, 2}}));
}

// The GRU (hidden size 1, gates update, reset, candidate; W_ur = [0.5, 1], W_c = [2]) over
// sequences of lengths 2 and 1: Hidden in the input's row order, BatchHidden step-major.
TEST_F(MathForward, GruRunsEachSequenceStepMajor) {
  Set<float>("x", {3, 3}, {0.2f, 0.3f, 0.4f, 0.1f, 0.5f, -0.2f, 0.6f, 0, 1});
  scope()->FindVar("x")->GetMutableTensor()->mutable_lod() = {{0, 2, 3}};
  Set<float>("w", {1, 3}, {0.5f, 1, 2});
  Op("gru")
      .Input("Input", "x")
      .Input("Weight", "w")
      .Output("Hidden", "hidden")
      .Output("BatchGate", "batch_gate")
      .Output("BatchResetHiddenPrev", "batch_reset_hidden_prev")
      .Output("BatchHidden", "batch_hidden")
      .Attr("gate_activation", std::string("identity"))
      .Attr("activation", std::string("identity"));
  ASSERT_EQ(Run(), "");
  // Step 0: h = u c: 0.2 * 0.4 and 0.6 * 1. Step 1 of the first sequence, h_prev = 0.08:
  // u = 0.14, r = 0.58, c = -0.2 + 2 (0.58 * 0.08) = -0.1072, h = u c + (1 - u) h_prev.
  ExpectNear(Values("hidden"), {0.08f, 0.053792f, 0.6f});
  ExpectNear(Values("batch_hidden"), {0.08f, 0.6f, 0.053792f});
  EXPECT_EQ(Get("hidden").lod(), (core::LoD{{0, 2, 3}}));
}

}  // namespace
}  // namespace rill::test
