// core/program/csp_builder.h — building CSP programs in C++, mirroring Fluid's Python API
// (fluid.make_channel, channel_send/recv/close, fluid.Go(), fluid.Select()).
//
//   ProgramBuilder pb;
//   BlockBuilder& main = pb.block(0);
//   MakeChannel(main, "ch");                          // unbuffered, LOD_TENSOR values
//   BlockBuilder& body = Go(pb, main, {"ch"});        // the go block's body
//   body.Op("fill_constant")...Output("Out", "v");
//   ChannelSend(body, "ch", "v");
//   ChannelRecv(main, "ch", "result", "status");
//
//   Select select(pb, main);
//   BlockBuilder& on_send = select.Send("ch", "x");   // body run when the send wins
//   BlockBuilder& on_quit = select.Recv("quit", "q");
//   BlockBuilder& otherwise = select.Default();
//
// These emit the csp plugin's ops (see docs/OPS.md); running them needs that plugin.
#ifndef RILL_CORE_PROGRAM_CSP_BUILDER_H_
#define RILL_CORE_PROGRAM_CSP_BUILDER_H_

#include <string>
#include <vector>

#include "core/program/builder.h"

namespace rill::core {

// framework.proto's VarType.Type for "any tensor", the usual channel data_type.
constexpr int32_t kLodTensorType = 7;

void MakeChannel(BlockBuilder& b, const std::string& name, int32_t data_type = kLodTensorType, int64_t capacity = 0);
void ChannelSend(BlockBuilder& b, const std::string& channel, const std::string& value, bool copy = false);
// `status` (optional) receives bool [1]: false when the channel was closed and drained.
void ChannelRecv(BlockBuilder& b, const std::string& channel, const std::string& out, const std::string& status = "");
void ChannelClose(BlockBuilder& b, const std::string& channel);

// Appends a go op to `b` and returns its body, a new block. `captured` are the variables
// the body uses from enclosing scopes (the op's X); channels among them are bound when
// the go op runs.
BlockBuilder& Go(ProgramBuilder& pb, BlockBuilder& b, const std::vector<std::string>& captured = {});

// A select op appended to a block, with its cases added one by one. Each case returns
// the block that runs when the case is chosen. The op's layout is Fluid's: a
// case_to_execute variable, and a sub-block with fill_constant/equal/conditional_block
// per case.
class Select {
 public:
  Select(ProgramBuilder& pb, BlockBuilder& b);
  BlockBuilder& Send(const std::string& channel, const std::string& value);
  BlockBuilder& Recv(const std::string& channel, const std::string& value);
  BlockBuilder& Default();
  const std::string& case_to_execute() const { return case_var_; }

 private:
  BlockBuilder& AddCase(int type, const std::string& channel, const std::string& value);

  ProgramBuilder& pb_;
  BlockBuilder& cases_block_;
  proto::OpDesc* op_;
  std::string case_var_;
  std::vector<std::string> cases_;
};

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_CSP_BUILDER_H_
