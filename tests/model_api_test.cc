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

}  // namespace
}  // namespace rill::core
