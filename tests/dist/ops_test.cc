// The dist_grpc ops in one process: a pserver program and a trainer program run by two
// executors over loopback, with sparse (SelectedRows) gradients made by hand and by
// lookup_table's sparse path.
#include <gtest/gtest.h>

#include <future>

#include "core/program/backward.h"
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

// A pserver for one trainer, serving w [rows, 2] (rows 1, 2, 3, ...) with
// w -= 0.5 * w@GRAD, run by its own executor on another thread.
class Pserver {
 public:
  explicit Pserver(int64_t rows = 4)
      : endpoint_("127.0.0.1:" + std::to_string(FreeLoopbackPort())), scope_(core::Scope::NewRoot()) {
    ProgramBuilder ps;
    auto& optimize = ps.NewBlock(0);
    optimize.Op("fill_constant").Output("Out", "lr").Attr("shape", std::vector<int64_t>{1}).Attr("value", 0.5f);
    optimize.Op("sgd").Input("Param", "w").Input("Grad", "w@GRAD").Input("LearningRate", "lr").Output("ParamOut", "w");
    ps.block(0)
        .Op("listen_and_serv")
        .Attr("endpoint", endpoint_)
        .BlockAttr("OptimizeBlock", optimize.idx())
        .Attr("ParamList", std::vector<std::string>{"w"})
        .Attr("GradList", std::vector<std::string>{"w@GRAD"})
        .Attr("Fanin", int32_t{1})
        .Attr("deadline_ms", int32_t{10000});
    core::Tensor* w = scope_->Var("w")->GetMutableTensor();
    w->Allocate(RILL_FP32, {rows, 2});
    for (int64_t i = 0; i < rows * 2; ++i) w->data_as<float>()[i] = static_cast<float>(i / 2 + 1);
    executor_ = std::make_unique<core::Executor>(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(ps.Build()));
    serving_ = std::async(std::launch::async, [this] { executor_->Run(0, scope_); });
  }
  const std::string& endpoint() const { return endpoint_; }
  // Waits for the pserver to end (its trainer completed); its w.
  std::vector<float> Finish() {
    EXPECT_EQ(serving_.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    serving_.get();
    return Floats(*scope_, "w");
  }

 private:
  std::string endpoint_;
  std::shared_ptr<core::Scope> scope_;
  std::unique_ptr<core::Executor> executor_;
  std::future<void> serving_;
};

void SetDense(core::Scope& scope, const std::string& name, float value, int64_t rows = 4) {
  scope.Var(name)->Clear();
  core::Tensor* t = scope.Var(name)->GetMutableTensor();
  t->Allocate(RILL_FP32, {rows, 2});
  for (int64_t i = 0; i < rows * 2; ++i) t->data_as<float>()[i] = value;
}

TEST(DistOps, ASparseGradientUpdatesOnlyItsRowsOnThePserver) {
  Pserver ps;
  const std::string endpoint = ps.endpoint();

  ProgramBuilder tr;
  tr.block(0)
      .Op("send")
      .Input("X", "w@GRAD")
      .Output("Out", "w")
      .Attr("epmap", std::vector<std::string>{endpoint})
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
    SetDense(*tr_scope, "w@GRAD", 2);
    trainer.Run(0, tr_scope);
    EXPECT_EQ(Floats(*tr_scope, "w"), (std::vector<float>{0, 0, 0.5f, 0.5f, 2, 2, 1, 0}));
  }  // the trainer's run ends: its pserver is told, and ends too
  EXPECT_EQ(ps.Finish(), (std::vector<float>{0, 0, 0.5f, 0.5f, 2, 2, 1, 0}));
}

