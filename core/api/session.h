// core/api/session.h — one validated program, and the one way to feed it, run it and
// fetch from it: what `rill run`, core::Model and Python's PreparedProgram each do.
//
// Contract:
//  - A Session is made from a program validated against `registry` (which must outlive it)
//    and holds the program's feed and fetch targets (its block 0's feed and fetch ops, in
//    col order) and the executor of its blocks.
//  - Feed(scope, feeds) puts one run's inputs into `scope`. The rule, the same for every
//    front end: each name is given once; a name a feed op sets goes into that op's column
//    of its list variable, and every such name must be given; a name no feed op sets goes
//    straight into its variable, but only in a program with no feed op at all (a
//    hand-written one: in a program that has feed ops, it is a mistake). Each value is
//    checked against its declaration first (CheckFeed). A value goes in as given, sharing
//    its memory: an op that writes a fed variable (Writes) writes that memory, so a caller
//    feeding memory it still reads gives a copy of it.
//  - Run(scope) runs block 0 in `scope` on the calling task: call it inside RunTasks (as
//    Run(scope, feeds, tasks) does), which gives go blocks their workers and lets the run
//    be cancelled.
//  - Fetch(scope) returns the fetch targets' values after a run in `scope`, in col order,
//    sharing the scope's memory.
//  - Errors throw Error naming what was wrong. Runs of one session may overlap in distinct
//    scopes, as the executor's may.
#ifndef RILL_CORE_API_SESSION_H_
#define RILL_CORE_API_SESSION_H_

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/api/feed_fetch_targets.h"
#include "core/program/program.h"
#include "core/registry/registry.h"
#include "core/runtime/device.h"
#include "core/runtime/executor.h"
#include "core/runtime/scope.h"
#include "core/tasks/scheduler.h"

namespace rill::core {

class Session {
 public:
  using Feeds = std::vector<std::pair<std::string, Tensor>>;

  // Validates `program` (ValidateProgramOrThrow) and binds it to `place` (the CPU by default).
  Session(const Registry& registry, std::shared_ptr<const Program> program, Place place = {});

  const Program& program() const { return *program_; }
  const std::vector<FeedFetchTarget>& feeds() const { return feeds_; }
  const std::vector<FeedFetchTarget>& fetches() const { return fetches_; }
  // Whether an op of the program other than a feed op writes variable `name`.
  bool Writes(const std::string& name) const { return written_.count(name) != 0; }

  void Feed(Scope& scope, Feeds feeds) const;
  void Run(const std::shared_ptr<Scope>& scope);
  std::vector<Tensor> Fetch(const Scope& scope) const;

  // Feed, Run as the main task of RunTasks(tasks, ..., canceller), Fetch.
  std::vector<Tensor> Run(const std::shared_ptr<Scope>& scope, Feeds feeds, const SchedulerOptions& tasks,
                          RunCanceller* canceller = nullptr);

 private:
  std::shared_ptr<const Program> program_;
  std::vector<FeedFetchTarget> feeds_, fetches_;
  std::set<std::string> written_;
  Executor executor_;
};

}  // namespace rill::core

#endif  // RILL_CORE_API_SESSION_H_
