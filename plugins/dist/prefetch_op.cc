// prefetch: a trainer's rows of a distributed lookup table (Fluid's prefetch), the table
// row-sharded over the pservers so that it never exists whole on a trainer.
//
// The table's row r lives on pserver endpoints[r % P] as that shard's row r / P
// (table_shard.h). The op gathers the distinct ids of its Ids inputs, asks each pserver for
// its rows in one Prefetch call (all pservers at once), and writes Out, the table's
// variable on the trainer, as SelectedRows of exactly those rows: the table's row numbers,
// its height, and their values. lookup_table then reads Out as it reads a whole table;
// its gradient is SelectedRows of the same row numbers, which send splits the same way.
#include <algorithm>
#include <cstring>

#include "ops.h"
#include "table_shard.h"

namespace rill::dist {
namespace {

// The ids in an Ids input: int64 or int32, any shape.
void AppendIds(Tensor ids, const std::string& name, std::vector<int64_t>* out) {
  if (!ids.initialized()) throw Error("Ids '" + name + "' holds no tensor");
  const size_t n = static_cast<size_t>(ids.numel());
  if (ids.dtype() == RILL_INT64) {
    const int64_t* p = ids.data<int64_t>();
    out->insert(out->end(), p, p + n);
  } else if (ids.dtype() == RILL_INT32) {
    const int32_t* p = ids.data<int32_t>();
    out->insert(out->end(), p, p + n);
  } else {
    throw Error("Ids '" + name + "' is " + DataTypeName(ids.dtype()) + "; ids are int64 or int32");
  }
}

class Prefetch {
 public:
  explicit Prefetch(const OpInfo& op)
      : options_(TransportOptions::Resolve(op.Attr<int64_t>("deadline_ms"))),
        trainer_id_(JoinAsTrainer(op, options_)),
        shards_(op.Attr<std::vector<std::string>>("endpoints")),
        shape_(op.Attr<std::vector<int64_t>>("shape")),
        dtype_(static_cast<int32_t>(op.Attr<int64_t>("dtype"))),
        padding_(op.Attr<int64_t>("padding_idx")),
        rejoin_(op.Attr<bool>("rejoin")),
        ids_(op.InputNames("Ids")) {
    if (op.OutputCount("Out") != 1) throw Error(op.type() + ": Out is the one table variable");
    table_ = op.OutputNames("Out")[0];
    if (shards_.empty()) throw Error(op.type() + ": endpoints names no pserver to shard the table over");
    for (const auto& e : shards_) CheckEndpoint(op.type(), e);
    if (shape_.size() < 2 || std::any_of(shape_.begin(), shape_.end(), [](int64_t d) { return d < 1; })) {
      throw Error(op.type() + ": shape must be the table's [rows, width, ...], each at least 1");
    }
    if (DataTypeSize(dtype_) == 0) throw Error(op.type() + ": dtype " + std::to_string(dtype_) + " is no tensor type");
    row_bytes_ = DataTypeSize(dtype_);
    for (size_t d = 1; d < shape_.size(); ++d) row_bytes_ *= static_cast<size_t>(shape_[d]);
  }

  void Compute(KernelContext& ctx) {
    ReportingFailure([&] { Fetch(ctx); });
  }

 private:
  void Fetch(KernelContext& ctx) {
    const int64_t height = shape_[0];
    const size_t shards = shards_.size();
    std::vector<int64_t> ids;
    for (size_t i = 0; i < ids_.size(); ++i) AppendIds(ctx.Input("Ids", i), ids_[i], &ids);
    // Each shard's distinct rows, in increasing order; Out's rows are shard 0's, then
    // shard 1's, ..., so each answer lands in one piece of Out's values.
    std::vector<std::vector<int64_t>> local(shards);
    for (int64_t id : ids) {
      if (padding_ != -1 && id == padding_) continue;  // lookup_table gives it zeros
      if (id < 0 || id >= height) {
        throw Error("id " + std::to_string(id) + " is not a row of table '" + table_ + "' (" + std::to_string(height) +
                    " rows)");
      }
      local[ShardOf(id, shards)].push_back(RowInShard(id, shards));
    }
    std::vector<int64_t> rows;  // the table's row numbers, in Out's order
    std::vector<size_t> first(shards + 1, 0);
    for (size_t p = 0; p < shards; ++p) {
      std::sort(local[p].begin(), local[p].end());
      local[p].erase(std::unique(local[p].begin(), local[p].end()), local[p].end());
      for (int64_t r : local[p]) rows.push_back(TableRow(r, p, shards));
      first[p + 1] = rows.size();
    }
    std::vector<int64_t> dims = shape_;
    dims[0] = static_cast<int64_t>(rows.size());
    Tensor value = ctx.OutputVar("Out").SetSelectedRows(rows.data(), rows.size(), height);
    char* into = static_cast<char*>(value.Allocate(dtype_, dims));

    std::vector<RpcCall> calls;
    std::vector<size_t> shard_of;
    const int64_t iteration = TrainerSession::Get().iteration();
    for (size_t p = 0; p < shards; ++p) {
      if (local[p].empty()) continue;
      v1::PrefetchRequest request;
      request.set_name(table_);
      request.set_trainer_id(trainer_id_);
      request.set_iteration(iteration);
      request.mutable_rows()->Add(local[p].begin(), local[p].end());
      RpcCall call;
      call.endpoint = shards_[p];
      call.method = kPrefetch;
      call.subject = "'" + table_ + "' (" + std::to_string(local[p].size()) + " rows)";
      call.request = EncodeMessage(request);
      calls.push_back(std::move(call));
      shard_of.push_back(p);
    }
    CallRejoining(calls);
    for (size_t c = 0; c < calls.size(); ++c) {
      const size_t p = shard_of[c];
      const std::vector<int64_t>& asked = local[p];
      try {
        DecodeVariable(calls[c].response, [&](const v1::VariableHeader& h) -> void* {
          std::vector<int64_t> want = shape_;
          want[0] = static_cast<int64_t>(asked.size());
          const std::vector<int64_t> got(h.tensor().dims().begin(), h.tensor().dims().end());
          if (h.name() != table_ || h.tensor().dtype() != dtype_ || got != want || !h.has_selected_rows() ||
              !std::equal(asked.begin(), asked.end(), h.selected_rows().rows().begin(),
                          h.selected_rows().rows().end())) {
            throw WireError("answered other rows than asked (a pserver of another job, or another transpile?)");
          }
          return into + first[p] * row_bytes_;
        });
      } catch (const WireError& e) {
        throw Error("pserver " + shards_[p] + ": Prefetch of '" + table_ + "': bad answer: " + e.what());
      }
    }
  }

