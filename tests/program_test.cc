#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/program/builder.h"
#include "core/program/program_io.h"
#include "core/program/validate.h"
#include "test_util.h"

namespace rill::core {
namespace {

const std::string kSource = RILL_SOURCE_DIR;

// The first validation problem of `program` (empty if valid).
std::string FirstProblem(const proto::ProgramDesc& program) {
  const auto problems = ValidateProgram(program, test::ShippedRegistry());
  return problems.empty() ? "" : problems.front();
}

void ExpectProblem(const proto::ProgramDesc& program, const std::string& needle) {
  const auto problems = ValidateProgram(program, test::ShippedRegistry());
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find(needle), std::string::npos) << "wanted: " << needle << "\ngot:\n" << all;
}

TEST(ProgramIo, TextAndBinaryRoundTrip) {
  const auto text = LoadProgram(kSource + "/examples/programs/sum_below.pbtxt");
  ASSERT_EQ(text.blocks_size(), 3);
  EXPECT_EQ(text.blocks(2).parent_idx(), 1);
  const std::string bin = test::TempPath("sum_below.pb");
  SaveProgram(text, bin, ProgramFormat::kBinary);
  const auto back = LoadProgram(bin);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(text, back));
  const std::string txt = test::TempPath("sum_below_again.pbtxt");
  SaveProgram(back, txt, FormatForPath(txt));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(text, LoadProgram(txt)));
  EXPECT_TRUE(FirstProblem(text).empty()) << FirstProblem(text);
}

TEST(ProgramIo, SeedDocumentFragmentsParse) {
  // The seeds' programs, with their `//` annotations, parse and validate against the
  // shipped plugins (the csp plugin provides their ops).
  const auto select = LoadProgram(kSource + "/tests/programs/seed_select_fragment.pbtxt");
  EXPECT_EQ(select.blocks(0).ops(1).type(), "select");
  EXPECT_EQ(select.blocks(0).ops(1).attrs(1).strings(0), "0,1,channel_101,fill_constant_109.tmp_0");
  const auto go = LoadProgram(kSource + "/tests/programs/seed_go_fragment.pbtxt");
  EXPECT_EQ(go.blocks(0).ops(1).type(), "go");
  EXPECT_EQ(go.blocks(1).vars(0).type().lod_tensor().tensor().data_type(), proto::VarType::BOOL);
  EXPECT_EQ(FirstProblem(go), "");
}

