// core/api/feed_fetch_targets.h — a Fluid program's inputs and outputs, as its feed and
// fetch ops name them, and the moves that fill and read them.
//
// Contract: FeedTargets and FetchTargets list block 0's feed (fetch) ops in col order:
// the variable each sets (reads), the list variable it reads (fills) and its column.
// The lists are tensor arrays (Fluid's FeedList and FetchList are lists of LoDTensor, as
// its LoDTensorArray is): SetFeedColumn fills one before a run, ListColumn reads one, and
// Fetched returns a fetch op's column after a run. Errors name the variable. (Feeding a
// run is core::Session's, session.h; the ops are core/ops/feed_fetch_ops.cc.)
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

// Puts `value` in column `col` of the list `list` holds (made if it holds nothing).
// Throws Error if `list` holds something else.
void SetFeedColumn(Variable& list, int col, Tensor value);
// Column `col` of the list `list` holds; null when the list or the column is missing (a
// null `list` included). Throws Error if `list` holds something else.
const Tensor* ListColumn(const Variable* list, size_t col, const std::string& name);

// REQUIRES: `fetch` is one of the program's fetch targets and the program has run in `scope`.
const Tensor& Fetched(const Scope& scope, const FeedFetchTarget& fetch);

// "fp32 [-1, 64]": block 0's declaration of `name`; "undeclared" if it has none, or the
// variable type's name ("FEED_MINIBATCH") for a variable that is no tensor.
std::string DeclaredType(const Program& program, const std::string& name);

}  // namespace rill::core

#endif  // RILL_CORE_API_FEED_FETCH_TARGETS_H_