  // Makes `calls`. With rejoin (the pservers checkpoint and are started again when they
  // die), a call the pserver did not answer is made again once it is back (gRPC waits for
  // it within the deadline): a pserver started again from its checkpoint serves the rows
  // it restored, which the step after rejoins it at (send).
  void CallRejoining(std::vector<RpcCall>& calls) {
    for (auto& call : calls) {
      if (!rejoin_) break;
      call.tolerated = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED};
      call.wait_for_ready = true;
    }
    std::vector<size_t> unanswered(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) unanswered[c] = c;
    for (int tries = 0; !unanswered.empty(); ++tries) {
      std::vector<RpcCall> batch;
      for (size_t c : unanswered) batch.push_back(std::move(calls[c]));
      TrainerSession::Get().Call(batch, options_);
      std::vector<size_t> again;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!batch[i].status.ok()) {
          if (tries >= kRetries) {
            throw Error(AboutCall(batch[i]) + batch[i].status.error_message() + " (after " + std::to_string(tries) +
                        " more tries)");
          }
          batch[i].status = grpc::Status();
          again.push_back(unanswered[i]);
        }
        calls[unanswered[i]] = std::move(batch[i]);
      }
      unanswered = std::move(again);
    }
  }

  static constexpr int kRetries = 3;
  TransportOptions options_;
  int32_t trainer_id_;
  std::vector<std::string> shards_;
  std::vector<int64_t> shape_;
  int32_t dtype_;
  int64_t padding_;
  bool rejoin_;
  std::vector<std::string> ids_;
  std::string table_;
  size_t row_bytes_ = 0;
};

}  // namespace

void RegisterPrefetch(Registrar& r) {
  const Transport& t = ThisTransport();
  r.Op(OpSchema(t.prefetch)
           .Doc("(" + t.name +
                ") A trainer's rows of a distributed lookup table, row-sharded over the pservers (row r on "
                "endpoints[r % P] as its row r / P): Out, the table, becomes SelectedRows of the distinct ids "
                "of Ids (the table's row numbers and height, and the rows' values, fetched from their pservers "
                "in one Prefetch call each, all at once), for lookup_table to read as the whole table. In "
                "synchronous training the rows are those of the iteration the pservers hold. "
                "`rill transpile` puts it before the lookups of a table whose lookup_table sets is_distributed.")
           .Input("Ids", "int64 (or int32) ids, any shape: every lookup of the table this fetches for",
                  RILL_SLOT_DUPLICABLE)
           .Output("Out", "the table's variable on the trainer")
           .RequiredAttr("endpoints", RILL_ATTR_STRINGS, "the pservers holding the shards, shard p at [p]")
           .RequiredAttr("shape", RILL_ATTR_INTS, "the whole table's shape, [rows, width, ...]")
           .RequiredAttr("dtype", RILL_ATTR_INT, "the table's element type (framework.proto's number)")
           .Attr("padding_idx", int64_t{-1}, "an id not fetched (lookup_table's padding row); -1: none")
           .Attr("trainer_id", int64_t{-1}, "this trainer's index; " + t.trainer_id_doc)
           .Attr("rejoin", false,
                 "the pservers checkpoint and are started again when they die: a pserver that does not answer is "
                 "waited for (within the deadline) and asked again; false: the failure is the op's error at once")
           .Attr("deadline_ms", int64_t{0}, "deadline of every RPC in ms; 0: 120000 (RILL_RPC_DEADLINE_MS overrides)"));
  r.StatefulKernel<Prefetch>(t.prefetch.c_str(), RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::dist