TEST(ProgramIo, ParseErrorsNameFileLineAndColumn) {
  try {
    ParseProgramText("blocks {\n  idx: 0\n  bogus_field: 3\n}\n", "p.pbtxt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("p.pbtxt: not a valid text program: line 3, column 14: Message type "
                                         "\"rill.proto.BlockDesc\" has no field named \"bogus_field\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseProgramBinary("\xff\xff\xff garbage", "g.pb"), Error);
  EXPECT_THROW(LoadProgram("/nonexistent/program.pb"), Error);
}

proto::ProgramDesc FillProgram() {
  ProgramBuilder pb;
  pb.block(0).Op("fill_constant").Output("Out", "x").Attr("shape", std::vector<int64_t>{1});
  return pb.Build();
}

TEST(Validate, AcceptsWellFormedPrograms) { EXPECT_EQ(FirstProblem(FillProgram()), ""); }

TEST(Validate, UnknownOpSaysNoLoadedPluginProvidesIt) {
  ProgramBuilder pb;
  pb.block(0).Op("send_rdma").Input("X", "g");
  EXPECT_EQ(FirstProblem(pb.Build()),
            std::string("block 0, op 0 (send_rdma): op 'send_rdma' is not provided by any loaded plugin (loaded: ") +
                test::LoadedPlugins() + ")");
}

TEST(Validate, AttributeOfWrongType) {
  auto p = FillProgram();
  auto* a = p.mutable_blocks(0)->mutable_ops(0)->add_attrs();
  a->set_name("value");
  a->set_type(proto::STRING);
  a->set_s("three");
  EXPECT_EQ(FirstProblem(p),
            "block 0, op 0 (fill_constant): attribute 'value' must be FLOAT, the program gives STRING");
}

TEST(Validate, MissingRequiredSlotAndAttribute) {
  ProgramBuilder pb;
  pb.block(0).Op("elementwise_add").Input("X", "a").Output("Out", "c");
  ExpectProblem(pb.Build(), "block 0, op 0 (elementwise_add): required input 'Y' is missing");
  ProgramBuilder pw;
  pw.block(0).Op("while").Input("Condition", "c");
  ExpectProblem(pw.Build(), "block 0, op 0 (while): required attribute 'sub_block' (BLOCK) is not set");
}

TEST(Validate, SlotProblems) {
  ProgramBuilder pb;
  pb.block(0).Op("assign").Input("X", {"a", "b"}).Input("Z", "q").Output("Out", "c");
  ExpectProblem(pb.Build(), "block 0, op 0 (assign): input slot 'X' takes one variable, 2 given");
  ExpectProblem(pb.Build(), "block 0, op 0 (assign): unknown input slot 'Z' (declared: X)");
}

TEST(Validate, BadBlockIndexAndParent) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", 5);
  ExpectProblem(pb.Build(), "block 0, op 0 (while): attribute 'sub_block' refers to block 5, which does not exist");
  auto p = pb.Build();
  p.mutable_blocks(body.idx())->set_parent_idx(9);
  ExpectProblem(p, "block 1: parent block 9 does not exist");
  p.mutable_blocks(1)->set_parent_idx(1);
  ExpectProblem(p, "block 1: parent chain has a cycle through block 1");
  p.mutable_blocks(0)->set_parent_idx(1);
  ExpectProblem(p, "block 0: the root block must have parent_idx -1, not 1");
  p.mutable_blocks(1)->set_idx(4);
  ExpectProblem(p, "block 1: idx is 4 but the block is at position 1");
  ExpectProblem(proto::ProgramDesc(), "program has no blocks");
}

// An op runs only blocks below its own: one that runs its own block or an
// ancestor would recurse until the stack ends, so the program is refused with the cycle
// as a path of blocks and ops; one that runs a block beside its own is refused too.
TEST(Validate, AnOpRunsOnlyBlocksBelowItsOwn) {
  {
    ProgramBuilder pb;
    auto& body = pb.NewBlock(0);
    pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx());
    body.Op("conditional_block")
        .Input("Cond", "c")
        .Attr("is_scalar_condition", true)
        .BlockAttr("sub_block", body.idx());
    ExpectProblem(pb.Build(),
                  "block 1, op 0 (conditional_block): attribute 'sub_block' runs block 1, the op's own "
                  "block, which recurses without end: block 1, op 0 (conditional_block) -> block 1");
  }
  {
    ProgramBuilder pb;
    auto& loop = pb.NewBlock(0);
    auto& branch = pb.NewBlock(loop.idx());
    pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", loop.idx());
    loop.Op("increment").Input("X", "i").Output("Out", "i");
    loop.Op("conditional_block")
        .Input("Cond", "c")
        .Attr("is_scalar_condition", true)
        .BlockAttr("sub_block", branch.idx());
    branch.Op("go").BlockAttr("sub_block", loop.idx());
    ExpectProblem(pb.Build(),
                  "block 2, op 0 (go): attribute 'sub_block' runs block 1, an ancestor of the op's block, "
                  "which recurses without end: block 1, op 1 (conditional_block) -> block 2, op 0 (go) "
                  "-> block 1");
  }
  {
    ProgramBuilder pb;
    auto& left = pb.NewBlock(0);
    auto& right = pb.NewBlock(0);
    pb.block(0)
        .Op("conditional_block")
        .Input("Cond", "c")
        .Attr("is_scalar_condition", true)
        .BlockAttr("sub_block", left.idx());
    left.Op("conditional_block")
        .Input("Cond", "c")
        .Attr("is_scalar_condition", true)
        .BlockAttr("sub_block", right.idx());
    ExpectProblem(pb.Build(),
                  "block 1, op 0 (conditional_block): attribute 'sub_block' runs block 2, which is not "
                  "inside block 1 (its parent chain: 2 -> 0); an op runs only blocks below its own");
    EXPECT_EQ(ValidateProgram(pb.Build(), test::ShippedRegistry()).size(), 1u) << "block 0 running block 1 is fine";
  }
}

TEST(Validate, ThrowingFormSummarizesTheRest) {
  ProgramBuilder pb;
  pb.block(0).Op("nope1");
  pb.block(0).Op("nope2");
  pb.block(0).Op("nope3");
  try {
    ValidateProgramOrThrow(pb.Build(), test::ShippedRegistry());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(and 2 more; `rill check` lists them)"), std::string::npos) << e.what();
  }
}

TEST(Builder, BuildsBlocksVariablesAndAttributes) {
  ProgramBuilder pb;
  auto& body = pb.NewBlock(0);
  pb.block(0).Var("i", RILL_INT64, {1}, true);
  pb.block(0).Op("while").Input("Condition", "c").BlockAttr("sub_block", body.idx()).Attr("is_test", true);
  const auto& p = pb.Build();
  ASSERT_EQ(p.blocks_size(), 2);
  EXPECT_EQ(p.blocks(1).idx(), 1);
  EXPECT_EQ(p.blocks(1).parent_idx(), 0);
  EXPECT_TRUE(p.blocks(0).vars(0).persistable());
  EXPECT_EQ(p.blocks(0).vars(0).type().lod_tensor().tensor().data_type(), proto::VarType::INT64);
  EXPECT_EQ(p.blocks(0).ops(0).attrs(0).type(), proto::BLOCK);
  EXPECT_EQ(p.blocks(0).ops(0).attrs(0).block_idx(), 1);
  EXPECT_TRUE(p.blocks(0).ops(0).attrs(1).b());
}

}  // namespace
}  // namespace rill::core
