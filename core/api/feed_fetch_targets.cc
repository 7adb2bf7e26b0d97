#include "core/api/feed_fetch_targets.h"

#include <algorithm>

#include "core/errors.h"
#include "core/ops/feed_fetch.h"
#include "core/program/feed_check.h"
#include "core/runtime/dtype.h"
#include "rill/checked_size.hpp"

namespace rill::core {

namespace {

std::vector<FeedFetchTarget> Targets(const proto::ProgramDesc& program, const std::string& type) {
  std::vector<FeedFetchTarget> found;
  if (program.blocks_size() == 0) return found;
  const bool feed = type == "feed";
  for (const auto& op : program.blocks(0).ops()) {
    if (op.type() != type) continue;
    FeedFetchTarget f;
    for (const auto& in : op.inputs()) {
      if (in.parameter() == "X" && in.arguments_size() == 1) (feed ? f.list : f.var) = in.arguments(0);
    }
    for (const auto& out : op.outputs()) {
      if (out.parameter() == "Out" && out.arguments_size() == 1) (feed ? f.var : f.list) = out.arguments(0);
    }
    for (const auto& attr : op.attrs()) {
      if (attr.name() == "col") f.col = attr.type() == proto::LONG ? static_cast<int>(attr.l()) : attr.i();
    }
    found.push_back(f);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.col < b.col; });
  return found;
}

}  // namespace

std::vector<FeedFetchTarget> FeedTargets(const proto::ProgramDesc& program) { return Targets(program, "feed"); }
std::vector<FeedFetchTarget> FetchTargets(const proto::ProgramDesc& program) { return Targets(program, "fetch"); }

void FeedInto(const proto::ProgramDesc& program, const std::vector<FeedFetchTarget>& feeds, Scope& scope,
              const std::string& name, Tensor value) {
  CheckFeed(program, name, value);
  const auto op = std::find_if(feeds.begin(), feeds.end(), [&](const FeedFetchTarget& f) { return f.var == name; });
  if (op != feeds.end()) {
    SetFeedColumn(*scope.Var(op->list), op->col, std::move(value));
  } else {
    *scope.Var(name)->GetMutableTensor() = std::move(value);
  }
}

const Tensor& Fetched(const Scope& scope, const FeedFetchTarget& fetch) {
  const Variable* list = scope.FindVar(fetch.list);
  const std::vector<Tensor>* columns = list != nullptr ? &FetchColumns(*list) : nullptr;
  if (columns == nullptr || static_cast<size_t>(fetch.col) >= columns->size() || !(*columns)[fetch.col].initialized()) {
    throw Error("fetch: column " + std::to_string(fetch.col) + " of '" + fetch.list + "' ('" + fetch.var +
                    "') holds nothing after the run",
                RILL_NOT_FOUND);
  }
  return (*columns)[fetch.col];
}

std::string DeclaredType(const proto::ProgramDesc& program, const std::string& name) {
  if (program.blocks_size() == 0) return "undeclared";
  for (const auto& v : program.blocks(0).vars()) {
    if (v.name() != name) continue;
    if (v.type().type() != proto::VarType::LOD_TENSOR) return proto::VarType::Type_Name(v.type().type());
    const auto& t = v.type().lod_tensor().tensor();
    const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    return DataTypeName(t.data_type()) + " " + ShapeString(dims.data(), dims.size());
  }
  return "undeclared";
}

}  // namespace rill::core
