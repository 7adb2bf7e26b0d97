// Fluid's feed and fetch (core/ops/feed_fetch.h). Host ops: they reach the lists and
// tensors behind the handles directly.
#include "core/ops/feed_fetch.h"

#include <cstdio>

#include "core/errors.h"
#include "core/registry/registry.h"

namespace rill::core {
namespace {

Variable& Var(rill::Variable v) { return *reinterpret_cast<Variable*>(v.handle()); }

const CustomType& ListType() {
  static const RillVarType* const handle = VarTypeHandle(kFeedFetchListType);
  const CustomType* type = VarTypeOf(handle);
  if (type == nullptr)
    throw Error("the feed/fetch list type is not registered (no registry has core's ops)", RILL_INTERNAL);
  return *type;
}

// The list `holder` holds, or nullptr if it holds nothing; throws if it holds something else.
FeedFetchList* ListIn(const Variable& holder, const char* role) {
  if (!holder.initialized()) return nullptr;
  const CustomValue* custom = holder.GetCustom();
  if (custom == nullptr || custom->type()->name != kFeedFetchListType) {
    throw Error(std::string("the ") + role + " list variable holds " + holder.Describe() +
                    ", not a feed/fetch list (FEED_MINIBATCH, FETCH_LIST)",
                RILL_INVALID_ARGUMENT);
  }
  return static_cast<FeedFetchList*>(custom->value());
}

FeedFetchList& MakeList(Variable& holder, const char* role) {
  if (FeedFetchList* list = ListIn(holder, role)) return *list;
  auto* list = new FeedFetchList;
  holder.SetCustom(&ListType(), list);
  return *list;
}

int Column(rill::KernelContext& ctx) {
  const int64_t col = ctx.Attr<int64_t>("col");
  if (col < 0 || col > (1 << 20)) throw Error("col " + std::to_string(col) + " is out of range", RILL_OUT_OF_RANGE);
  return static_cast<int>(col);
}

void Feed(rill::KernelContext& ctx) {
  const int col = Column(ctx);
  const FeedFetchList* list = ListIn(Var(ctx.InputVar("X")), "feed");
  const std::string holder = ctx.op().InputName("X");
  if (list == nullptr || static_cast<size_t>(col) >= list->columns.size() ||
      !list->columns[static_cast<size_t>(col)].initialized()) {
    throw Error("column " + std::to_string(col) + " of '" + holder + "' holds nothing to feed '" +
                    ctx.op().OutputName("Out") + "' (rill run --feed " + ctx.op().OutputName("Out") + "=FILE.npy)",
                RILL_FAILED_PRECONDITION);
  }
  *Var(ctx.OutputVar("Out")).GetMutableTensor() = list->columns[static_cast<size_t>(col)];
}

void Fetch(rill::KernelContext& ctx) {
  const int col = Column(ctx);
  Variable& x = Var(ctx.InputVar("X"));
  if (x.is_tensor_array()) {
    throw Error("'" + ctx.op().InputName("X") + "' holds a tensor array of " +
                    std::to_string(x.GetMutableTensorArray()->size()) +
                    " entries, which is not fetched whole: fetch an entry (array_read) or the entries joined "
                    "(concat, stack)",
                RILL_UNIMPLEMENTED);
  }
  const Tensor* value = x.GetTensor();
  if (value == nullptr || !value->initialized()) {
    throw Error("'" + ctx.op().InputName("X") + "' holds no tensor to fetch", RILL_FAILED_PRECONDITION);
  }
  FeedFetchList& list = MakeList(Var(ctx.OutputVar("Out")), "fetch");
  if (list.columns.size() <= static_cast<size_t>(col)) list.columns.resize(static_cast<size_t>(col) + 1);
  list.columns[static_cast<size_t>(col)] = value->CopyTo(Place{});
}

void DescribeList(const void* value, char* buf, size_t cap) {
  const auto* list = static_cast<const FeedFetchList*>(value);
  std::snprintf(buf, cap, "feed/fetch list of %zu columns", list->columns.size());
}

}  // namespace

void SetFeedColumn(Variable& holder, int col, Tensor value) {
  FeedFetchList& list = MakeList(holder, "feed");
  if (list.columns.size() <= static_cast<size_t>(col)) list.columns.resize(static_cast<size_t>(col) + 1);
  list.columns[static_cast<size_t>(col)] = std::move(value);
}

const std::vector<Tensor>& FetchColumns(const Variable& holder) {
  static const std::vector<Tensor> kNone;
  const FeedFetchList* list = ListIn(holder, "fetch");
  return list != nullptr ? list->columns : kNone;
}

void RegisterFeedFetch(rill::Registrar& r) {
  r.VarType<FeedFetchList>(kFeedFetchListType, &DescribeList, /*copyable=*/true);
  r.Op(rill::OpSchema("feed")
           .Doc("Out = column `col` of the feed list X (FEED_MINIBATCH), which whoever runs the "
                "program fills (rill run --feed OUT=FILE.npy).")
           .Input("X", "the feed list")
           .Output("Out", "the variable fed")
           .Attr("col", int64_t{0}, "the column of X"));
  r.Kernel("feed", RILL_CPU, RILL_ANY_DTYPE, &Feed);
  r.Op(rill::OpSchema("fetch")
           .Doc("Copies X into column `col` of the fetch list Out (FETCH_LIST), which whoever "
                "runs the program reads afterwards (rill run prints it).")
           .Input("X", "the variable fetched")
           .Output("Out", "the fetch list")
           .Attr("col", int64_t{0}, "the column of Out"));
  r.Kernel("fetch", RILL_CPU, RILL_ANY_DTYPE, &Fetch);
}

}  // namespace rill::core
