// Rill's compact program form (core/program/program.h) reads what protobuf reads: every
// field it keeps, from every program shipped and from Paddle 2.x's vocabulary; it keeps
// each string and each attribute once; bytes that are no program are errors, never a
// crash.
#include "core/program/program.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/errors.h"
#include "core/program/program_io.h"
#include "test_util.h"

namespace rill::core {
namespace {

const std::string kSource = RILL_SOURCE_DIR;

void ExpectSameAttr(const proto::OpDesc::Attr& want, const Program& p, const ProgramAttr& got, const std::string& at) {
  SCOPED_TRACE(at + " attr " + want.name());
  EXPECT_EQ(p.str(got.name), want.name());
  EXPECT_EQ(got.type, want.has_type() ? want.type() : -1);
  if (!want.has_type()) return;  // no type selects a value
  const auto list = [](const auto& range) {
    return std::vector<std::decay_t<decltype(range[0])>>(range.begin(), range.end());
  };
  switch (want.type()) {
    case proto::INT: EXPECT_EQ(got.i, want.i()); break;
    case proto::LONG: EXPECT_EQ(got.i, want.l()); break;
    case proto::BOOLEAN: EXPECT_EQ(got.i, want.b() ? 1 : 0); break;
    case proto::BLOCK: EXPECT_EQ(got.i, want.block_idx()); break;
    case proto::FLOAT: EXPECT_EQ(got.f, want.f()); break;
    case proto::FLOAT64: EXPECT_EQ(got.f, want.float64()); break;
    case proto::STRING: EXPECT_EQ(p.str(got.s), want.s()); break;
    case proto::VAR: EXPECT_EQ(p.str(got.s), want.var_name()); break;
    case proto::INTS: EXPECT_EQ(list(p.ints(got)), std::vector<int64_t>(want.ints().begin(), want.ints().end())); break;
    case proto::LONGS:
      EXPECT_EQ(list(p.ints(got)), std::vector<int64_t>(want.longs().begin(), want.longs().end()));
      break;
    case proto::BLOCKS:
      EXPECT_EQ(list(p.ints(got)), std::vector<int64_t>(want.blocks_idx().begin(), want.blocks_idx().end()));
      break;
    case proto::BOOLEANS:
      EXPECT_EQ(list(p.ints(got)), std::vector<int64_t>(want.bools().begin(), want.bools().end()));
      break;
    case proto::FLOATS:
      EXPECT_EQ(list(p.floats(got)), std::vector<double>(want.floats().begin(), want.floats().end()));
      break;
    case proto::FLOAT64S:
      EXPECT_EQ(list(p.floats(got)), std::vector<double>(want.float64s().begin(), want.float64s().end()));
      break;
    case proto::STRINGS:
    case proto::VARS: {
      const auto& names = want.type() == proto::STRINGS ? want.strings() : want.vars_name();
      ASSERT_EQ(p.strings(got).size(), static_cast<size_t>(names.size()));
      for (int k = 0; k < names.size(); ++k) EXPECT_EQ(p.str(p.strings(got)[k]), names[k]);
      break;
    }
    case proto::SCALAR:
      EXPECT_EQ(got.scalar_type, want.scalar().type());
      if (want.scalar().type() == proto::Scalar::FLOAT64) {
        EXPECT_EQ(got.f, want.scalar().r());
      } else if (want.scalar().type() == proto::Scalar::LONG) {
        EXPECT_EQ(got.i, want.scalar().i());
      } else if (want.scalar().type() == proto::Scalar::BOOLEAN) {
        EXPECT_EQ(got.i, want.scalar().b() ? 1 : 0);
      }
      break;
    case proto::SCALARS: EXPECT_EQ(got.list_size, static_cast<uint32_t>(want.scalars_size())); break;
  }
}

void ExpectSameSlots(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& want, const Program& p,
                     Range<ProgramSlot> got) {
  ASSERT_EQ(got.size(), static_cast<size_t>(want.size()));
  for (int k = 0; k < want.size(); ++k) {
    EXPECT_EQ(p.str(got[k].parameter), want[k].parameter());
    ASSERT_EQ(p.arguments(got[k]).size(), static_cast<size_t>(want[k].arguments_size()));
    for (int j = 0; j < want[k].arguments_size(); ++j) EXPECT_EQ(p.str(p.arguments(got[k])[j]), want[k].arguments(j));
  }
}

// Every field the compact form keeps equals protobuf's reading of the same bytes.
void ExpectSameProgram(const proto::ProgramDesc& want, const Program& p) {
  ASSERT_EQ(p.blocks_size(), want.blocks_size());
  EXPECT_EQ(p.version(), want.has_version() ? want.version().version() : want.fluid_version().version());
  for (int b = 0; b < want.blocks_size(); ++b) {
    const proto::BlockDesc& wb = want.blocks(b);
    const ProgramBlock& gb = p.block(b);
    EXPECT_EQ(gb.has_idx, wb.has_idx());
    EXPECT_EQ(gb.idx, wb.idx());
    EXPECT_EQ(gb.parent_idx, wb.parent_idx());
    EXPECT_EQ(gb.forward_block_idx, wb.forward_block_idx());
    ASSERT_EQ(p.vars(gb).size(), static_cast<size_t>(wb.vars_size()));
    for (int v = 0; v < wb.vars_size(); ++v) {
      const proto::VarDesc& wv = wb.vars(v);
      const ProgramVar& gv = p.vars(gb)[v];
      SCOPED_TRACE("block " + std::to_string(b) + " var " + wv.name());
      EXPECT_EQ(p.str(gv.name), wv.name());
      EXPECT_EQ(gv.type, wv.type().has_type() ? wv.type().type() : -1);
      EXPECT_EQ(gv.persistable, wv.persistable());
      EXPECT_EQ(gv.need_check_feed, wv.need_check_feed());
      EXPECT_EQ(gv.is_parameter, wv.is_parameter());
      EXPECT_EQ(gv.stop_gradient, wv.stop_gradient());
      EXPECT_EQ(gv.has_tensor, wv.type().has_lod_tensor());
      if (wv.type().has_lod_tensor()) {
        const auto& t = wv.type().lod_tensor();
        EXPECT_EQ(gv.data_type, t.tensor().has_data_type() ? t.tensor().data_type() : -1);
        EXPECT_EQ(gv.lod_level, t.lod_level());
        const auto dims = p.dims(gv);
        EXPECT_EQ(std::vector<int64_t>(dims.begin(), dims.end()),
                  std::vector<int64_t>(t.tensor().dims().begin(), t.tensor().dims().end()));
      }
    }
    ASSERT_EQ(p.ops(gb).size(), static_cast<size_t>(wb.ops_size()));
    for (int o = 0; o < wb.ops_size(); ++o) {
      const proto::OpDesc& wo = wb.ops(o);
      const ProgramOp& go = p.ops(gb)[o];
      const std::string at = "block " + std::to_string(b) + " op " + std::to_string(o);
      SCOPED_TRACE(at);
      EXPECT_EQ(p.str(go.type), wo.type());
      EXPECT_EQ(go.has_type, wo.has_type());
      EXPECT_EQ(go.is_target, wo.is_target());
      ExpectSameSlots(wo.inputs(), p, p.inputs(go));
      ExpectSameSlots(wo.outputs(), p, p.outputs(go));
      ASSERT_EQ(p.attrs(go).size(), static_cast<size_t>(wo.attrs_size()));
      for (int k = 0; k < wo.attrs_size(); ++k) ExpectSameAttr(wo.attrs(k), p, p.attr(p.attrs(go)[k]), at);
    }
  }
}

const char* kPaddle2Program = R"(blocks { idx: 0 parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BF16 dims: -1 dims: 3 } lod_level: 1 } }
         persistable: true need_check_feed: true is_parameter: true stop_gradient: true }
  vars { name: "ch" type { type: CHANNEL channel { data_type: FP32 capacity: 4 } } }
  vars { type { type: RAW } }
  ops { type: "every_attr" is_target: true
        inputs { parameter: "X" arguments: "x" arguments: "ch" } inputs { parameter: "Empty" }
        outputs { parameter: "Out" arguments: "y" }
        attrs { name: "i" type: INT i: -7 } attrs { name: "l" type: LONG l: -8000000000 }
        attrs { name: "b" type: BOOLEAN b: true } attrs { name: "blk" type: BLOCK block_idx: 1 }
        attrs { name: "f" type: FLOAT f: 0.1 } attrs { name: "f64" type: FLOAT64 float64: 0.1 }
        attrs { name: "s" type: STRING s: "text" } attrs { name: "v" type: VAR var_name: "x" }
        attrs { name: "is" type: INTS ints: 1 ints: -2 } attrs { name: "ls" type: LONGS longs: 9000000000 }
        attrs { name: "bs" type: BOOLEANS bools: true bools: false } attrs { name: "blks" type: BLOCKS blocks_idx: 1 }
        attrs { name: "fs" type: FLOATS floats: 1.5 floats: -0.25 } attrs { name: "f64s" type: FLOAT64S float64s: 0.3 }
        attrs { name: "ss" type: STRINGS strings: "a" strings: "" } attrs { name: "vs" type: VARS vars_name: "x" }
        attrs { name: "sc" type: SCALAR scalar { type: FLOAT64 r: 2.5 } }
        attrs { name: "sl" type: SCALAR scalar { type: LONG i: -3 } }
        attrs { name: "sb" type: SCALAR scalar { type: BOOLEAN b: true } }
        attrs { name: "scs" type: SCALARS scalars { type: LONG i: 1 } scalars { type: BOOLEAN b: false } }
        attrs { name: "mixed" type: INT i: 3 f: 9 s: "ignored" }
        attrs { name: "untyped" i: 4 } }
  ops { outputs { parameter: "Out" } } }