// Embedding training through the pserver: lookup_table_v2 with is_sparse makes
// w's gradient SelectedRows of the looked-up rows, which is what the trainer sends (3 rows
// of the table's 4), and the pserver's sparse sgd leaves w as dense local training does.
TEST(DistOps, AnEmbeddingTrainsThroughThePserverOnItsLookedUpRowsAlone) {
  // loss = sum(lookup(w, ids)^2); w [4, 2] starts as the pserver's (rows 1, 2, 3, 4).
  const auto program = [](bool sparse) {
    ProgramBuilder pb;
    pb.block(0).Var("w", RILL_FP32, {4, 2}, true);
    pb.block(0)
        .Op("lookup_table_v2")
        .Input("W", "w")
        .Input("Ids", "ids")
        .Output("Out", "emb")
        .Attr("is_sparse", sparse);
    pb.block(0).Op("square").Input("X", "emb").Output("Out", "sq");
    pb.block(0).Op("reduce_sum").Input("X", "sq").Output("Out", "loss").Attr("reduce_all", true);
    proto::ProgramDesc p = pb.Build();
    core::AppendBackward(p, ShippedRegistry(), "loss", {"w"});
    return p;
  };
  const auto start = [](core::Scope& scope) {
    core::Tensor* w = scope.Var("w")->GetMutableTensor();
    w->Allocate(RILL_FP32, {4, 2});
    for (int64_t i = 0; i < 8; ++i) w->data_as<float>()[i] = static_cast<float>(i / 2 + 1);
    core::Tensor* ids = scope.Var("ids")->GetMutableTensor();
    ids->Allocate(RILL_INT64, {3});
    const int64_t v[] = {3, 1, 3};
    std::copy(v, v + 3, ids->data_as<int64_t>());
  };
  // Dense, in one process: sgd with the pserver's learning rate.
  proto::ProgramDesc dense = program(false);
  core::AppendSgd(dense, {{"w", "w@GRAD"}}, 0.5f);
  auto local = core::Scope::NewRoot();
  start(*local);
  core::Executor local_run(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(dense));
  for (int step = 0; step < 2; ++step) local_run.Run(0, local);

  Pserver ps;
  proto::ProgramDesc trainer = program(true);
  core::BlockBuilder(trainer.mutable_blocks(0))
      .Op("send")
      .Input("X", "w@GRAD")
      .Output("Out", "w")
      .Attr("epmap", std::vector<std::string>{ps.endpoint()})
      .Attr("deadline_ms", int32_t{10000});
  auto scope = core::Scope::NewRoot();
  start(*scope);
  {
    core::Executor run(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(trainer));
    for (int step = 0; step < 2; ++step) {
      run.Run(0, scope);
      core::Variable* grad = scope->FindVar("w@GRAD");
      ASSERT_TRUE(grad->is_selected_rows()) << "the gradient sent is SelectedRows: " << grad->KindName();
      const core::SelectedRows* sent = grad->GetMutableSelectedRows();
      EXPECT_EQ(sent->rows, (std::vector<int64_t>{3, 1, 3})) << "the looked-up rows alone, not the table's 4";
      EXPECT_EQ(sent->value.dims().ToVector(), (std::vector<int64_t>{3, 2}));
    }
  }
  EXPECT_EQ(Floats(*scope, "w"), Floats(*local, "w"));
  EXPECT_EQ(ps.Finish(), Floats(*local, "w"));
}

// Without Out, send still waits for each iteration to be optimized (its barrier does), so
// the next iteration's gradients never arrive early.
TEST(DistOps, ASendWithoutOutStepsInLockstepWithThePserver) {
  Pserver ps;
  ProgramBuilder tr;
  tr.block(0)
      .Op("send")
      .Input("X", "w@GRAD")
      .Attr("epmap", std::vector<std::string>{ps.endpoint()})
      .Attr("deadline_ms", int32_t{10000});
  auto scope = core::Scope::NewRoot();
  {
    core::Executor trainer(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(tr.Build()));
    SetDense(*scope, "w@GRAD", 0.5f);
    for (int i = 0; i < 20; ++i) trainer.Run(0, scope);
  }
  // 20 steps of w -= 0.5 * 0.5
  EXPECT_EQ(ps.Finish(), (std::vector<float>{-4, -4, -3, -3, -2, -2, -1, -1}));
}

// From 1 MiB up the bytes travel beside the calls, over the TCP data path (the default,
// RILL_DATA_PATH=tcp); with RILL_DATA_PATH=message, in the calls. Both land the same.
TEST(DistOps, LargeTensorsLandTheSameBesideTheCallsAndInThem) {
  const int64_t rows = 1 << 17;  // w and its gradient: 1 MiB
  std::vector<float> expected(rows * 2);
  for (int64_t i = 0; i < rows * 2; ++i) expected[i] = static_cast<float>(i / 2 + 1) - 3 * 0.5f * 2;
  for (const char* mode : {"tcp", "message"}) {
    setenv("RILL_DATA_PATH", mode, 1);
    Pserver ps(rows);
    ProgramBuilder tr;
    tr.block(0)
        .Op("send")
        .Input("X", "w@GRAD")
        .Output("Out", "w")
        .Attr("epmap", std::vector<std::string>{ps.endpoint()})
        .Attr("deadline_ms", int32_t{10000});
    auto scope = core::Scope::NewRoot();
    {
      core::Executor trainer(ShippedRegistry(), std::make_shared<proto::ProgramDesc>(tr.Build()));
      SetDense(*scope, "w@GRAD", 2, rows);
      for (int i = 0; i < 3; ++i) trainer.Run(0, scope);
      EXPECT_EQ(Floats(*scope, "w"), expected) << mode;
    }
    EXPECT_EQ(ps.Finish(), expected) << mode;
  }
  unsetenv("RILL_DATA_PATH");
}

}  // namespace
}  // namespace rill::test
