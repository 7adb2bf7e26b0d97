// channel_create, channel_send, channel_recv, channel_close: Fluid's channel ops.
#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

// Whether the op lists a Status output, read once per op instance.
bool HasStatus(const OpInfo& op) { return op.OutputCount("Status") > 0; }

// Attributes and slot read once per op instance: a daisy chain makes a channel per go
// block, and looking them up by name was most of what a channel_create cost.
class Create {
 public:
  explicit Create(const OpInfo& op)
      : data_type_(static_cast<int32_t>(op.Attr<int64_t>("data_type"))),
        capacity_(op.Attr<int64_t>("capacity")),
        out_(op.OutputSlot("Out")),
        type_(VarType::Find(kChannelType)) {}
  void Compute(KernelContext& ctx) { ctx.OutputVar(out_).SetCustom(type_, Channel::MakeHeld(data_type_, capacity_)); }

 private:
  const int32_t data_type_;
  const int64_t capacity_;
  const Slot out_;
  const VarType type_;
};

class Send {
 public:
  explicit Send(const OpInfo& op)
      : channel_slot_(op.InputSlot("Channel")),
        x_(op.InputSlot("X")),
        status_(op.OutputSlot("Status")),
        channel_(op.InputName("Channel")),
        copy_(op.Attr<bool>("copy")),
        has_status_(HasStatus(op)),
        what_("sending to channel '" + channel_ + "'") {}
  void Compute(KernelContext& ctx) {
    ChannelOf(ctx.InputVarOrNull(channel_slot_), channel_).Send(ctx.InputVar(x_), copy_, ctx.handle(), what_.c_str());
    if (has_status_) ctx.OutputVar(status_).SetScalar(true);
  }

 private:
  const Slot channel_slot_, x_, status_;
  const std::string channel_;
  const bool copy_;
  const bool has_status_;
  const std::string what_;
};

class Recv {
 public:
  explicit Recv(const OpInfo& op)
      : channel_slot_(op.InputSlot("Channel")),
        out_(op.OutputSlot("Out")),
        status_(op.OutputSlot("Status")),
        channel_(op.InputName("Channel")),
        has_status_(HasStatus(op)),
        what_("receiving from channel '" + channel_ + "'") {}
  void Compute(KernelContext& ctx) {
    const bool ok =
        ChannelOf(ctx.InputVarOrNull(channel_slot_), channel_).Recv(ctx.OutputVar(out_), ctx.handle(), what_.c_str());
    if (has_status_) ctx.OutputVar(status_).SetScalar(ok);
  }

 private:
  const Slot channel_slot_, out_, status_;
  const std::string channel_;
  const bool has_status_;
  const std::string what_;
};

void Close(KernelContext& ctx) { ChannelOf(ctx.InputVarOrNull("Channel"), ctx.op().InputName("Channel")).Close(); }

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
  r.StatefulKernel<Create>("channel_create", RILL_CPU, RILL_ANY_DTYPE);
  r.StatefulKernel<Send>("channel_send", RILL_CPU, RILL_ANY_DTYPE);
  r.StatefulKernel<Recv>("channel_recv", RILL_CPU, RILL_ANY_DTYPE);
  r.Kernel("channel_close", RILL_CPU, RILL_ANY_DTYPE, &Close);
}

}  // namespace rill::csp
