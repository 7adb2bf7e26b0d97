#include "core/api/feed_fetch_targets.h"

#include <algorithm>

#include "core/errors.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {

namespace {

// Block 0's feed (fetch) ops in col order. Each list's columns must be 0..K-1 for its K
// ops, each once: a column past them would make a list that large, and two ops on one
// column would hand one variable's value out under another's name.
std::vector<FeedFetchTarget> Targets(const Program& program, std::string_view type) {
  std::vector<FeedFetchTarget> found;
  std::vector<int> op_index;
  std::vector<int64_t> cols;
  if (program.blocks_size() == 0) return found;
  const bool feed = type == "feed";
  int index = -1;
  for (const ProgramOp& op : program.ops(program.block(0))) {
    ++index;
    if (program.str(op.type) != type) continue;
    FeedFetchTarget f;
    for (const ProgramSlot& in : program.inputs(op)) {
      if (program.str(in.parameter) == "X" && in.args_size == 1) {
        (feed ? f.list : f.var) = program.str(program.arguments(in)[0]);
      }
    }
    for (const ProgramSlot& out : program.outputs(op)) {
      if (program.str(out.parameter) == "Out" && out.args_size == 1) {
        (feed ? f.var : f.list) = program.str(program.arguments(out)[0]);
      }
    }
    int64_t col = 0;
    for (AttrId id : program.attrs(op)) {
      const ProgramAttr& attr = program.attr(id);
      if (program.str(attr.name) == "col") col = attr.i;
    }
    found.push_back(f);
    op_index.push_back(index);
    cols.push_back(col);
  }
  auto name = [&](size_t i) {
    return std::string(type) + " op " + std::to_string(op_index[i]) + " ('" + found[i].var + "')";
  };
  for (size_t i = 0; i < found.size(); ++i) {
    const int64_t on_list =
        std::count_if(found.begin(), found.end(), [&](const FeedFetchTarget& f) { return f.list == found[i].list; });
    if (cols[i] < 0 || cols[i] >= on_list) {
      throw Error(name(i) + ": col " + std::to_string(cols[i]) + " is not in [0, " + std::to_string(on_list) +
                      "), one column per " + std::string(type) + " op on '" + found[i].list + "'",
                  RILL_INVALID_ARGUMENT);
    }
    for (size_t j = 0; j < i; ++j) {
      if (cols[j] == cols[i] && found[j].list == found[i].list) {
        throw Error(
            name(j) + " and " + name(i) + " both use column " + std::to_string(cols[i]) + " of '" + found[i].list + "'",
            RILL_INVALID_ARGUMENT);
      }
    }
    found[i].col = static_cast<int>(cols[i]);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.col < b.col; });
  return found;
}

}  // namespace

std::vector<FeedFetchTarget> FeedTargets(const Program& program) { return Targets(program, "feed"); }
std::vector<FeedFetchTarget> FetchTargets(const Program& program) { return Targets(program, "fetch"); }

namespace {
void CheckList(const Variable& list, const std::string& name) {
  if (list.initialized() && !list.is_tensor_array()) {
    throw Error(
        "the variable '" + name + "' holds " + list.Describe() + ", not a feed/fetch list (FEED_MINIBATCH, FETCH_LIST)",
        RILL_INVALID_ARGUMENT);
  }
}
}  // namespace

void SetFeedColumn(Variable& list, int col, Tensor value) {
  CheckList(list, "feed list");
  TensorArray& columns = *list.GetMutableTensorArray();
  if (columns.size() <= static_cast<size_t>(col)) columns.resize(static_cast<size_t>(col) + 1);
  columns[static_cast<size_t>(col)] = std::move(value);
}

const Tensor* ListColumn(const Variable* list, size_t col, const std::string& name) {
  if (list == nullptr) return nullptr;
  CheckList(*list, name);
  const TensorArray* columns = list->GetTensorArray();
  return columns != nullptr && col < columns->size() ? &(*columns)[col] : nullptr;
}

const Tensor& Fetched(const Scope& scope, const FeedFetchTarget& fetch) {
  const Tensor* column = ListColumn(scope.FindVar(fetch.list), static_cast<size_t>(fetch.col), fetch.list);
  if (column == nullptr || !column->initialized()) {
    throw Error("fetch: column " + std::to_string(fetch.col) + " of '" + fetch.list + "' ('" + fetch.var +
                    "') holds nothing after the run",
                RILL_NOT_FOUND);
  }
  return *column;
}

std::string DeclaredType(const Program& program, const std::string& name) {
  const ProgramVar* v = program.FindVar(0, name);
  if (v == nullptr) return "undeclared";
  if (v->type != proto::VarType::LOD_TENSOR) return VarTypeName(v->type);
  const auto dims = program.dims(*v);
  return DataTypeName(v->data_type) + " " + ShapeString(dims.begin(), dims.size());
}

}  // namespace rill::core
