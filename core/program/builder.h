// core/program/builder.h — building ProgramDescs in C++.
//
//   ProgramBuilder pb;
//   auto& main = pb.block(0);
//   main.Var("i", RILL_INT64, {1});
//   main.Op("fill_constant").Output("Out", "i").Attr("shape", std::vector<int64_t>{1})
//       .Attr("dtype", int64_t{RILL_INT64}).Attr("value", 0.0f);
//   auto& body = pb.NewBlock(0);   // a sub-block whose parent is block 0
//   main.Op("while").Input("Condition", "cond").BlockAttr("sub_block", body.idx());
//   proto::ProgramDesc program = pb.Build();
//
// References returned stay valid while the builder lives.
#ifndef RILL_CORE_PROGRAM_BUILDER_H_
#define RILL_CORE_PROGRAM_BUILDER_H_

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/proto/framework.pb.h"
#include "rill/abi.h"

namespace rill::core {

class OpBuilder {
 public:
  explicit OpBuilder(proto::OpDesc* op) : op_(op) {}
  OpBuilder& Input(const std::string& slot, std::initializer_list<std::string> names);
  OpBuilder& Input(const std::string& slot, const std::string& name) { return Input(slot, {name}); }
  OpBuilder& Input(const std::string& slot, const std::vector<std::string>& names);
  OpBuilder& Output(const std::string& slot, std::initializer_list<std::string> names);
  OpBuilder& Output(const std::string& slot, const std::string& name) { return Output(slot, {name}); }
  OpBuilder& Output(const std::string& slot, const std::vector<std::string>& names);
  OpBuilder& Attr(const std::string& name, int32_t v);
  OpBuilder& Attr(const std::string& name, int64_t v);
  OpBuilder& Attr(const std::string& name, float v);
  OpBuilder& Attr(const std::string& name, bool v);
  OpBuilder& Attr(const std::string& name, const char* v) { return Attr(name, std::string(v)); }
  OpBuilder& Attr(const std::string& name, const std::string& v);
  OpBuilder& Attr(const std::string& name, const std::vector<int64_t>& v);
  OpBuilder& Attr(const std::string& name, const std::vector<float>& v);
  OpBuilder& Attr(const std::string& name, const std::vector<std::string>& v);
  OpBuilder& BlockAttr(const std::string& name, int32_t block_idx);
  proto::OpDesc* desc() { return op_; }

 private:
  proto::OpDesc::Attr* NewAttr(const std::string& name, proto::AttrType type);
  proto::OpDesc* op_;
};

class BlockBuilder {
 public:
  explicit BlockBuilder(proto::BlockDesc* block) : block_(block) {}
  int32_t idx() const { return block_->idx(); }
  // Declares a LoD tensor variable of this block.
  BlockBuilder& Var(const std::string& name, int32_t dtype = RILL_FP32, std::vector<int64_t> dims = {},
                    bool persistable = false);
  // Appends an op to the block.
  OpBuilder Op(const std::string& type);
  proto::BlockDesc* desc() { return block_; }

 private:
  proto::BlockDesc* block_;
};

class ProgramBuilder {
 public:
  ProgramBuilder();
  BlockBuilder& block(int32_t idx) { return blocks_.at(static_cast<size_t>(idx)); }
  BlockBuilder& NewBlock(int32_t parent_idx);
  const proto::ProgramDesc& Build() const { return program_; }

 private:
  proto::ProgramDesc program_;
  std::deque<BlockBuilder> blocks_;
};

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_BUILDER_H_
