// Reductions: sum (of several tensors), mean (of all elements), reduce_{sum,mean,max}
// (over `dim`, or everything with reduce_all; keep_dim keeps reduced dims as 1).
#include <limits>
#include <set>

#include "broadcast.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void Sum(KernelContext& ctx) {
  const size_t n = ctx.op().InputCount("X");
  Tensor first = ctx.Input("X", 0);
  const std::vector<int64_t> dims = first.dims();
  Vec<T> acc = ConstVecMap<T>(first.data<T>(), first.numel());
  for (size_t i = 1; i < n; ++i) {
    Tensor x = ctx.Input("X", i);
    if (x.dims() != dims) {
      throw Error("X[" + std::to_string(i) + "] has shape " + DimsString(x.dims()) + ", X[0] has " + DimsString(dims));
    }
    acc += ConstVecMap<T>(x.data<T>(), x.numel());
  }
  T* po = ctx.Output("Out").Allocate<T>(dims);
  VecMap<T>(po, acc.size()) = acc;
}

template <class T>
void Mean(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  if (x.numel() == 0) throw Error("mean of an empty tensor");
  const T mean = ConstVecMap<T>(x.data<T>(), x.numel()).sum() / static_cast<T>(x.numel());
  *ctx.Output("Out").Allocate<T>({1}) = mean;
}

enum class Reduction { kSum, kMean, kMax };

template <Reduction R, class T>
void Reduce(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> in = x.dims();
  const size_t rank = in.size();
  std::vector<bool> reduced(rank, ctx.Attr<bool>("reduce_all"));
  if (!ctx.Attr<bool>("reduce_all")) {
    for (int64_t d : ctx.Attr<std::vector<int64_t>>("dim")) reduced[NormalizeAxis(d, rank, "dim")] = true;
  }
  // Output strides over the input's index space: 0 along reduced dims.
  std::vector<int64_t> out_dims_kept(rank), strides(rank, 0);
  int64_t out_numel = 1;
  for (size_t i = rank; i-- > 0;) {
    out_dims_kept[i] = reduced[i] ? 1 : in[i];
    strides[i] = reduced[i] ? 0 : out_numel;
    out_numel *= out_dims_kept[i];
  }
  const T init = R == Reduction::kMax ? std::numeric_limits<T>::lowest() : T(0);
  std::vector<T> acc(static_cast<size_t>(out_numel), init);
  const T* px = x.data<T>();
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    T& a = acc[static_cast<size_t>(off)];
    a = R == Reduction::kMax ? std::max(a, px[i]) : a + px[i];
    for (size_t d = rank; d-- > 0;) {  // odometer step, keeping `off` in sync
      off += strides[d];
      if (++idx[d] < in[d]) break;
      off -= strides[d] * in[d];
      idx[d] = 0;
    }
  }
  if (R == Reduction::kMean) {
    const int64_t count = out_numel == 0 ? 0 : x.numel() / out_numel;
    for (T& a : acc) a /= static_cast<T>(count);
  }
  std::vector<int64_t> out_dims;
  if (ctx.Attr<bool>("keep_dim")) {
    out_dims = out_dims_kept;
  } else {
    for (size_t i = 0; i < rank; ++i) if (!reduced[i]) out_dims.push_back(in[i]);
    if (out_dims.empty()) out_dims = {1};
  }
  T* po = ctx.Output("Out").Allocate<T>(out_dims);
  std::copy(acc.begin(), acc.end(), po);
}

template <Reduction R>
void AddReduce(Registrar& r, const char* type, const char* what) {
  r.Op(OpSchema(type)
           .Doc(std::string("Out = the ") + what + " of X over `dim` (or every element with reduce_all).")
           .Input("X", "input")
           .Output("Out", "reduced tensor")
           .Attr("dim", std::vector<int64_t>{0}, "dimensions to reduce (negative counts from the end)")
           .Attr("keep_dim", false, "keep reduced dimensions as size 1")
           .Attr("reduce_all", false, "reduce every dimension")
           .KernelDtypeFrom("X"));
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, type, [](auto t) { return &Reduce<R, decltype(t)>; });
}

}  // namespace

void RegisterReduce(Registrar& r) {
  r.Op(OpSchema("sum")
           .Doc("Out = X[0] + X[1] + ..., tensors of one shape.")
           .Input("X", "tensors to add", RILL_SLOT_DUPLICABLE)
           .Output("Out", "their sum")
           .KernelDtypeFrom("X"));
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "sum", [](auto t) { return &Sum<decltype(t)>; });
  r.Op(OpSchema("mean")
           .Doc("Out = the mean of every element of X, shape [1].")
           .Input("X", "input")
           .Output("Out", "[1] tensor")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double>(r, "mean", [](auto t) { return &Mean<decltype(t)>; });
  AddReduce<Reduction::kSum>(r, "reduce_sum", "sum");
  AddReduce<Reduction::kMean>(r, "reduce_mean", "mean");
  AddReduce<Reduction::kMax>(r, "reduce_max", "maximum");
}

}  // namespace rill::math