blocks { idx: 1 parent_idx: 0 forward_block_idx: 0 }
blocks { parent_idx: 0 }
version { version: 2004000 }
op_version_map { pair { op_name: "every_attr" op_version { version: 3 } } })";

TEST(ProgramForm, ReadsEveryFieldProtobufReads) {
  std::vector<std::string> files;
  for (const char* dir : {"/examples", "/tests/programs"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(kSource + dir)) {
      if (e.path().extension() == ".pbtxt") files.push_back(e.path().string());
    }
  }
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const proto::ProgramDesc want = LoadProgram(f);
    ExpectSameProgram(want, *Program::FromProto(want));
    ExpectSameProgram(want, *ReadProgram(f));
  }
  const proto::ProgramDesc paddle2 = ParseProgramText(kPaddle2Program);
  ExpectSameProgram(paddle2, *Program::FromProto(paddle2));
  // Paddle's fields the compact form reads past: the channel, the op version map.
  const auto p = Program::FromProto(paddle2);
  EXPECT_EQ(p->version(), 2004000);
  EXPECT_EQ(p->str(p->vars(p->block(0))[2].name), "") << "an unset name reads as empty, as in protobuf";
  // The binary file is read as it is decoded.
  const std::string bin = test::TempPath("paddle2.pb");
  SaveProgram(paddle2, bin, ProgramFormat::kBinary);
  ExpectSameProgram(paddle2, *ReadProgram(bin));
}

