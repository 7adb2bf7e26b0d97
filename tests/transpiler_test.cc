// The distribute transpiler: fit_a_line's training program into trainer and pserver
// programs, and the programs it refuses.
#include "core/program/transpiler.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/program/backward.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "test_util.h"

namespace rill::core {
namespace {

const std::string kFitALine = std::string(RILL_SOURCE_DIR) + "/examples/fit_a_line/";

proto::ProgramDesc Training() {
  proto::ProgramDesc p = LoadProgram(kFitALine + "model.pbtxt");
  AppendSgd(p, AppendBackward(p, test::ShippedRegistry(), "avg_cost"), 0.1f);
  return p;
}

std::vector<std::string> Types(const proto::BlockDesc& b) {
  std::vector<std::string> out;
  for (const auto& op : b.ops()) out.push_back(op.type());
  return out;
}

const proto::OpDesc::Attr& AttrOf(const proto::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs()) {
    if (a.name() == name) return a;
  }
  throw std::runtime_error("no attribute " + name);
}

std::vector<std::string> Strings(const proto::OpDesc& op, const std::string& name) {
  const auto& a = AttrOf(op, name);
  return {a.strings().begin(), a.strings().end()};
}

TEST(Transpiler, SplitsFitALineIntoTrainerAndPserverPrograms) {
  TranspileOptions options;
  options.trainers = 2;
  options.pservers = {"127.0.0.1:7001", "127.0.0.1:7002"};
  const auto out = Transpile(Training(), LoadProgram(kFitALine + "startup.pbtxt"), options);

  // w (13 elements) first, onto the emptier pserver; then b onto the other.
  ASSERT_EQ(out.placement.size(), 2u);
  EXPECT_EQ(out.placement[0], (std::pair<std::string, std::string>{"w", "127.0.0.1:7001"}));
  EXPECT_EQ(out.placement[1], (std::pair<std::string, std::string>{"b", "127.0.0.1:7002"}));

  // The trainer keeps forward and backward, loses sgd and the learning rate, ends in send.
  const auto trainer_ops = Types(out.trainer.blocks(0));
  EXPECT_EQ(std::count(trainer_ops.begin(), trainer_ops.end(), "sgd"), 0);
  EXPECT_EQ(std::count(trainer_ops.begin(), trainer_ops.end(), "fill_constant"), 0);
  EXPECT_EQ(trainer_ops.front(), "mul");
  const auto& send = out.trainer.blocks(0).ops(out.trainer.blocks(0).ops_size() - 1);
  ASSERT_EQ(send.type(), "send");
  EXPECT_EQ(Strings(send, "epmap"), (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  EXPECT_EQ(send.inputs(0).arguments(0), "w@GRAD");
  EXPECT_EQ(send.outputs(0).arguments(1), "b");

  // Its startup pulls the pservers' parameters after initializing.
  const auto& init = out.trainer_startup.blocks(0);
  EXPECT_EQ(init.ops(init.ops_size() - 1).type(), "recv");

  // Pserver 0: listen_and_serv over w; block 1 has the learning rate and w's sgd only.
  ASSERT_EQ(out.pservers.size(), 2u);
  const auto& ps0 = out.pservers[0];
  ASSERT_EQ(ps0.blocks_size(), 2);
  EXPECT_EQ(Types(ps0.blocks(0)), (std::vector<std::string>{"listen_and_serv"}));
  const auto& serve = ps0.blocks(0).ops(0);
  EXPECT_EQ(Strings(serve, "ParamList"), (std::vector<std::string>{"w"}));
  EXPECT_EQ(Strings(serve, "GradList"), (std::vector<std::string>{"w@GRAD"}));
  EXPECT_EQ(AttrOf(serve, "Fanin").i(), 2);
  EXPECT_EQ(AttrOf(serve, "OptimizeBlock").block_idx(), 1);
  EXPECT_EQ(Types(ps0.blocks(1)), (std::vector<std::string>{"fill_constant", "sgd"}));
  EXPECT_EQ(ps0.blocks(1).ops(1).inputs(0).arguments(0), "w");
  // Its startup initializes w, not b.
  EXPECT_EQ(Types(out.pserver_startups[0].blocks(0)), (std::vector<std::string>{"fill_constant"}));
  EXPECT_EQ(out.pserver_startups[0].blocks(0).ops(0).outputs(0).arguments(0), "w");

  for (const auto* p : {&out.trainer, &out.trainer_startup, &out.pservers[0], &out.pservers[1]}) {
    EXPECT_EQ(ValidateProgram(*p, test::ShippedRegistry()), std::vector<std::string>{}) << ProgramToText(*p);
  }
}

std::string TranspileError(const proto::ProgramDesc& train, std::vector<std::string> pservers, int trainers = 1) {
  TranspileOptions options;
  options.trainers = trainers;
  options.pservers = std::move(pservers);
  try {
    Transpile(train, LoadProgram(kFitALine + "startup.pbtxt"), options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Transpiler, RefusesWhatItCannotDistribute) {
  EXPECT_NE(TranspileError(LoadProgram(kFitALine + "model.pbtxt"), {"127.0.0.1:7001"}).find("no optimizer op"),
            std::string::npos);
  EXPECT_NE(TranspileError(Training(), {"127.0.0.1"}).find("'127.0.0.1' is not HOST:PORT"), std::string::npos);
  EXPECT_NE(TranspileError(Training(), {"h:70000"}).find("port in 1..65535"), std::string::npos);
  EXPECT_NE(TranspileError(Training(), {"h:1", "h:1"}).find("'h:1' is given twice"), std::string::npos);
  EXPECT_NE(TranspileError(Training(), {"h:1"}, 0).find("--trainers must be at least 1"), std::string::npos);
  EXPECT_NE(TranspileError(Training(), {}).find("no pserver endpoints"), std::string::npos);
}

}  // namespace
}  // namespace rill::core
