// one_hot and one_hot_v2, with Fluid's contracts: Out has a row of `depth` values per index
// of X, 1 at the index and 0 elsewhere. one_hot takes X [..., 1] and replaces that last dim
// by depth; one_hot_v2 appends depth to X's dims. An index outside [0, depth) is an error,
// or, with allow_out_of_range, a row of zeros.
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

template <bool kV2> void OneHot(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  std::vector<int64_t> dims = x.dims();
  if constexpr (kV2) {
    dims.push_back(0);
  } else if (dims.empty() || dims.back() != 1) {
    throw Error("X must end in a dim of 1 ([..., 1]), not " + DimsString(dims) + " (one_hot_v2 takes any shape)");
  }
  int64_t depth = ctx.Attr<int64_t>("depth");
  if (ctx.HasInput("depth_tensor")) depth = IntsOf(ctx.Input("depth_tensor"), "depth_tensor").at(0);
  if (depth < 1) throw Error("depth must be positive, got " + std::to_string(depth));
  dims.back() = depth;
  const bool allow = ctx.Attr<bool>("allow_out_of_range");
  const std::vector<int64_t> index = IntsOf(x, "X");
  for (size_t i = 0; i < index.size() && !allow; ++i) {
    if (index[i] < 0 || index[i] >= depth) {
      throw Error("X[" + std::to_string(i) + "] = " + std::to_string(index[i]) +
                  " is not in [0, depth = " + std::to_string(depth) + ")");
    }
  }
  const auto dtype = static_cast<int32_t>(ctx.Attr<int64_t>("dtype"));
  VisitDataType<float, double, int32_t, int64_t>(dtype, "one_hot dtype", [&](auto type) {
    using T = decltype(type);
    T* out = ctx.Output("Out").Allocate<T>(dims);
    std::fill(out, out + static_cast<int64_t>(index.size()) * depth, T(0));
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] >= 0 && index[i] < depth) out[static_cast<int64_t>(i) * depth + index[i]] = T(1);
    }
  });
  ctx.Output("Out").set_lod(x.lod());  // a row per index: X's sequences are Out's
}

OpSchema OneHotSchema(const char* type, const char* doc) {
  return OpSchema(type)
      .Doc(doc)
      .Input("X", "the indices, int32 or int64")
      .Input("depth_tensor", "the depth, one int32 or int64; replaces the attribute", RILL_SLOT_OPTIONAL)
      .Output("Out", "the one-hot rows, with X's LoD")
      .Attr("depth", int64_t{-1}, "the classes: the length of each row")
      .Attr("dtype", int64_t{RILL_FP32}, "Out's dtype: FP32 (5), FP64, INT32 or INT64")
      .Attr("allow_out_of_range", false, "an index outside [0, depth) gives a row of zeros instead of an error")
      .KernelDtypeFrom("X");
}

}  // namespace

void RegisterOneHot(Registrar& r) {
  r.Op(OneHotSchema("one_hot", "Out = X [..., 1] of indices as one-hot rows: [..., depth]."));
  r.Op(OneHotSchema("one_hot_v2", "Out = X of indices as one-hot rows: X's dims + [depth]."));
  r.Kernel("one_hot", RILL_CPU, RILL_INT32, &OneHot<false>);
  r.Kernel("one_hot", RILL_CPU, RILL_INT64, &OneHot<false>);
  r.Kernel("one_hot_v2", RILL_CPU, RILL_INT32, &OneHot<true>);
  r.Kernel("one_hot_v2", RILL_CPU, RILL_INT64, &OneHot<true>);
}

}  // namespace rill::math
