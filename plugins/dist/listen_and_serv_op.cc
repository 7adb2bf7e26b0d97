// The pserver's op: listen_and_serv (and recv without Out, the seed's name for it), under
// the names of the transport that registered it.
#include <filesystem>

#include "ops.h"
#include "pserver.h"

namespace rill::dist {
namespace {

void Serve(KernelContext& ctx) {
  const OpInfo op = ctx.op();
  const auto params = op.Attr<std::vector<std::string>>("ParamList");
  const auto grads = op.Attr<std::vector<std::string>>("GradList");
  if (params.empty() || params.size() != grads.size()) {
    throw Error(op.type() + ": ParamList and GradList must pair one gradient with each parameter; got " +
                std::to_string(params.size()) + " and " + std::to_string(grads.size()));
  }
  TrainingMode mode;
  mode.sync = op.Attr<bool>("sync_mode");
  mode.max_staleness = op.Attr<int64_t>("max_staleness");
  if (mode.sync && mode.max_staleness >= 0) {
    throw Error(op.type() + ": max_staleness " + std::to_string(mode.max_staleness) +
                " bounds asynchronous training; with sync_mode true every step is in lockstep: leave it -1");
  }
  if (mode.max_staleness < -1) {
    throw Error(op.type() + ": max_staleness " + std::to_string(mode.max_staleness) +
                " is negative; give -1 (no bound) or a number of iterations");
  }
  const std::string endpoint = op.Attr<std::string>("endpoint");
  CheckEndpoint(op.type(), endpoint);
  const int32_t optimize_block = op.BlockAttr("OptimizeBlock");
  const Scope& scope = ctx.scope();

  // A checkpoint of an earlier run of this pserver (it died, and was started again): what it
  // held, with its iteration, replaces what the startup program made.
  Checkpointing checkpointing;
  checkpointing.path = op.Attr<std::string>("checkpoint_path");
  int64_t iteration = 0;
  std::string iteration_var;
  if (!checkpointing.path.empty()) {
    checkpointing.every = op.Attr<int64_t>("checkpoint_every");
    if (checkpointing.every < 1) {
      throw Error(op.type() + ": checkpoint_every " + std::to_string(checkpointing.every) +
                  " is not a number of iterations; give 1 or more");
    }
    iteration_var = op.Attr<std::string>("checkpoint_iteration");
    if (std::filesystem::exists(checkpointing.path)) {
      ctx.RunBlock(op.BlockAttr("RestoreBlock"), scope);
      Variable v = scope.FindVar(iteration_var);
      if (!v || !v.initialized() || v.tensor().dtype() != RILL_INT64 || v.tensor().numel() != 1) {
        throw Error(op.type() + ": checkpoint '" + checkpointing.path + "' has no int64 iteration '" + iteration_var +
                    "'");
      }
      iteration = *v.tensor().data<int64_t>();
      checkpointing.restored = iteration;
      Log(RILL_LOG_INFO,
          op.type() + ": restored iteration " + std::to_string(iteration) + " from " + checkpointing.path);
    }
  }

  std::vector<ParamSpec> specs(params.size());
  std::vector<Variable> param_vars;
  for (size_t i = 0; i < params.size(); ++i) {
    Variable v = scope.FindVar(params[i]);
    if (!v || !v.initialized()) {
      throw Error(op.type() + ": parameter '" + params[i] +
                  "' is not initialized; run the pserver's startup program first");
    }
    Tensor t = v.tensor();  // on the CPU: BytesOf checks that in snapshot() below
    specs[i] = ParamSpec{params[i], grads[i], t.dtype(), t.dims()};
    param_vars.push_back(v);
  }
  auto snapshot = [&] {
    std::vector<TensorBytes> out;
    for (size_t i = 0; i < params.size(); ++i) out.push_back(BytesOf(param_vars[i].tensor(), params[i]));
    return out;
  };

  const TransportOptions options = TransportOptions::Resolve(op.Attr<int64_t>("deadline_ms"));
  const Transport& transport = ThisTransport();
  const std::shared_ptr<DataPath> data_path =
      transport.join_as_pserver ? transport.join_as_pserver(endpoint, options) : nullptr;
  ParameterServer server(endpoint, static_cast<int32_t>(op.Attr<int64_t>("Fanin")), specs, options, data_path.get(),
                         mode);
  server.Start(snapshot(), iteration, checkpointing);
  Log(RILL_LOG_INFO, op.type() + ": serving " + std::to_string(params.size()) + " parameters on " + server.endpoint() +
                         " for " + std::to_string(op.Attr<int64_t>("Fanin")) + " trainers, " + mode.Describe());
  PserverHooks hooks;
  hooks.gradient = [&](size_t i) {
    Variable v = scope.Var(grads[i]);
    if (v.IsSelectedRows()) v.MoveFrom(OwnedVariable().get());  // sparse last time: empty it
    return v.tensor().Allocate(specs[i].dtype, specs[i].dims);
  };
  hooks.sparse_gradient = [&](size_t i, const std::vector<int64_t>& rows) {
    std::vector<int64_t> dims = specs[i].dims;
    dims[0] = static_cast<int64_t>(rows.size());
    return scope.Var(grads[i])
        .SetSelectedRows(rows.data(), rows.size(), specs[i].dims[0])
        .Allocate(specs[i].dtype, dims);
  };
  hooks.optimize = [&] { ctx.RunBlock(optimize_block, scope); };
  hooks.parameters = snapshot;
  if (!checkpointing.path.empty()) {
    hooks.checkpoint_every = checkpointing.every;
    const int32_t save_block = op.BlockAttr("CheckpointBlock");
    hooks.checkpoint = [&, save_block](int64_t k) {
      *scope.Var(iteration_var).tensor().Allocate<int64_t>({1}) = k;
      ctx.RunBlock(save_block, scope);  // save_combine: written aside, then renamed over the last
    };
  }
  server.Serve(hooks);
}

}  // namespace

void ListenAndServ(KernelContext& ctx) {
  ReportingFailure([&] { Serve(ctx); });
}

void RegisterListenAndServ(Registrar& r) {
  const Transport& t = ThisTransport();
  r.Op(OpSchema(t.listen_and_serv)
           .Doc("Pserver side of parameter-server training (" + t.name +
                "): listens on `endpoint` (that "
                "address only). Sync mode: for each iteration waits until all Fanin trainers sent their gradients "
                "and barrier, writes each GradList variable as the average of the trainers' gradients "
                "(SelectedRows from every trainer stay SelectedRows, their values scaled by 1/trainers), runs "
                "OptimizeBlock once, then serves the ParamList parameters. Async mode (sync_mode false): runs "
                "OptimizeBlock on each trainer's step alone, as it arrives, with that trainer's gradients as "
                "they are, and answers the step with the parameters; max_staleness S >= 0 holds a trainer's "
                "answer until no other trainer is more than S steps behind. Ends when every trainer "
                "completed. A trainer missing past the deadline (deadline_ms, or RILL_RPC_DEADLINE_MS) is an "
                "error naming it. Parameters must be initialized first (the pserver's startup program). "
                "RILL_DIST_TOKEN and RILL_TLS_CERT/RILL_TLS_KEY secure it. " +
                t.doc)
           .Input("X", "the gradients received (documentation; GradList is what counts)",
                  RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .RequiredAttr("endpoint", RILL_ATTR_STRING, "HOST:PORT to listen on")
           .RequiredAttr("OptimizeBlock", RILL_ATTR_BLOCK, "the block that applies the averaged gradients")
           .RequiredAttr("ParamList", RILL_ATTR_STRINGS, "the parameters this pserver owns")
           .RequiredAttr("GradList", RILL_ATTR_STRINGS, "the gradient of each parameter, in ParamList's order")
           .Attr("Fanin", int64_t{1}, "the number of trainers")
           .Attr("sync_mode", true, "synchronous training; false: asynchronous")
           .Attr("max_staleness", int64_t{-1},
                 "async only: how many steps a trainer may run ahead of the slowest other trainer still "
                 "training; -1: no bound")
           .Attr("checkpoint_path", std::string(),
                 "set: every checkpoint_every iterations, CheckpointBlock writes what this pserver holds and "
                 "the iteration there; a pserver started when the file exists restores it first "
                 "(RestoreBlock) and goes on from that iteration")
           .Attr("checkpoint_every", int64_t{10}, "iterations between checkpoints")
           .Attr("checkpoint_iteration", std::string(), "the int64 [1] variable the checkpoint keeps the iteration in")
           .OptionalAttr("CheckpointBlock", RILL_ATTR_BLOCK,
                         "the block that writes the checkpoint (with checkpoint_path)")
           .OptionalAttr("RestoreBlock", RILL_ATTR_BLOCK, "the block that reads it back (with checkpoint_path)")
           .Attr("deadline_ms", int64_t{0},
                 "how long to wait for a trainer, in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.Kernel(t.listen_and_serv.c_str(), RILL_CPU, RILL_ANY_DTYPE, &ListenAndServ);
}

}  // namespace rill::dist
