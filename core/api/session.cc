#include "core/api/session.h"

#include <algorithm>

#include "core/errors.h"
#include "core/program/feed_check.h"
#include "core/program/validate.h"

namespace rill::core {
namespace {

const Program& Validated(const Program& program, const Registry& registry) {
  ValidateProgramOrThrow(program, registry);
  return program;
}

// Every variable an op of `program` other than a feed op writes, in any block.
std::set<std::string> WrittenVariables(const Program& program) {
  std::set<std::string> written;
  for (int b = 0; b < program.blocks_size(); ++b) {
    for (const ProgramOp& op : program.ops(program.block(b))) {
      if (program.str(op.type) == "feed") continue;
      for (const ProgramSlot& slot : program.outputs(op)) {
        for (const auto id : program.arguments(slot)) written.insert(std::string(program.str(id)));
      }
    }
  }
  return written;
}

std::string TargetNames(const std::vector<FeedFetchTarget>& targets) {
  std::string names;
  for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t.var;
  return names;
}

}  // namespace

Session::Session(const Registry& registry, std::shared_ptr<const Program> program, Place place)
    : program_(std::move(program)),
      feeds_(FeedTargets(Validated(*program_, registry))),
      fetches_(FetchTargets(*program_)),
      written_(WrittenVariables(*program_)),
      executor_(registry, program_) {
  executor_.set_place(place);
}

void Session::Feed(Scope& scope, Feeds feeds) const {
  std::set<std::string> given;
  for (auto& feed : feeds) {
    const std::string& name = feed.first;
    Tensor& value = feed.second;
    if (!given.insert(name).second) throw Error("feed '" + name + "' is given twice", RILL_INVALID_ARGUMENT);
    const auto target = std::find_if(feeds_.begin(), feeds_.end(), [&](const auto& f) { return f.var == name; });
    if (target == feeds_.end() && !feeds_.empty()) {
      throw Error("feed '" + name + "' is not one of the program's feeds (" + TargetNames(feeds_) + ")",
                  RILL_INVALID_ARGUMENT);
    }
    CheckFeed(*program_, name, value);
    if (target != feeds_.end()) {
      SetFeedColumn(*scope.Var(target->list), target->col, std::move(value));
    } else {
      *scope.Var(name)->GetMutableTensor() = std::move(value);
    }
  }
  for (const auto& f : feeds_) {
    if (!given.count(f.var)) {
      throw Error("feed '" + f.var + "' (" + DeclaredType(*program_, f.var) + ") is not given", RILL_INVALID_ARGUMENT);
    }
  }
}

void Session::Run(const std::shared_ptr<Scope>& scope) { executor_.Run(0, scope); }

std::vector<Tensor> Session::Fetch(const Scope& scope) const {
  std::vector<Tensor> out;
  out.reserve(fetches_.size());
  for (const auto& f : fetches_) out.push_back(Fetched(scope, f));
  return out;
}

std::vector<Tensor> Session::Run(const std::shared_ptr<Scope>& scope, Feeds feeds, const SchedulerOptions& tasks,
                                 RunCanceller* canceller) {
  Feed(*scope, std::move(feeds));
  RunTasks(
      tasks, [&] { Run(scope); }, canceller);
  return Fetch(*scope);
}

}  // namespace rill::core
