#include "core/program/feed_check.h"

#include <vector>

#include "core/errors.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {

namespace {

bool NamedByAnOp(const proto::ProgramDesc& program, const std::string& name) {
  for (const auto& block : program.blocks()) {
    for (const auto& op : block.ops()) {
      for (const auto* args : {&op.inputs(), &op.outputs()}) {
        for (const auto& slot : *args) {
          for (const auto& a : slot.arguments()) {
            if (a == name) return true;
          }
        }
      }
    }
  }
  return false;
}

}  // namespace

void CheckFeed(const proto::ProgramDesc& program, const std::string& name, const Tensor& value) {
  const proto::VarDesc* var = nullptr;
  if (program.blocks_size() > 0) {
    for (const auto& v : program.blocks(0).vars()) {
      if (v.name() == name) var = &v;
    }
  }
  if (var == nullptr) {
    if (NamedByAnOp(program, name)) return;  // undeclared: nothing to check against
    throw Error("feed '" + name + "': the program neither declares nor uses a variable of that name",
                RILL_INVALID_ARGUMENT);
  }
  if (var->type().type() != proto::VarType::LOD_TENSOR || !var->type().has_lod_tensor()) {
    throw Error("feed '" + name + "': the variable is declared as " + proto::VarType::Type_Name(var->type().type()) +
                    ", not a tensor that can be fed",
                RILL_INVALID_ARGUMENT);
  }
  const auto& declared = var->type().lod_tensor().tensor();
  const std::vector<int64_t> want(declared.dims().begin(), declared.dims().end());
  const auto& have = value.dims();
  bool shape_ok = want.empty() || want.size() == have.size();
  for (size_t i = 0; shape_ok && !want.empty() && i < want.size(); ++i) {
    shape_ok = want[i] == -1 || want[i] == have[i];
  }
  const int32_t want_dtype = static_cast<int32_t>(declared.data_type());
  if (!shape_ok || want_dtype != value.dtype()) {
    throw Error("feed '" + name + "': the program declares " + DataTypeName(want_dtype) + " " +
                    ShapeString(want.data(), want.size()) + ", the value fed is " + DataTypeName(value.dtype()) +
                    " " + ShapeString(have.data(), have.size()) +
                    (shape_ok ? "" : " (a declared dimension of -1 matches any size)"),
                RILL_INVALID_ARGUMENT);
  }
}

}  // namespace rill::core