// proto2 writes repeated scalars one per field; packed ones (as proto3 and other writers
// write them) read the same.
TEST(ProgramForm, ReadsPackedAndUnpackedRepeatedFields) {
  // block { vars { name: "v" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32
  //   dims: [2, -1] (packed) } } } } ops { type: "t" attrs { name: "a" type: INTS ints: [5, 6] (packed) } } }
  const std::string dims_packed = std::string("\x12\x0b", 2) + "\x02" + std::string(10, '\xff').replace(9, 1, "\x01");
  const std::string tensor = std::string("\x08\x05", 2) + dims_packed;
  const std::string lod = "\x0a" + std::string(1, static_cast<char>(tensor.size())) + tensor;
  const std::string var_type =
      std::string("\x08\x07", 2) + "\x1a" + std::string(1, static_cast<char>(lod.size())) + lod;
  const std::string var =
      std::string("\x0a\x01v", 3) + "\x12" + std::string(1, static_cast<char>(var_type.size())) + var_type;
  const std::string attr = std::string(
      "\x0a\x01"
      "a"
      "\x10\x03"
      "\x32\x02\x05\x06",
      9);
  const std::string op = std::string("\x1a\x01t", 3) + "\x22" + std::string(1, static_cast<char>(attr.size())) + attr;
  const std::string block = std::string("\x08\x00\x10", 3) + std::string(10, '\xff').replace(9, 1, "\x01") + "\x1a" +
                            std::string(1, static_cast<char>(var.size())) + var + "\x22" +
                            std::string(1, static_cast<char>(op.size())) + op;
  const std::string bytes = "\x0a" + std::string(1, static_cast<char>(block.size())) + block;
  const proto::ProgramDesc want = ParseProgramBinary(bytes);
  ASSERT_EQ(want.blocks(0).vars(0).type().lod_tensor().tensor().dims_size(), 2);
  ASSERT_EQ(want.blocks(0).ops(0).attrs(0).ints_size(), 2);
  ExpectSameProgram(want, *Program::Parse(bytes, "packed"));
}

