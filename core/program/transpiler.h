// core/program/transpiler.h — one training program into parameter-server programs
// (Fluid's distribute_transpiler).
//
// Input: a training program whose block 0 runs forward, backward and optimizer ops, as
// `rill backward --sgd` writes it, and its startup program. An optimizer op is any op
// with Param and Grad inputs and a ParamOut output (sgd, momentum, adam, ...).
//
// What moves to the pservers, so that N trainers train as one process on their N
// batches: the optimizers, and every op whose outputs only moved ops read and whose
// inputs a pserver holds: a learning-rate fill, the ops that advance optimizer state after
// the update (Adam's beta powers), clipping and regularization between the gradient and
// the optimizer. Trainers send the backward pass's gradient P@GRAD (else the optimizer's
// Grad) and the pserver averages it before anything else reads it.
//
// Output, for N trainers and pservers E[0..P):
//  - trainer: block 0 without the moved ops, ending in one `send` that pushes every
//    gradient to its parameter's pserver and pulls the parameters back (sync mode). One
//    program for every trainer; each learns its index from RILL_TRAINER_ID.
//  - trainer startup: the startup program, then a `recv` of every parameter, so all
//    trainers start from the pservers' values.
//  - pserver p: block 0 declares its parameters, gradients and optimizer state and runs
//    `listen_and_serv` (Fanin = N); block 1 (OptimizeBlock) holds the moved ops its
//    parameters' updates need, in program order (an op several need, on each of theirs).
//  - pserver p startup: the startup ops that initialize what pserver p holds.
// Distributed lookup tables (Fluid's distributed lookup table): a parameter that
// lookup_table reads with is_distributed (and is_sparse) is row-sharded over every
// pserver, row r on pserver r % P as its row r / P, with the optimizer state shaped like
// it; each pserver's startup runs the table's initializer shaped as its shard (a random
// one draws other values than one process would). The trainer never holds it whole: a
// `prefetch` before its lookups fetches the rows the batch names into the table's
// variable (SelectedRows), its startup neither initializes nor pulls it, and `send`
// splits its sparse gradient among the pservers (ShardedX). Only lookups, their gradients
// and the table's optimizer may read it (no clipping or regularization of it).
// Parameters whose updates read each other's gradients (clipping by global norm) are one
// group on one pserver; groups are placed greedily, largest first, on the pserver holding
// the fewest elements so far. Errors (no optimizer op, a bad endpoint) throw Error.
#ifndef RILL_CORE_PROGRAM_TRANSPILER_H_
#define RILL_CORE_PROGRAM_TRANSPILER_H_

#include <string>
#include <utility>
#include <vector>

#include "core/proto/framework.pb.h"

namespace rill::core {

struct TranspileOptions {
  int32_t trainers = 1;
  std::vector<std::string> pservers;  // HOST:PORT each
  // The transport's op types, chosen by the plugin that will run them.
  std::string send_op = "send", recv_op = "recv", serve_op = "listen_and_serv", prefetch_op = "prefetch";
  int64_t deadline_ms = 0;  // 0: the ops' default
  // Synchronous training (the pservers average every trainer's gradients an iteration),
  // or asynchronous: each trainer's step applied alone, a trainer at most max_staleness
  // steps ahead of the others (-1: no bound). The send and serve ops' sync_mode, and the
  // serve op's max_staleness.
  bool sync = true;
  int64_t max_staleness = -1;
  // Set: each pserver checkpoints what it holds (its parameters, the optimizers' state,
  // the iteration) every `checkpoint_every` iterations to checkpoint_dir/pserver_I.ckpt
  // (save_combine, written atomically), and a pserver started again restores from it.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 10;
};

// The variable a pserver's checkpoint keeps its iteration in (int64 [1]).
inline constexpr const char* kCheckpointIterationVar = "@PSERVER_ITERATION@";

struct TranspiledPrograms {
  proto::ProgramDesc trainer, trainer_startup;
  std::vector<proto::ProgramDesc> pservers, pserver_startups;
  std::vector<std::pair<std::string, std::string>> placement;  // parameter -> endpoint
};

TranspiledPrograms Transpile(const proto::ProgramDesc& train, const proto::ProgramDesc& startup,
                             const TranspileOptions& options);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_TRANSPILER_H_
