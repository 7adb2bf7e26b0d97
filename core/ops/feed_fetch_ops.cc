// Fluid's feed and fetch.
//
// A Fluid program takes its inputs from one variable holding a list of tensors
// (FEED_MINIBATCH, named "feed" by Paddle) and leaves its outputs in another (FETCH_LIST,
// "fetch"). Both lists are tensor arrays (Fluid's FeedList and FetchList are lists of
// LoDTensor, as its LoDTensorArray is), which whoever runs the program fills and reads
// (core/api/feed_fetch_targets.h). Neither op copies: feed makes its output a view of the
// column, LoD included, and fetch makes the column a view of its input, which is safe
// because shared memory is never rewritten in place (abi.h, tensor_share): a later write
// to the variable gets new memory and the fetched column keeps the value it was given.
#include <string>

#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

size_t Column(rill::KernelContext& ctx) {
  const int64_t col = ctx.Attr<int64_t>("col");
  if (col < 0 || col > (1 << 20))
    throw rill::Error("col " + std::to_string(col) + " is out of range", RILL_OUT_OF_RANGE);
  return static_cast<size_t>(col);
}

// Refuses a list variable that holds something other than a list.
void CheckList(const rill::Variable& list, const std::string& name, const char* role) {
  if (list.initialized() && !list.IsTensorArray()) {
    throw rill::Error("the " + std::string(role) + " list variable '" + name + "' holds " + list.Describe() +
                          ", not a feed/fetch list (FEED_MINIBATCH, FETCH_LIST)",
                      RILL_INVALID_ARGUMENT);
  }
}

void Feed(rill::KernelContext& ctx) {
  const size_t col = Column(ctx);
  const rill::Variable list = ctx.InputVar("X");
  const std::string holder = ctx.op().InputName("X");
  CheckList(list, holder, "feed");
  rill::Tensor value(nullptr);
  if (list.initialized() && col < list.TensorArraySize()) value = list.TensorArrayAt(col);
  if (!value.handle() || !value.initialized()) {
    const std::string out = ctx.op().OutputName("Out");
    throw rill::Error("column " + std::to_string(col) + " of '" + holder + "' holds nothing to feed '" + out +
                          "' (rill run --feed " + out + "=FILE.npy)",
                      RILL_FAILED_PRECONDITION);
  }
  rill::Tensor out = ctx.Output("Out");
  out.ShareWith(value);
  out.set_lod(value.lod());
}

void Fetch(rill::KernelContext& ctx) {
  const size_t col = Column(ctx);
  const rill::Variable x = ctx.InputVar("X");
  if (x.IsTensorArray()) {
    throw rill::Error("'" + ctx.op().InputName("X") + "' holds a tensor array of " +
                          std::to_string(x.TensorArraySize()) +
                          " entries, which is not fetched whole: fetch an entry (array_read) or the entries joined "
                          "(concat, stack)",
                      RILL_UNIMPLEMENTED);
  }
  if (!x.IsTensor() || !x.initialized() || !x.tensor().initialized()) {
    throw rill::Error("'" + ctx.op().InputName("X") + "' holds no tensor to fetch", RILL_FAILED_PRECONDITION);
  }
  const rill::Tensor value = x.tensor();
  rill::Variable list = ctx.OutputVar("Out");
  CheckList(list, ctx.op().OutputName("Out"), "fetch");
  if (!list.initialized() || list.TensorArraySize() <= col) list.ResizeTensorArray(col + 1);
  rill::Tensor column = list.TensorArrayAt(col);
  column.ShareWith(value);
  column.set_lod(value.lod());
}

}  // namespace

void RegisterFeedFetch(rill::Registrar& r) {
  r.Op(rill::OpSchema("feed")
           .Doc("Out = column `col` of the feed list X (FEED_MINIBATCH), which whoever runs the "
                "program fills (rill run --feed OUT=FILE.npy).")
           .Input("X", "the feed list")
           .Output("Out", "the variable fed")
           .Attr("col", int64_t{0}, "the column of X"));
  r.Kernel("feed", RILL_CPU, RILL_ANY_DTYPE, &Feed);
  r.Op(rill::OpSchema("fetch")
           .Doc("Puts X in column `col` of the fetch list Out (FETCH_LIST), which whoever runs "
                "the program reads afterwards (rill run prints it).")
           .Input("X", "the variable fetched")
           .Output("Out", "the fetch list")
           .Attr("col", int64_t{0}, "the column of Out"));
  r.Kernel("fetch", RILL_CPU, RILL_ANY_DTYPE, &Fetch);
}

}  // namespace rill::core
