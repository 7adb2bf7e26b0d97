#include "core/program/builder.h"

namespace rill::core {

OpBuilder& OpBuilder::Input(const std::string& slot, std::initializer_list<std::string> names) {
  return Input(slot, std::vector<std::string>(names));
}

OpBuilder& OpBuilder::Input(const std::string& slot, const std::vector<std::string>& names) {
  auto* var = op_->add_inputs();
  var->set_parameter(slot);
  for (const auto& n : names) var->add_arguments(n);
  return *this;
}

OpBuilder& OpBuilder::Output(const std::string& slot, std::initializer_list<std::string> names) {
  return Output(slot, std::vector<std::string>(names));
}

OpBuilder& OpBuilder::Output(const std::string& slot, const std::vector<std::string>& names) {
  auto* var = op_->add_outputs();
  var->set_parameter(slot);
  for (const auto& n : names) var->add_arguments(n);
  return *this;
}

proto::OpDesc::Attr* OpBuilder::NewAttr(const std::string& name, proto::AttrType type) {
  auto* a = op_->add_attrs();
  a->set_name(name);
  a->set_type(type);
  return a;
}

OpBuilder& OpBuilder::Attr(const std::string& name, int32_t v) {
  NewAttr(name, proto::INT)->set_i(v);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, int64_t v) {
  NewAttr(name, proto::LONG)->set_l(v);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, float v) {
  NewAttr(name, proto::FLOAT)->set_f(v);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, bool v) {
  NewAttr(name, proto::BOOLEAN)->set_b(v);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, const std::string& v) {
  NewAttr(name, proto::STRING)->set_s(v);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, const std::vector<int64_t>& v) {
  auto* a = NewAttr(name, proto::INTS);
  for (int64_t x : v) a->add_ints(static_cast<int32_t>(x));
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, const std::vector<float>& v) {
  auto* a = NewAttr(name, proto::FLOATS);
  for (float x : v) a->add_floats(x);
  return *this;
}
OpBuilder& OpBuilder::Attr(const std::string& name, const std::vector<std::string>& v) {
  auto* a = NewAttr(name, proto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
  return *this;
}
OpBuilder& OpBuilder::BlockAttr(const std::string& name, int32_t block_idx) {
  NewAttr(name, proto::BLOCK)->set_block_idx(block_idx);
  return *this;
}

BlockBuilder& BlockBuilder::Var(const std::string& name, int32_t dtype, std::vector<int64_t> dims, bool persistable) {
  auto* v = block_->add_vars();
  v->set_name(name);
  v->set_persistable(persistable);
  auto* type = v->mutable_type();
  type->set_type(proto::VarType::LOD_TENSOR);
  auto* tensor = type->mutable_lod_tensor()->mutable_tensor();
  tensor->set_data_type(static_cast<proto::VarType::Type>(dtype));
  for (int64_t d : dims) tensor->add_dims(d);
  return *this;
}

OpBuilder BlockBuilder::Op(const std::string& type) {
  auto* op = block_->add_ops();
  op->set_type(type);
  return OpBuilder(op);
}

ProgramBuilder::ProgramBuilder() {
  auto* b = program_.add_blocks();
  b->set_idx(0);
  b->set_parent_idx(-1);
  program_.mutable_version()->set_version(0);
  blocks_.emplace_back(b);
}

BlockBuilder& ProgramBuilder::NewBlock(int32_t parent_idx) {
  auto* b = program_.add_blocks();
  b->set_idx(static_cast<int32_t>(program_.blocks_size() - 1));
  b->set_parent_idx(parent_idx);
  blocks_.emplace_back(b);
  return blocks_.back();
}

}  // namespace rill::core
