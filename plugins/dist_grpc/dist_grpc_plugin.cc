// The gRPC transport plugin (see ARCHITECTURE.md, "Distribution").
#include <grpc/support/log.h>

#include <memory>

#include "ops.h"

namespace rill::dist {
namespace {

// recv is two ops in Fluid's history: the seed's pserver op (what listen_and_serv became)
// and the trainer's parameter pull. Out tells them apart.
class Recv {
 public:
  explicit Recv(const OpInfo& op) {
    if (op.OutputCount("Out") > 0) fetcher_ = std::make_unique<ParameterFetcher>(op);
  }
  void Compute(KernelContext& ctx) {
    if (fetcher_) {
      fetcher_->Fetch(ctx, TrainerSession::Get().iteration());
    } else {
      ListenAndServ(ctx);
    }
  }

 private:
  std::unique_ptr<ParameterFetcher> fetcher_;
};

}  // namespace

void RegisterRecv(Registrar& r) {
  r.Op(OpSchema("recv")
           .Doc("With Out: the trainer pulls the parameters Out[i] from the pservers epmap[i], as they are "
                "at the trainer's current iteration (in a trainer's startup program: the pservers' initial "
                "values). Without Out: the seed's name for listen_and_serv, with the same attributes.")
           .Input("RX", "seed form: the gradients received (documentation)", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Output("Out", "trainer form: the parameters to pull", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .OptionalAttr("epmap", RILL_ATTR_STRINGS, "trainer form: the pserver endpoint of each Out")
           .Attr("trainer_id", int64_t{-1}, "trainer form: this trainer's index; -1: RILL_TRAINER_ID or 0")
           .OptionalAttr("endpoint", RILL_ATTR_STRING, "seed form: HOST:PORT to listen on")
           .OptionalAttr("OptimizeBlock", RILL_ATTR_BLOCK, "seed form: the optimize block")
           .OptionalAttr("ParamList", RILL_ATTR_STRINGS, "seed form: the parameters served")
           .OptionalAttr("GradList", RILL_ATTR_STRINGS, "seed form: their gradients")
           .Attr("Fanin", int64_t{1}, "seed form: the number of trainers")
           .Attr("sync_mode", true, "synchronous training (the only mode supported)")
           .Attr("deadline_ms", int64_t{0}, "deadline in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.StatefulKernel<Recv>("recv", RILL_CPU, RILL_ANY_DTYPE);
}

namespace {

// gRPC's own log goes through the host's: its errors are details of ours (which say what
// failed and where), so they show at --log-level info.
void ForwardGrpcLog(gpr_log_func_args* args) {
  Log(args->severity == GPR_LOG_SEVERITY_ERROR ? RILL_LOG_INFO : RILL_LOG_DEBUG, std::string("grpc: ") + args->message);
}

void Init(Registrar& r) {
  gpr_set_log_function(&ForwardGrpcLog);
  RegisterSend(r);
  RegisterListenAndServ(r);
  RegisterRecv(r);
}

}  // namespace
}  // namespace rill::dist

RILL_PLUGIN("dist_grpc", "1.0", rill::dist::Init)
