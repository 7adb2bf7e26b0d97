#include "core/program/feed_check.h"

#include <vector>

#include "core/errors.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {

namespace {

bool NamedByAnOp(const Program& program, StrId name) {
  for (int b = 0; b < program.blocks_size(); ++b) {
    for (const ProgramOp& op : program.ops(program.block(b))) {
      for (const auto slots : {program.inputs(op), program.outputs(op)}) {
        for (const ProgramSlot& slot : slots) {
          for (StrId a : program.arguments(slot)) {
            if (a == name) return true;
          }
        }
      }
    }
  }
  return false;
}

}  // namespace

bool DimsFitDeclared(const std::vector<int64_t>& declared, const std::vector<int64_t>& dims) {
  if (declared.empty()) return true;
  if (declared.size() != dims.size()) return false;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i] != -1 && declared[i] != dims[i]) return false;
  }
  return true;
}

void CheckFeed(const Program& program, const std::string& name, const Tensor& value) {
  const std::string lod_problem = LoDProblem(value.lod(), value.dims().size() > 0 ? value.dims()[0] : 0);
  if (!lod_problem.empty()) throw Error("feed '" + name + "': " + lod_problem, RILL_INVALID_ARGUMENT);
  const ProgramVar* var = program.FindVar(0, name);
  if (var == nullptr) {
    const std::optional<StrId> id = program.FindStr(name);
    if (id && NamedByAnOp(program, *id)) return;  // undeclared: nothing to check against
    throw Error("feed '" + name + "': the program neither declares nor uses a variable of that name",
                RILL_INVALID_ARGUMENT);
  }
  if (var->type != proto::VarType::LOD_TENSOR || !var->has_tensor) {
    throw Error(
        "feed '" + name + "': the variable is declared as " + VarTypeName(var->type) + ", not a tensor that can be fed",
        RILL_INVALID_ARGUMENT);
  }
  const auto dims = program.dims(*var);
  const std::vector<int64_t> want(dims.begin(), dims.end());
  const auto& have = value.dims();
  // Paddle checks a feed only where the variable asks for it (need_check_feed, set by
  // fluid.data since 1.6): PP-OCR's models declare one input size and are fed another, and
  // programs declare a float data layer for a shape they feed as int32. Elsewhere the value
  // is fed as it is: kernels are chosen by the dtype their inputs hold when they run.
  if (!var->need_check_feed) return;
  // A value may leave off declared trailing dims of 1 (a [3] where [3, 1] is declared, as
  // Paddle's own tests feed it: Paddle compares only the dims a value has). It is fed as it
  // is, holding the elements the declared shape would.
  const std::vector<int64_t> fed = have.ToVector();
  bool shape_ok = DimsFitDeclared(want, fed);
  if (!shape_ok && !fed.empty() && fed.size() < want.size()) {
    shape_ok = DimsFitDeclared(std::vector<int64_t>(want.begin(), want.begin() + fed.size()), fed);
    for (size_t i = fed.size(); i < want.size(); ++i) shape_ok = shape_ok && want[i] == 1;
  }
  const int32_t want_dtype = var->data_type;
  if (!shape_ok || want_dtype != value.dtype()) {
    throw Error("feed '" + name + "': the program declares " + DataTypeName(want_dtype) + " " +
                    ShapeString(want.data(), want.size()) + ", the value fed is " + DataTypeName(value.dtype()) + " " +
                    ShapeString(have.data(), have.size()) +
                    (shape_ok ? "" : " (a declared dimension of -1 matches any size)"),
                RILL_INVALID_ARGUMENT);
  }
}

}  // namespace rill::core
