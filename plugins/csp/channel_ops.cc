// channel_create, channel_send, channel_recv, channel_close: Fluid's channel ops.
#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

// The Channel input's variable, or a null view if no scope has it (ChannelOf explains).
Variable ChannelVar(KernelContext& ctx) { return Variable(Host().ctx_input(ctx.handle(), "Channel", 0)); }

// Whether the op lists a Status output, read once per op instance.
bool HasStatus(const OpInfo& op) { return op.OutputCount("Status") > 0; }

void SetStatus(KernelContext& ctx, bool ok) { *ctx.AllocateOutput<bool>("Status", {1}) = ok; }

void Create(KernelContext& ctx) {
  auto channel = Channel::Make(static_cast<int32_t>(ctx.Attr<int64_t>("data_type")), ctx.Attr<int64_t>("capacity"));
  ctx.OutputVar("Out").SetCustom(kChannelType, new ChannelRef{std::move(channel)});
}

class Send {
 public:
  explicit Send(const OpInfo& op)
      : channel_(op.InputName("Channel")),
        copy_(op.Attr<bool>("copy")),
        status_(HasStatus(op)),
        what_("sending to channel '" + channel_ + "'") {}
  void Compute(KernelContext& ctx) {
    ChannelOf(ChannelVar(ctx), channel_).Send(ctx.InputVar("X"), copy_, ctx.handle(), what_.c_str());
    if (status_) SetStatus(ctx, true);
  }

 private:
  const std::string channel_;
  const bool copy_;
  const bool status_;
  const std::string what_;
};

class Recv {
 public:
  explicit Recv(const OpInfo& op)
      : channel_(op.InputName("Channel")),
        status_(HasStatus(op)),
        what_("receiving from channel '" + channel_ + "'") {}
  void Compute(KernelContext& ctx) {
    const bool ok = ChannelOf(ChannelVar(ctx), channel_).Recv(ctx.OutputVar("Out"), ctx.handle(), what_.c_str());
    if (status_) SetStatus(ctx, ok);
  }

 private:
  const std::string channel_;
  const bool status_;
  const std::string what_;
};

void Close(KernelContext& ctx) {
  ChannelOf(ChannelVar(ctx), ctx.op().InputName("Channel")).Close();
}

}  // namespace

void RegisterChannelOps(Registrar& r) {
  r.Op(OpSchema("channel_create")
           .Doc("Out = a new channel of data_type values with the given capacity (0: unbuffered).")
           .Output("Out", "the channel variable")
           .RequiredAttr("data_type", RILL_ATTR_INT,
                         "VarType.Type of the values: LOD_TENSOR (7), a tensor dtype, or CHANNEL (16)")
           .Attr("capacity", int64_t{0}, "buffered values; 0 makes an unbuffered (rendezvous) channel"));
  r.Op(OpSchema("channel_send")
           .Doc("Sends X on Channel, blocking until it is received (unbuffered) or buffered. X is "
                "moved (left empty) unless copy is set. Fails on a closed channel.")
           .Input("Channel", "the channel")
           .Input("X", "the value to send")
           .Output("Status", "bool [1], true once sent (Fluid's older contract)", RILL_SLOT_OPTIONAL)
           .Attr("copy", false, "send a copy and leave X as it is"));
  r.Op(OpSchema("channel_recv")
           .Doc("Receives a value from Channel into Out, blocking until one arrives. On a closed "
                "channel with nothing buffered, returns at once with Status false and Out set to "
                "its zero value (a tensor keeps its dtype and shape, all elements zero).")
           .Input("Channel", "the channel")
           .Output("Out", "the value received")
           .Output("Status", "bool [1]: true if a value was received, false if the channel is closed",
                   RILL_SLOT_OPTIONAL));
  r.Op(OpSchema("channel_close")
           .Doc("Closes Channel: every blocked receiver and sender wakes (receivers get Status "
                "false, senders fail); buffered values can still be received. Closing twice fails.")
           .Input("Channel", "the channel"));
  r.Kernel("channel_create", RILL_CPU, RILL_ANY_DTYPE, &Create);
  r.StatefulKernel<Send>("channel_send", RILL_CPU, RILL_ANY_DTYPE);
  r.StatefulKernel<Recv>("channel_recv", RILL_CPU, RILL_ANY_DTYPE);
  r.Kernel("channel_close", RILL_CPU, RILL_ANY_DTYPE, &Close);
}

}  // namespace rill::csp
