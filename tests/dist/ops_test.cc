// The dist_grpc ops in one process: a pserver program and a trainer program run by two
// executors over loopback, here with a sparse (SelectedRows) gradient, which no shipped op
// produces yet, so it is made in the trainer's scope by hand.
#include <gtest/gtest.h>

#include <future>

#include "core/program/builder.h"
#include "core/runtime/executor.h"
#include "rill/abi.h"
#include "test_util.h"

namespace rill::test {
namespace {

using core::ProgramBuilder;

std::vector<float> Floats(const core::Scope& scope, const std::string& name) {
  const core::Tensor* t = scope.FindVar(name)->GetTensor();
  return std::vector<float>(t->data_as<float>(), t->data_as<float>() + t->numel());
}

TEST(DistOps, ASparseGradientUpdatesOnlyItsRowsOnThePserver) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  ProgramBuilder ps;
  auto& optimize = ps.NewBlock(0);
  optimize.Op("fill_constant").Output("Out", "lr").Attr("shape", std::vector<int64_t>{1}).Attr("value", 0.5f);
  optimize.Op("sgd").Input("Param", "w").Input("Grad", "w@GRAD").Input("LearningRate", "lr").Output("ParamOut", "w");
  ps.block(0).Op("listen_and_serv").Attr("endpoint", endpoint).BlockAttr("OptimizeBlock", optimize.idx())
      .Attr("ParamList", std::vector<std::string>{"w"}).Attr("GradList", std::vector<std::string>{"w@GRAD"})
      .Attr("Fanin", int32_t{1}).Attr("deadline_ms", int32_t{10000});
  auto ps_scope = core::Scope::NewRoot();
  core::Tensor* w = ps_scope->Var("w")->GetMutableTensor();
  w->Allocate(RILL_FP32, {4, 2});
  for (int i = 0; i < 8; ++i) w->data_as<float>()[i] = static_cast<float>(i / 2 + 1);  // rows 1, 2, 3, 4
  core::Executor pserver(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(ps.Build()));
  auto serving = std::async(std::launch::async, [&] { pserver.Run(0, ps_scope); });

  ProgramBuilder tr;
  tr.block(0).Op("send").Input("X", "w@GRAD").Output("Out", "w").Attr("epmap", std::vector<std::string>{endpoint})
      .Attr("deadline_ms", int32_t{10000});
  auto tr_scope = core::Scope::NewRoot();
  {
    core::Executor trainer(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(tr.Build()));
    core::SelectedRows* g = tr_scope->Var("w@GRAD")->GetMutableSelectedRows();
    g->rows = {3, 1, 3};
    g->height = 4;
    g->value.Allocate(RILL_FP32, {3, 2});
    const float values[] = {2, 4, 1, 1, 2, 2};
    std::copy(values, values + 6, g->value.data_as<float>());
    trainer.Run(0, tr_scope);
    // Only rows 1 and 3 moved: w[1] -= 0.5 * 1, w[3] -= 0.5 * (2 + 2, 4 + 2).
    EXPECT_EQ(Floats(*tr_scope, "w"), (std::vector<float>{1, 1, 1.5f, 1.5f, 3, 3, 2, 1}));

    // Next iteration, a dense gradient: the pserver's w@GRAD turns back into a tensor.
    tr_scope->Var("w@GRAD")->Clear();
    core::Tensor* dense = tr_scope->Var("w@GRAD")->GetMutableTensor();
    dense->Allocate(RILL_FP32, {4, 2});
    for (int i = 0; i < 8; ++i) dense->data_as<float>()[i] = 2;
    trainer.Run(0, tr_scope);
    EXPECT_EQ(Floats(*tr_scope, "w"), (std::vector<float>{0, 0, 0.5f, 0.5f, 2, 2, 1, 0}));
  }  // the trainer's run ends: its pserver is told, and ends too
  ASSERT_EQ(serving.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  serving.get();
  EXPECT_EQ(Floats(*ps_scope, "w"), (std::vector<float>{0, 0, 0.5f, 0.5f, 2, 2, 1, 0}));
}

}  // namespace
}  // namespace rill::test
