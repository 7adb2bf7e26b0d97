// core/ops/feed_fetch.h — Fluid's feed and fetch ops, and the lists they read and fill.
//
// Contract: a Fluid program takes its inputs from one variable holding a list of tensors
// (FEED_MINIBATCH, named "feed" by Paddle) and leaves its outputs in another (FETCH_LIST,
// "fetch"). `feed` (X: the list, Out: the target, attr col) sets Out to column `col` of
// the list; `fetch` (X: the value, Out: the list, attr col) copies X into column `col`,
// growing the list. The lists are variables of type kFeedFetchListType, values of
// FeedFetchList. Whoever runs the program (rill run, the C++ API) fills the feed list
// before the run with SetFeedColumn and reads the fetch list after it with FetchColumns.
#ifndef RILL_CORE_OPS_FEED_FETCH_H_
#define RILL_CORE_OPS_FEED_FETCH_H_

#include <string>
#include <vector>

#include "core/runtime/tensor.h"
#include "core/runtime/variable.h"
#include "rill/sdk.hpp"

namespace rill::core {

inline constexpr const char* kFeedFetchListType = "core.feed_fetch_list";

struct FeedFetchList {
  std::vector<Tensor> columns;
};

void RegisterFeedFetch(rill::Registrar& r);

// Puts `value` in column `col` of the list `holder` holds (made if it holds nothing).
// Throws Error if `holder` holds something else.
void SetFeedColumn(Variable& holder, int col, Tensor value);
// The list's columns (empty if `holder` holds no list).
const std::vector<Tensor>& FetchColumns(const Variable& holder);

}  // namespace rill::core

#endif  // RILL_CORE_OPS_FEED_FETCH_H_
