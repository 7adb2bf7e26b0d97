#include "core/program/csp_builder.h"

namespace rill::core {
namespace {

// Appends `out` = fill_constant of one int32 element.
void FillInt32(BlockBuilder& b, const std::string& out, float value) {
  b.Op("fill_constant")
      .Output("Out", out)
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("dtype", int32_t{RILL_INT32})
      .Attr("value", value);
}

// Adds `name` to `slot` of an op's inputs or outputs, once.
void AddArgument(google::protobuf::RepeatedPtrField<proto::OpDesc::Var>* vars, const std::string& slot,
                 const std::string& name) {
  proto::OpDesc::Var* var = nullptr;
  for (auto& v : *vars) {
    if (v.parameter() == slot) var = &v;
  }
  if (var == nullptr) {
    var = vars->Add();
    var->set_parameter(slot);
  }
  for (const auto& a : var->arguments()) {
    if (a == name) return;
  }
  var->add_arguments(name);
}

}  // namespace

void MakeChannel(BlockBuilder& b, const std::string& name, int32_t data_type, int64_t capacity) {
  b.Op("channel_create").Output("Out", name).Attr("data_type", data_type).Attr("capacity", capacity);
}

void ChannelSend(BlockBuilder& b, const std::string& channel, const std::string& value, bool copy) {
  b.Op("channel_send").Input("Channel", channel).Input("X", value).Attr("copy", copy);
}

void ChannelRecv(BlockBuilder& b, const std::string& channel, const std::string& out, const std::string& status) {
  OpBuilder op = b.Op("channel_recv").Input("Channel", channel).Output("Out", out);
  if (!status.empty()) op.Output("Status", status);
}

void ChannelClose(BlockBuilder& b, const std::string& channel) { b.Op("channel_close").Input("Channel", channel); }

BlockBuilder& Go(ProgramBuilder& pb, BlockBuilder& b, const std::vector<std::string>& captured) {
  BlockBuilder& body = pb.NewBlock(b.idx());
  OpBuilder op = b.Op("go");
  if (!captured.empty()) op.Input("X", captured);
  op.BlockAttr("sub_block", body.idx());
  return body;
}

Select::Select(ProgramBuilder& pb, BlockBuilder& b) : pb_(pb), cases_block_(pb.NewBlock(b.idx())) {
  case_var_ = "select_" + std::to_string(cases_block_.idx()) + ".case_to_execute";
  FillInt32(b, case_var_, -1);
  op_ = b.Op("select")
            .Input("case_to_execute", case_var_)
            .BlockAttr("sub_block", cases_block_.idx())
            .Attr("cases", std::vector<std::string>{})
            .desc();
  // Each case's own block too (select_op.cc): select then runs the chosen one directly.
  auto* blocks = op_->add_attrs();
  blocks->set_name("case_blocks");
  blocks->set_type(proto::BLOCKS);
}

BlockBuilder& Select::Send(const std::string& channel, const std::string& value) { return AddCase(1, channel, value); }
BlockBuilder& Select::Recv(const std::string& channel, const std::string& value) { return AddCase(2, channel, value); }
BlockBuilder& Select::Default() { return AddCase(0, "", ""); }

BlockBuilder& Select::AddCase(int type, const std::string& channel, const std::string& value) {
  const int idx = static_cast<int>(cases_.size());
  cases_.push_back(std::to_string(idx) + "," + std::to_string(type) + "," + channel + "," + value);
  BlockBuilder& body = pb_.NewBlock(cases_block_.idx());
  for (auto& a : *op_->mutable_attrs()) {
    if (a.name() == "cases") a.add_strings(cases_.back());
    if (a.name() == "case_blocks") a.add_blocks_idx(body.idx());
  }
  // As the seed's Python API does: what the cases use in X, what they write in Out, so the
  // op reads them from its resolved arguments.
  if (type != 0) {
    AddArgument(op_->mutable_inputs(), "X", channel);
    if (type == 1) AddArgument(op_->mutable_inputs(), "X", value);
    if (type == 2) AddArgument(op_->mutable_outputs(), "Out", value);
  }
  const std::string prefix = case_var_ + "." + std::to_string(idx);
  FillInt32(cases_block_, prefix + ".idx", static_cast<float>(idx));
  cases_block_.Op("equal").Input("X", prefix + ".idx").Input("Y", case_var_).Output("Out", prefix + ".cond");
  cases_block_.Op("conditional_block")
      .Input("X", prefix + ".cond")
      .Attr("is_scalar_condition", true)
      .BlockAttr("sub_block", body.idx());
  return body;
}

}  // namespace rill::core
