// The C++ API for inference models (core/api/model.h): a model as Paddle saves it loads,
// runs with its feeds and gives its fetch targets; bad feeds are errors naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/api/model.h"
#include "core/errors.h"
#include "core/io/lod_tensor_file.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "core/runtime/scope.h"
#include "test_util.h"

namespace rill::core {
namespace {

Tensor Fp32(std::vector<int64_t> dims, std::vector<float> values) {
  Tensor t;
  t.Allocate(RILL_FP32, dims);
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

// out = softmax(x w) scaled by 2, in a directory with __model__ and one file per parameter.
std::string WriteModel() {
  const std::string dir = test::TempPath("model_api");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto program = ParseProgramText(R"(blocks { idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 } } } need_check_feed: true }
    vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 dims: 2 } } } persistable: true }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "x" } attrs { name: "col" type: INT i: 0 } }
    ops { type: "mul" inputs { parameter: "X" arguments: "x" } inputs { parameter: "Y" arguments: "w" } outputs { parameter: "Out" arguments: "xw" } }
    ops { type: "softmax" inputs { parameter: "X" arguments: "xw" } outputs { parameter: "Out" arguments: "p" } }
    ops { type: "scale" inputs { parameter: "ScaleTensor" } inputs { parameter: "X" arguments: "p" } outputs { parameter: "Out" arguments: "out" }
          attrs { name: "scale" type: FLOAT f: 2 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "out" } outputs { parameter: "Out" arguments: "fetch" } attrs { name: "col" type: INT i: 0 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "xw" } outputs { parameter: "Out" arguments: "fetch" } attrs { name: "col" type: INT i: 1 } } })");
  SaveProgram(program, dir + "/__model__", ProgramFormat::kBinary);
  std::ofstream w(dir + "/w", std::ios::binary);
  WriteLodTensor(w, Fp32({2, 2}, {1, 0, 0, 1}), false, dir + "/w");  // the identity
  return dir;
}

TEST(ModelApi, LoadsRunsAndFetchesInColOrder) {
  auto model = Model::Load(test::ShippedRegistry(), WriteModel());
  ASSERT_EQ(model->feeds().size(), 1u);
  EXPECT_EQ(model->feeds()[0].var, "x");
  ASSERT_EQ(model->fetches().size(), 2u);
  EXPECT_EQ(model->fetches()[1].var, "xw");
  // softmax([0, 0]) = [0.5, 0.5]; softmax([ln 3, 0]) = [0.75, 0.25]; times 2.
  auto out = model->Run({{"x", Fp32({2, 2}, {0, 0, std::log(3.0f), 0})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ValuesToString(), "1 1 1.5 0.5");
  EXPECT_EQ(out[1].ValuesToString(), "0 0 1.098612 0");
  // A second run with another batch size; the first run's results stay the caller's.
  auto again = model->Run({{"x", Fp32({1, 2}, {0, 0})}});
  EXPECT_EQ(again[0].ValuesToString(), "1 1");
  EXPECT_EQ(out[0].ValuesToString(), "1 1 1.5 0.5");
}

TEST(ModelApi, BadFeedsAndPathsAreErrorsNamingThem) {
  auto model = Model::Load(test::ShippedRegistry(), WriteModel());
  const auto expect_error = [&](std::vector<std::pair<std::string, Tensor>> feeds, const std::string& needle) {
    try {
      model->Run(std::move(feeds));
      ADD_FAILURE() << "no error; wanted: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "feed 'x' (fp32 [-1, 2]) is not given");
  expect_error({{"y", Fp32({1, 2}, {0, 0})}}, "feed 'y' is not one of the program's feeds (x)");
  expect_error({{"x", Fp32({1, 3}, {0, 0, 0})}},
               "feed 'x': the program declares fp32 [-1, 2], the value fed is fp32 [1, 3]");
  expect_error({{"x", Fp32({1, 2}, {0, 0})}, {"x", Fp32({1, 2}, {0, 0})}}, "feed 'x' is given twice");
  try {
    Model::Load(test::ShippedRegistry(), test::TempPath("no_such_model"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not an inference model: no '__model__' or PREFIX.pdmodel in it"),
              std::string::npos)
        << e.what();
  }
}

// Feed and fetch move no bytes: the value fed reaches its variable, and a fetched value
// leaves it, as views of the same memory, LoD included. A later run that writes the
// variable gives it new memory, so a value fetched earlier keeps what it was.
TEST(ModelApi, FeedAndFetchShareMemoryAndKeepTheLoD) {
  const auto program = Program::FromProto(ParseProgramText(R"(blocks { idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 } } } }
    vars { name: "y" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 } } } persistable: true }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "x" } attrs { name: "col" type: INT i: 0 } }
    ops { type: "scale" inputs { parameter: "ScaleTensor" } inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" }
          attrs { name: "scale" type: FLOAT f: 2 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "fetch" } attrs { name: "col" type: INT i: 0 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "y" } outputs { parameter: "Out" arguments: "fetch" } attrs { name: "col" type: INT i: 1 } } })"));
  Session session(test::ShippedRegistry(), program);
  const auto scope = Scope::NewRoot();
  Tensor x = Fp32({3, 2}, {1, 2, 3, 4, 5, 6});
  x.mutable_lod() = {{0, 1, 3}};
  const auto first = session.Run(scope, {{"x", x}}, ModelOptions::OneWorker());
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].data(), x.data()) << "fed and fetched without a copy";
  EXPECT_EQ(first[0].lod(), (LoD{{0, 1, 3}}));
  EXPECT_EQ(first[1].ValuesToString(), "2 4 6 8 10 12");
  const Tensor* y = scope->FindVar("y")->GetTensor();
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(first[1].data(), y->data()) << "fetched without a copy";
  // The same shape again: y's kernel would reuse its memory, but the fetched value shares it.
  const auto second = session.Run(scope, {{"x", Fp32({3, 2}, {0, 0, 0, 0, 0, 1})}}, ModelOptions::OneWorker());
  EXPECT_EQ(second[1].ValuesToString(), "0 0 0 0 0 2");
  EXPECT_EQ(first[1].ValuesToString(), "2 4 6 8 10 12");
  EXPECT_TRUE(second[0].lod().empty()) << "the second feed has no LoD";
}

// The feed and fetch lists are tensor arrays; a list variable holding anything else is
// refused by name, by the host's feeding and by the ops.
TEST(ModelApi, AListVariableHoldingATensorIsRefusedByName) {
  const auto scope = Scope::NewRoot();
  *scope->Var("feed")->GetMutableTensor() = Fp32({1}, {0});
  try {
    SetFeedColumn(*scope->Var("feed"), 0, Fp32({1}, {1}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds fp32[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a feed/fetch list"), std::string::npos) << e.what();
  }
  auto model = Model::Load(test::ShippedRegistry(), WriteModel());
  *model->scope().Var("fetch")->GetMutableTensor() = Fp32({1}, {0});
  try {
    model->Run({{"x", Fp32({1, 2}, {0, 0})}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the fetch list variable 'fetch' holds fp32[1]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rill::core
