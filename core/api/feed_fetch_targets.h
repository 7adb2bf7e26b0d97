// core/api/feed_fetch_targets.h — a Fluid program's inputs and outputs, as its feed and
// fetch ops name them, and the moves that fill and read them.
//
// Contract: FeedTargets and FetchTargets list block 0's feed (fetch) ops in col order:
// the variable each sets (reads), the list variable it reads (fills) and its column.
// Fetched returns a fetch op's column after a run. Errors name the variable. (Feeding a
// run is core::Session's, session.h.)
#ifndef RILL_CORE_API_FEED_FETCH_TARGETS_H_
#define RILL_CORE_API_FEED_FETCH_TARGETS_H_

#include <string>
#include <vector>

#include "core/program/program.h"
#include "core/runtime/scope.h"
#include "core/runtime/tensor.h"

namespace rill::core {

struct FeedFetchTarget {
  std::string var;   // the variable fed or fetched
  std::string list;  // the feed or fetch list variable ("feed", "fetch" in Paddle's models)
  int col = 0;
};

std::vector<FeedFetchTarget> FeedTargets(const Program& program);
std::vector<FeedFetchTarget> FetchTargets(const Program& program);

// REQUIRES: `fetch` is one of the program's fetch targets and the program has run in `scope`.
const Tensor& Fetched(const Scope& scope, const FeedFetchTarget& fetch);

// "fp32 [-1, 64]": block 0's declaration of `name`; "undeclared" if it has none, or the
// variable type's name ("FEED_MINIBATCH") for a variable that is no tensor.
std::string DeclaredType(const Program& program, const std::string& name);

}  // namespace rill::core

#endif  // RILL_CORE_API_FEED_FETCH_TARGETS_H_
