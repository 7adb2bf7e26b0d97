#include "scenarios.h"

namespace rill::examples {
namespace {

using core::BlockBuilder;
using core::ProgramBuilder;

void Fill(BlockBuilder& b, const std::string& out, int32_t dtype, float value) {
  b.Op("fill_constant")
      .Output("Out", out)
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("dtype", dtype)
      .Attr("value", value);
}

// Appends `counter = 0; cond = counter < limit; while cond { <body>; counter += 1; ... }`
// to `b` and returns the body, to be filled before calling FinishCountedLoop.
BlockBuilder& CountedLoop(ProgramBuilder& pb, BlockBuilder& b, const std::string& counter, int64_t limit) {
  Fill(b, counter, RILL_INT64, 0);
  Fill(b, counter + ".limit", RILL_INT64, static_cast<float>(limit));
  b.Op("less_than").Input("X", counter).Input("Y", counter + ".limit").Output("Out", counter + ".cond");
  BlockBuilder& body = pb.NewBlock(b.idx());
  b.Op("while").Input("Condition", counter + ".cond").BlockAttr("sub_block", body.idx());
  return body;
}
void FinishCountedLoop(BlockBuilder& body, const std::string& counter) {
  body.Op("increment").Input("X", counter).Output("Out", counter);
  body.Op("less_than").Input("X", counter).Input("Y", counter + ".limit").Output("Out", counter + ".cond");
}

// Appends a counted loop receiving n values from `channel` and adding them to `sum`.
void ReceiveAndAdd(ProgramBuilder& pb, BlockBuilder& b, const std::string& channel, int64_t n, const std::string& sum) {
  BlockBuilder& receive = CountedLoop(pb, b, sum + ".i", n);
  core::ChannelRecv(receive, channel, "got");
  receive.Op("elementwise_add").Input("X", sum).Input("Y", "got").Output("Out", sum);
  FinishCountedLoop(receive, sum + ".i");
}

// `while true { <body> }`, for go blocks that serve until the main block ends.
BlockBuilder& Forever(ProgramBuilder& pb, BlockBuilder& b) {
  Fill(b, "forever", RILL_BOOL, 1);
  BlockBuilder& body = pb.NewBlock(b.idx());
  b.Op("while").Input("Condition", "forever").BlockAttr("sub_block", body.idx());
  return body;
}

}  // namespace

ProgramBuilder DaisyChain(int64_t n) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  core::MakeChannel(main, "leftmost");
  main.Op("assign").Input("X", "leftmost").Output("Out", "left");
  BlockBuilder& step = CountedLoop(pb, main, "i", n);
  core::MakeChannel(step, "right");
  // Bound to this step's `left` and `right` when it starts (go binds channels in X).
  BlockBuilder& whisper = core::Go(pb, step, {"left", "right"});
  Fill(whisper, "one", RILL_INT64, 1);
  core::ChannelRecv(whisper, "right", "got");
  whisper.Op("elementwise_add").Input("X", "got").Input("Y", "one").Output("Out", "more");
  core::ChannelSend(whisper, "left", "more");
  step.Op("assign").Input("X", "right").Output("Out", "left");
  FinishCountedLoop(step, "i");
  BlockBuilder& start = core::Go(pb, main, {"left"});
  Fill(start, "one", RILL_INT64, 1);
  core::ChannelSend(start, "left", "one");
  core::ChannelRecv(main, "leftmost", "result");
  return pb;
}

ProgramBuilder PingPong(int64_t rounds, bool with_select) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  core::MakeChannel(main, "ping");
  core::MakeChannel(main, "pong");
  core::MakeChannel(main, "quit");
  Fill(main, "ball", RILL_INT64, 1);
  Fill(main, "echoed", RILL_INT64, 0);
  BlockBuilder& echo = Forever(pb, core::Go(pb, main, {"ping", "pong", "quit"}));
  if (with_select) {
    core::Select select(pb, echo);
    core::ChannelSend(select.Recv("ping", "v"), "pong", "v");
    select.Recv("quit", "stop");
  } else {
    core::ChannelRecv(echo, "ping", "v");
    core::ChannelSend(echo, "pong", "v");
  }
  BlockBuilder& round = CountedLoop(pb, main, "i", rounds);
  core::ChannelSend(round, "ping", "ball", /*copy=*/true);
  core::ChannelRecv(round, "pong", "echoed");
  FinishCountedLoop(round, "i");
  return pb;
}

ProgramBuilder ProducerConsumer(int64_t n, int64_t capacity) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  core::MakeChannel(main, "ch", core::kLodTensorType, capacity);
  BlockBuilder& producer = core::Go(pb, main, {"ch"});
  Fill(producer, "one", RILL_INT64, 1);
  BlockBuilder& produce = CountedLoop(pb, producer, "j", n);
  core::ChannelSend(produce, "ch", "one", /*copy=*/true);
  FinishCountedLoop(produce, "j");
  Fill(main, "sum", RILL_INT64, 0);
  ReceiveAndAdd(pb, main, "ch", n, "sum");
  return pb;
}

ProgramBuilder SpawnMany(int64_t n, int64_t batch) {
  ProgramBuilder pb;
  BlockBuilder& main = pb.block(0);
  core::MakeChannel(main, "done", core::kLodTensorType, batch);
  Fill(main, "count", RILL_INT64, 0);
  BlockBuilder& batches = CountedLoop(pb, main, "batch", n / batch);
  BlockBuilder& spawn = CountedLoop(pb, batches, "i", batch);
  BlockBuilder& task = core::Go(pb, spawn, {"done"});
  Fill(task, "one", RILL_INT64, 1);
  core::ChannelSend(task, "done", "one");
  FinishCountedLoop(spawn, "i");
  ReceiveAndAdd(pb, batches, "done", batch, "count");
  FinishCountedLoop(batches, "batch");
  return pb;
}

}  // namespace rill::examples
