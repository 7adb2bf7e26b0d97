// core/program/feed_check.h — a value fed into a program checked against its declaration.
//
// Contract: CheckFeed accepts `value` for variable `name` when block 0 of `program`
// declares `name` as a dense tensor (LOD_TENSOR) and, where the variable sets
// need_check_feed, of the value's dtype and a shape compatible with the value's: the same
// rank, and each declared dimension equal to the value's or -1 (any size), as Fluid checks
// a feed, and a LoD, when the value has one, that is well formed (LoDProblem). Without
// need_check_feed (Paddle's default; before 1.6 no program set it) neither
// is checked, as Paddle checks neither. A declaration with no dimensions declares the
// dtype only. A variable no block declares is accepted when some op names
// it (hand-written programs need not declare); one that no op names either is a
// misspelt feed. Anything else throws Error (RILL_INVALID_ARGUMENT) naming the variable
// and, for a mismatch, both dtypes and both shapes.
#ifndef RILL_CORE_PROGRAM_FEED_CHECK_H_
#define RILL_CORE_PROGRAM_FEED_CHECK_H_

#include <string>
#include <vector>

#include "core/program/program.h"
#include "core/runtime/tensor.h"

namespace rill::core {

void CheckFeed(const Program& program, const std::string& name, const Tensor& value);

// The shape rule CheckFeed applies, for every check of a value against a declaration
// (parameter files too): no declared dims declare the dtype only; otherwise the same rank,
// each declared dim equal to the value's or -1.
bool DimsFitDeclared(const std::vector<int64_t>& declared, const std::vector<int64_t>& dims);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_FEED_CHECK_H_
