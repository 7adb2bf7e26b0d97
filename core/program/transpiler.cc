#include "core/program/transpiler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "core/errors.h"
#include "core/program/builder.h"
#include "rill/checked_size.hpp"

namespace rill::core {
namespace {

std::vector<std::string> Args(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars,
                              const std::string& slot = "") {
  std::vector<std::string> out;
  for (const auto& v : vars) {
    if (slot.empty() || v.parameter() == slot) out.insert(out.end(), v.arguments().begin(), v.arguments().end());
  }
  return out;
}

bool IsOptimizer(const proto::OpDesc& op) {
  return Args(op.inputs(), "Param").size() == 1 && Args(op.inputs(), "Grad").size() == 1 &&
         !Args(op.outputs(), "ParamOut").empty();
}

const proto::VarDesc* FindVar(const proto::ProgramDesc& program, const std::string& name) {
  if (program.blocks_size() == 0) return nullptr;
  for (const auto& v : program.blocks(0).vars()) {
    if (v.name() == name) return &v;
  }
  return nullptr;
}

// The declared element count, an unknown (-1) dimension counted as 1.
int64_t Elements(const proto::VarDesc* v) {
  if (v == nullptr || !v->type().has_lod_tensor()) return 1;
  std::vector<int64_t> dims;
  for (int64_t d : v->type().lod_tensor().tensor().dims()) dims.push_back(std::max<int64_t>(d, 1));
  const ShapeSize size = SizeOfShape(dims.data(), dims.size(), 1);
  if (!size.ok()) throw Error("variable '" + v->name() + "': declared " + size.error);
  return size.numel;
}

void CheckEndpoint(const std::string& e) {
  const auto colon = e.rfind(':');
  const std::string port = colon == std::string::npos ? "" : e.substr(colon + 1);
  if (colon == 0 || port.empty() || port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) < 1 ||
      std::stol(port) > 65535) {
    throw Error("pserver endpoint '" + e + "' is not HOST:PORT with a port in 1..65535");
  }
}

const proto::OpDesc::Attr* FindAttr(const proto::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
bool BoolAttr(const proto::OpDesc& op, const std::string& name) {
  const proto::OpDesc::Attr* a = FindAttr(op, name);
  return a != nullptr && a->b();
}
int64_t LongAttr(const proto::OpDesc& op, const std::string& name, int64_t otherwise) {
  const proto::OpDesc::Attr* a = FindAttr(op, name);
  if (a == nullptr) return otherwise;
  return a->type() == proto::LONG ? a->l() : a->i();
}

bool IsLookup(const proto::OpDesc& op) { return op.type() == "lookup_table" || op.type() == "lookup_table_v2"; }
bool IsLookupGrad(const proto::OpDesc& op) {
  return op.type() == "lookup_table_grad" || op.type() == "lookup_table_v2_grad";
}

// The number of the table's `height` rows that shard `s` of `shards` holds: row r lies on
// shard r % shards as its row r / shards (the rule of the dist plugin's table_shard.h,
// which core cannot include).
int64_t ShardRows(int64_t height, size_t s, size_t shards) {
  const auto p = static_cast<int64_t>(s), n = static_cast<int64_t>(shards);
  return (height - p + n - 1) / n;
}

void MaybeDeadline(OpBuilder op, int64_t deadline_ms) {
  if (deadline_ms > 0) op.Attr("deadline_ms", static_cast<int32_t>(deadline_ms));
}

}  // namespace

TranspiledPrograms Transpile(const proto::ProgramDesc& train, const proto::ProgramDesc& startup,
                             const TranspileOptions& options) {
  if (options.trainers < 1) throw Error("--trainers must be at least 1");
  if (options.pservers.empty()) throw Error("no pserver endpoints given");
  std::set<std::string> distinct;
  for (const auto& e : options.pservers) {
    CheckEndpoint(e);
    if (!distinct.insert(e).second) throw Error("pserver endpoint '" + e + "' is given twice");
  }
  if (train.blocks_size() == 0) throw Error("the training program has no blocks");
  const proto::BlockDesc& main = train.blocks(0);
  const int n = main.ops_size();

  std::map<std::string, std::vector<int>> readers, writers;
  for (int i = 0; i < n; ++i) {
    for (const auto& name : Args(main.ops(i).inputs())) readers[name].push_back(i);
    for (const auto& name : Args(main.ops(i).outputs())) writers[name].push_back(i);
  }
  // A variable as declared by the training program, else by its startup.
  auto declared = [&](const std::string& name) {
    const proto::VarDesc* v = FindVar(train, name);
    return v != nullptr ? v : FindVar(startup, name);
  };
  auto persistable = [&](const std::string& name) {
    const proto::VarDesc* v = declared(name);
    return v != nullptr && v->persistable();
  };

  // One optimizer op per parameter. A trainer sends the gradient the backward pass made,
  // P@GRAD (Fluid's name for it) when the program computes one, else the optimizer's Grad:
  // whatever lies between the two (clipping, regularization) then runs on the pserver on
  // the averaged gradient, as one process runs it on the whole batch.
  struct Param {
    std::string name, grad;  // grad: the variable the trainer sends
    int op;
    size_t pserver = 0;
  };
  std::vector<Param> params;
  std::set<std::string> sent;
  for (int i = 0; i < n; ++i) {
    if (!IsOptimizer(main.ops(i))) continue;
    const std::string p = Args(main.ops(i).inputs(), "Param")[0];
    for (const auto& q : params) {
      if (q.name == p)
        throw Error("parameter '" + p + "' has two optimizer ops (ops " + std::to_string(q.op) + " and " +
                    std::to_string(i) + ")");
    }
    const std::string backward_grad = p + "@GRAD";
    params.push_back({p, writers.count(backward_grad) ? backward_grad : Args(main.ops(i).inputs(), "Grad")[0], i});
    sent.insert(params.back().grad);
  }
  if (params.empty()) {
    throw Error(
        "block 0 has no optimizer op (an op with Param, Grad and ParamOut, e.g. sgd): nothing to "
        "distribute; `rill backward --sgd LR` appends one per parameter");
  }

  // Which ops move to the pservers: the optimizers, and every op whose outputs only moved
  // ops read (in this iteration or, through a persistable variable, the next: Adam's
  // beta-power updates after the update itself) and whose inputs a pserver has (persistable
  // state, a sent gradient, or what only moved ops write). What writes a sent gradient
  // stays. The largest such set: start from every op and drop those that break the rule
  // until none does, so that ops which feed each other (a clip, then a regularization
  // adding into the clipped gradient in place) move together.
  std::vector<bool> moves(n, true);
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = n - 1; i >= 0; --i) {
      const auto& op = main.ops(i);
      if (!moves[i] || IsOptimizer(op)) continue;
      bool read = false, movable = true;
      for (const auto& out : Args(op.outputs())) {
        movable = movable && sent.count(out) == 0;
        for (int r : readers[out]) {
          if (r == i) continue;
          read = true;
          movable = movable && moves[r];
        }
      }
      for (const auto& in : Args(op.inputs())) {
        const auto w = writers.find(in);
        const bool written_on_pserver =
            w != writers.end() && std::all_of(w->second.begin(), w->second.end(), [&](int j) { return moves[j]; });
        movable = movable && (persistable(in) || sent.count(in) > 0 || written_on_pserver);
      }
      if (!(read && movable)) {
        moves[i] = false;
        changed = true;
      }
    }
  }

  // The moved ops each parameter's update needs, and the sent gradients they read.
  auto closure = [&](const std::vector<int>& seeds) {
    std::vector<bool> here(n, false);
    std::set<std::string> needed;
    for (int i : seeds) {
      here[i] = true;
      for (const auto& in : Args(main.ops(i).inputs())) needed.insert(in);
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (int i = n - 1; i >= 0; --i) {
        if (!moves[i] || here[i]) continue;
        const auto outs = Args(main.ops(i).outputs());
        if (std::none_of(outs.begin(), outs.end(), [&](const std::string& o) { return needed.count(o) > 0; })) {
          continue;
        }
        here[i] = grew = true;
        for (const auto& in : Args(main.ops(i).inputs())) needed.insert(in);
      }
    }
    return here;
  };
  // A moved op no update needs (ops that only read each other) stays with the trainer.
  std::vector<int> optimizers;
  for (const auto& p : params) optimizers.push_back(p.op);
  const std::vector<bool> needed_by_some = closure(optimizers);
  for (int i = 0; i < n; ++i) moves[i] = moves[i] && needed_by_some[i];

  // Distributed lookup tables: a parameter that lookup_table reads with is_distributed is
  // row-sharded over every pserver (with the optimizer state shaped like it), never
  // pulled whole: a trainer prefetches the rows its batch looks up and sends back their
  // sparse gradient. Only lookups, their gradients and the table's optimizer may read it.
  struct Table {
    std::vector<int64_t> dims;  // the whole table's, as declared
    int32_t dtype = 0;
  };
  std::map<std::string, Table> tables;
  for (int i = 0; i < n; ++i) {
    const auto& op = main.ops(i);
    if (!IsLookup(op) || !BoolAttr(op, "is_distributed")) continue;
    const std::string w = Args(op.inputs(), "W").at(0);
    if (tables.count(w)) continue;
    const proto::VarDesc* v = declared(w);
    if (v == nullptr || !v->type().has_lod_tensor() || v->type().lod_tensor().tensor().dims_size() < 2) {
      throw Error("op " + std::to_string(i) + " (" + op.type() + ") looks up '" + w +
                  "' with is_distributed, which is not declared as a [rows, width] tensor");
    }
    Table t;
    for (int64_t d : v->type().lod_tensor().tensor().dims()) {
      if (d < 1) throw Error("distributed table '" + w + "' must be declared with its whole shape (no -1)");
      t.dims.push_back(d);
    }
    t.dtype = v->type().lod_tensor().tensor().data_type();
    tables.emplace(w, std::move(t));
  }
  // The tables, their sent gradients and their optimizers' state: each with its table's rows.
  std::map<std::string, int64_t> sharded;
  for (auto& [w, t] : tables) {
    const std::string& table = w;  // a structured binding cannot be captured by a lambda in C++17
    const auto p = std::find_if(params.begin(), params.end(), [&](const Param& q) { return q.name == table; });
    if (p == params.end()) throw Error("distributed table '" + w + "' has no optimizer op: nothing trains it");
    sharded[w] = sharded[p->grad] = t.dims[0];
    for (int i : readers[w]) {
      const auto& op = main.ops(i);
      if (IsLookup(op) && !(BoolAttr(op, "is_distributed") && BoolAttr(op, "is_sparse"))) {
        throw Error("op " + std::to_string(i) + " (" + op.type() + ") looks up distributed table '" + w +
                    "' without is_distributed and is_sparse: every lookup of a table sharded over the pservers "
                    "sets both (its gradient is the rows looked up)");
      }
      if (!IsLookup(op) && !IsLookupGrad(op) && i != p->op) {
        throw Error("op " + std::to_string(i) + " (" + op.type() + ") reads distributed table '" + w +
                    "', which no trainer holds whole: only its lookups and its optimizer may read it");
      }
    }
    for (int i : readers[p->grad]) {
      if (moves[i] && i != p->op) {
        throw Error("op " + std::to_string(i) + " (" + main.ops(i).type() + ") reads the gradient of distributed " +
                    "table '" + w + "' on the pservers (clipping or regularization): not supported for a table " +
                    "sharded over them");
      }
    }
    // Optimizer state shaped like the table (moments, velocities) is sharded with it.
    const auto& optimizer = main.ops(p->op);
    for (const auto& slot : optimizer.inputs()) {
      if (slot.parameter() == "Param" || slot.parameter() == "Grad") continue;
      for (const auto& in : slot.arguments()) {
        const proto::VarDesc* v = declared(in);
        if (v == nullptr || !v->type().has_lod_tensor()) continue;
        const auto& d = v->type().lod_tensor().tensor().dims();
        if (std::vector<int64_t>(d.begin(), d.end()) == t.dims) sharded[in] = t.dims[0];
      }
    }
  }

  // Parameters whose updates read each other's gradients (clipping by global norm) form
  // one group, and a group goes to one pserver: a pserver sees only the gradients sent to it.
  std::vector<size_t> group(params.size());
  for (size_t i = 0; i < params.size(); ++i) group[i] = i;
  std::function<size_t(size_t)> root = [&](size_t i) { return group[i] == i ? i : group[i] = root(group[i]); };
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<bool> here = closure({params[i].op});
    for (size_t j = 0; j < params.size(); ++j) {
      const auto& r = readers[params[j].grad];
      if (std::any_of(r.begin(), r.end(), [&](int op) { return here[op]; })) group[root(j)] = root(i);
    }
  }

  // Placement: the largest group first onto the least loaded pserver.
  auto size_of = [&](const Param& p) { return Elements(declared(p.name)); };
  std::map<size_t, int64_t> group_size;
  for (size_t i = 0; i < params.size(); ++i) {
    if (tables.count(params[i].name)) continue;  // on every pserver
    int64_t& total = group_size[root(i)];
    if (!CheckedAdd(total, size_of(params[i]), &total)) {
      throw Error("the parameters updated with '" + params[i].name + "' have more elements than int64 can count");
    }
  }
  std::vector<std::pair<size_t, int64_t>> order(group_size.begin(), group_size.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (order.size() < options.pservers.size() && tables.empty()) {
    throw Error(std::to_string(options.pservers.size()) + " pservers for " + std::to_string(order.size()) +
                " group(s) of parameters: each group goes to one pserver (parameters whose updates read each "
                "other's gradients, as clipping by global norm does, are one group), so give at most " +
                std::to_string(order.size()) + " pserver(s)");
  }
  std::vector<int64_t> load(options.pservers.size(), 0);
  std::map<size_t, size_t> group_pserver;
  for (const auto& [g, size] : order) {
    const size_t p = std::min_element(load.begin(), load.end()) - load.begin();
    group_pserver[g] = p;
    if (!CheckedAdd(load[p], size, &load[p])) {
      throw Error("the parameters placed on " + options.pservers[p] + " have more elements than int64 can count");
    }
  }
  constexpr size_t kEveryPserver = SIZE_MAX;  // a table's shards
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].pserver = tables.count(params[i].name) ? kEveryPserver : group_pserver[root(i)];
  }
  const auto on = [&](const Param& p, size_t s) { return p.pserver == s || p.pserver == kEveryPserver; };

  TranspiledPrograms out;
  for (const auto& p : params) {
    for (size_t s = 0; s < options.pservers.size(); ++s) {
      if (on(p, s)) out.placement.emplace_back(p.name, options.pservers[s]);
    }
  }

  auto declare = [&](BlockBuilder& block, const std::string& name, const std::string& like, bool persistable) {
    for (const auto& v : block.desc()->vars()) {
      if (v.name() == name) return;
    }
    const proto::VarDesc* src = declared(like);
    proto::VarDesc* v = block.desc()->add_vars();
    if (src != nullptr) *v = *src;
    v->set_name(name);
    v->set_persistable(persistable);
    if (src == nullptr) v->mutable_type()->set_type(proto::VarType::LOD_TENSOR);
  };

  // Pservers.
  for (size_t s = 0; s < options.pservers.size(); ++s) {
    std::vector<int> seeds;
    for (const auto& p : params) {
      if (on(p, s)) seeds.push_back(p.op);
    }
    const std::vector<bool> here = closure(seeds);
    ProgramBuilder pb;
    BlockBuilder& top = pb.block(0);
    BlockBuilder& optimize = pb.NewBlock(0);
    std::vector<std::string> param_list, grad_list;
    std::set<std::string> produced, held;  // by the optimize block; persistable on this pserver
    for (const auto& p : params) {
      if (!on(p, s)) continue;
      param_list.push_back(p.name);
      grad_list.push_back(p.grad);
      declare(top, p.name, p.name, true);
      declare(top, p.grad, p.name, false);
      held.insert(p.name);
    }
    for (int i = 0; i < n; ++i) {
      if (!here[i]) continue;
      const auto& op = main.ops(i);
      for (const auto& in : Args(op.inputs())) {
        if (produced.count(in) || held.count(in) ||
            std::find(grad_list.begin(), grad_list.end(), in) != grad_list.end()) {
          continue;
        }
        if (!persistable(in)) {
          throw Error("op " + std::to_string(i) + " (" + op.type() + ") moves to pserver " + options.pservers[s] +
                      " but reads '" + in + "', which the trainer computes");
        }
        declare(top, in, in, true);
        held.insert(in);
      }
      for (const auto& o : Args(op.outputs())) {
        produced.insert(o);
        if (held.count(o) == 0) {
          if (const proto::VarDesc* v = FindVar(train, o)) *optimize.desc()->add_vars() = *v;
        }
      }
      *optimize.desc()->add_ops() = op;
    }
    // This pserver's shard of each table and of its state: ShardRows of the rows.
    const auto shard_rows = [&](const std::string& name) {
      return ShardRows(sharded.at(name), s, options.pservers.size());
    };
    for (BlockBuilder* block : {&top, &optimize}) {
      for (auto& v : *block->desc()->mutable_vars()) {
        if (sharded.count(v.name()) && v.type().has_lod_tensor() && v.type().lod_tensor().tensor().dims_size() > 0) {
          v.mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_dims(0, shard_rows(v.name()));
        }
      }
    }
    OpBuilder serve = top.Op(options.serve_op);
    serve.Input("X", grad_list)
        .Attr("endpoint", options.pservers[s])
        .BlockAttr("OptimizeBlock", optimize.idx())
        .Attr("ParamList", param_list)
        .Attr("GradList", grad_list)
        .Attr("Fanin", options.trainers)
        .Attr("sync_mode", options.sync);
    if (!options.sync) serve.Attr("max_staleness", options.max_staleness);
    if (!options.checkpoint_dir.empty()) {
      // What this pserver holds, with its iteration: saved by one block, restored by another.
      top.Var(kCheckpointIterationVar, RILL_INT64, {1}, true);
      std::vector<std::string> kept(held.begin(), held.end());
      kept.push_back(kCheckpointIterationVar);
      const std::string path = options.checkpoint_dir + "/pserver_" + std::to_string(s) + ".ckpt";
      BlockBuilder& save = pb.NewBlock(0);
      save.Op("save_combine").Input("X", kept).Attr("file_path", path);
      BlockBuilder& restore = pb.NewBlock(0);
      restore.Op("load_combine").Output("Out", kept).Attr("file_path", path);
      serve.Attr("checkpoint_path", path)
          .Attr("checkpoint_every", options.checkpoint_every)
          .Attr("checkpoint_iteration", std::string(kCheckpointIterationVar))
          .BlockAttr("CheckpointBlock", save.idx())
          .BlockAttr("RestoreBlock", restore.idx());
    }
    MaybeDeadline(serve, options.deadline_ms);
    out.pservers.push_back(pb.Build());

    // Its startup: the ops that initialize what it holds.
    ProgramBuilder sb;
    for (const auto& name : held) {
      const proto::VarDesc* v = FindVar(startup, name);
      if (v == nullptr) continue;
      proto::VarDesc* d = sb.block(0).desc()->add_vars();
      *d = *v;
      if (sharded.count(name) && d->type().has_lod_tensor() && d->type().lod_tensor().tensor().dims_size() > 0) {
        d->mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_dims(0, shard_rows(name));
      }
    }
    if (startup.blocks_size() > 0) {
      for (const auto& op : startup.blocks(0).ops()) {
        const auto outs = Args(op.outputs());
        if (std::none_of(outs.begin(), outs.end(), [&](const std::string& o) { return held.count(o) > 0; })) {
          continue;
        }
        proto::OpDesc* init = sb.block(0).desc()->add_ops();
        *init = op;
        for (const auto& o : outs) {
          if (sharded.count(o) == 0) continue;
          // Each pserver draws its own shard: the same initializer, shaped as the shard.
          proto::OpDesc::Attr* shape = nullptr;
          for (auto& a : *init->mutable_attrs()) {
            if (a.name() == "shape") shape = &a;
          }
          const int64_t whole = sharded.at(o);
          const bool longs = shape != nullptr && shape->longs_size() > 0;
          if (outs.size() != 1 || shape == nullptr || (longs ? shape->longs(0) : shape->ints(0)) != whole) {
            throw Error("startup op " + op.type() + " initializes '" + o + "', which is sharded over the pservers, " +
                        "but not by a shape attribute of its " + std::to_string(whole) +
                        " rows alone: give it an initializer with a shape (fill_constant, uniform_random, ...)");
          }
          if (longs) {
            shape->set_longs(0, shard_rows(o));
          } else {
            shape->set_ints(0, static_cast<int32_t>(shard_rows(o)));
          }
        }
      }
    }
    out.pserver_startups.push_back(sb.Build());
  }

  // The trainer: everything that stays, a prefetch before the lookups of each table, then
  // one send.
  out.trainer = train;
  auto* ops = out.trainer.mutable_blocks(0)->mutable_ops();
  ops->Clear();
  // Lookups of one table share a prefetch (every Ids they read, fetched before the first)
  // while their Ids are all written before it and their padding_idx is the same.
  struct Prefetch {
    std::string table;
    std::vector<std::string> ids;
    int64_t padding;
    int at;  // the first lookup
  };
  std::vector<Prefetch> prefetches;
  std::map<int, size_t> prefetch_before;  // op index -> prefetches index
  for (int i = 0; i < n; ++i) {
    const auto& op = main.ops(i);
    if (moves[i] || !IsLookup(op)) continue;
    const std::string w = Args(op.inputs(), "W").at(0);
    if (!tables.count(w)) continue;
    const std::vector<std::string> ids = Args(op.inputs(), "Ids");
    const int64_t padding = LongAttr(op, "padding_idx", -1);
    Prefetch* joined = nullptr;
    for (auto it = prefetches.rbegin(); it != prefetches.rend() && joined == nullptr; ++it) {
      if (it->table != w) continue;
      const bool ready = std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
        const auto& ws = writers[id];
        return std::none_of(ws.begin(), ws.end(), [&](int j) { return j >= it->at && j < i; });
      });
      if (ready && it->padding == padding) joined = &*it;
      break;  // only the table's latest prefetch may take more
    }
    if (joined == nullptr) {
      prefetch_before[i] = prefetches.size();
      prefetches.push_back({w, {}, padding, i});
      joined = &prefetches.back();
    }
    for (const auto& id : ids) {
      if (std::find(joined->ids.begin(), joined->ids.end(), id) == joined->ids.end()) joined->ids.push_back(id);
    }
  }
  BlockBuilder trainer_main(out.trainer.mutable_blocks(0));
  for (int i = 0; i < n; ++i) {
    if (const auto it = prefetch_before.find(i); it != prefetch_before.end()) {
      const Prefetch& f = prefetches[it->second];
      OpBuilder fetch = trainer_main.Op(options.prefetch_op);
      fetch.Input("Ids", f.ids)
          .Output("Out", f.table)
          .Attr("endpoints", options.pservers)
          .Attr("shape", tables[f.table].dims)
          .Attr("dtype", tables[f.table].dtype)
          .Attr("padding_idx", f.padding);
      if (!options.checkpoint_dir.empty()) fetch.Attr("rejoin", true);
      MaybeDeadline(fetch, options.deadline_ms);
    }
    if (!moves[i]) *ops->Add() = main.ops(i);
  }
  std::vector<std::string> grads, names, epmap, table_grads;
  for (const auto& p : params) {
    if (tables.count(p.name)) {
      table_grads.push_back(p.grad);
      continue;
    }
    grads.push_back(p.grad);
    names.push_back(p.name);
    epmap.push_back(options.pservers[p.pserver]);
  }
  OpBuilder send = trainer_main.Op(options.send_op);
  send.Input("X", grads)
      .Output("Out", names)
      .Attr("endpoints", options.pservers)
      .Attr("epmap", epmap)
      .Attr("sync_mode", options.sync);
  if (!table_grads.empty()) send.Input("ShardedX", table_grads);
  if (!options.checkpoint_dir.empty()) send.Attr("rejoin", true);
  MaybeDeadline(send, options.deadline_ms);

  // Its startup: the startup program but the tables' initializers (the pservers draw the
  // shards), then a pull of every other parameter.
  out.trainer_startup = startup;
  if (out.trainer_startup.blocks_size() == 0) {
    auto* b = out.trainer_startup.add_blocks();
    b->set_idx(0);
    b->set_parent_idx(-1);
  }
  auto* init_vars = out.trainer_startup.mutable_blocks(0)->mutable_vars();
  for (int i = init_vars->size() - 1; i >= 0; --i) {
    if (tables.count(init_vars->Get(i).name())) init_vars->DeleteSubrange(i, 1);
  }
  auto* init_ops = out.trainer_startup.mutable_blocks(0)->mutable_ops();
  for (int i = init_ops->size() - 1; i >= 0; --i) {
    const auto outs = Args(init_ops->Get(i).outputs());
    if (std::any_of(outs.begin(), outs.end(), [&](const std::string& o) { return tables.count(o) > 0; })) {
      init_ops->DeleteSubrange(i, 1);
    }
  }
  BlockBuilder trainer_init(out.trainer_startup.mutable_blocks(0));
  OpBuilder recv = trainer_init.Op(options.recv_op);
  recv.Output("Out", names).Attr("epmap", epmap);
  MaybeDeadline(recv, options.deadline_ms);
  return out;
}

}  // namespace rill::core