TEST(ProgramForm, KeepsEachStringAndAttributeOnce) {
  const auto p = Program::FromProto(ParseProgramText(R"(blocks { idx: 0 parent_idx: -1
    ops { type: "scale" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" }
          attrs { name: "scale" type: FLOAT f: 2 } attrs { name: "op_role" type: INT i: 0 } }
    ops { type: "scale" inputs { parameter: "X" arguments: "y" } outputs { parameter: "Out" arguments: "x" }
          attrs { name: "scale" type: FLOAT f: 3 } attrs { name: "op_role" type: INT i: 0 } } })"));
  const auto ops = p->ops(p->block(0));
  EXPECT_EQ(ops[0].type, ops[1].type);
  EXPECT_EQ(p->inputs(ops[0])[0].parameter, p->inputs(ops[1])[0].parameter);
  EXPECT_EQ(p->arguments(p->inputs(ops[0])[0])[0], p->arguments(p->outputs(ops[1])[0])[0]) << "x is one string";
  EXPECT_NE(p->attrs(ops[0])[0], p->attrs(ops[1])[0]) << "scale 2 and scale 3 differ";
  EXPECT_EQ(p->attrs(ops[0])[1], p->attrs(ops[1])[1]) << "op_role 0 is one attribute";
  EXPECT_EQ(p->attrs_count(), 3u);
  EXPECT_EQ(p->FindStr("scale"), ops[0].type);
  EXPECT_FALSE(p->FindStr("absent").has_value());
}

TEST(ProgramForm, BytesThatAreNoProgramAreErrors) {
  const auto expect_error = [](const std::string& bytes, const std::string& needle) {
    try {
      Program::Parse(bytes, "bad.pb");
      ADD_FAILURE() << "no error; wanted: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("\xff\xff\xff garbage", "bad.pb: not a valid serialized ProgramDesc");
  expect_error(std::string("\x0a\x05\x08\x00", 4), "bad.pb: not a valid serialized ProgramDesc (truncated");
  expect_error(std::string("\x00\x01", 2), "bad.pb: not a valid serialized ProgramDesc");
  // Every prefix of a real program either reads (it ends between fields) or is an error.
  SaveProgram(ParseProgramText(kPaddle2Program), test::TempPath("whole.pb"), ProgramFormat::kBinary);
  std::string whole;
  {
    std::ifstream in(test::TempPath("whole.pb"), std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t errors = 0;
  for (size_t n = 0; n < whole.size(); ++n) {
    try {
      Program::Parse(std::string_view(whole).substr(0, n), "prefix");
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, whole.size() / 2);
  try {
    Program::ParseFile(test::TempPath("no_such.pb"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open program"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill::core
