// recv: the trainer's parameter pull and the seed's pserver op, under one name.
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
      ReportingFailure([&] { fetcher_->Fetch(ctx, TrainerSession::Get().iteration()); });
    } else {
      ListenAndServ(ctx);
    }
  }

 private:
  std::unique_ptr<ParameterFetcher> fetcher_;
};

}  // namespace

void RegisterRecv(Registrar& r) {
  const Transport& t = ThisTransport();
  r.Op(OpSchema(t.recv)
           .Doc("(" + t.name +
                ") With Out: the trainer pulls the parameters Out[i] from the pservers epmap[i], as they are "
                "at the trainer's current iteration (in a trainer's startup program: the pservers' initial "
                "values). Without Out: the seed's name for " +
                t.listen_and_serv + ", with the same attributes.")
           .Input("RX", "seed form: the gradients received (documentation)", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .Output("Out", "trainer form: the parameters to pull", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .OptionalAttr("epmap", RILL_ATTR_STRINGS, "trainer form: the pserver endpoint of each Out")
           .Attr("trainer_id", int64_t{-1}, "trainer form: this trainer's index; " + t.trainer_id_doc)
           .OptionalAttr("endpoint", RILL_ATTR_STRING, "seed form: HOST:PORT to listen on")
           .OptionalAttr("OptimizeBlock", RILL_ATTR_BLOCK, "seed form: the optimize block")
           .OptionalAttr("ParamList", RILL_ATTR_STRINGS, "seed form: the parameters served")
           .OptionalAttr("GradList", RILL_ATTR_STRINGS, "seed form: their gradients")
           .Attr("Fanin", int64_t{1}, "seed form: the number of trainers")
           .Attr("sync_mode", true, "Fluid's attribute; a parameter pull is the same in either mode")
           .Attr("deadline_ms", int64_t{0}, "deadline in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.StatefulKernel<Recv>(t.recv.c_str(), RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::dist
