// Picking by value, with Fluid's contracts: top_k (the k largest along the last axis),
// top_k_v2 (any axis, largest or smallest), arg_max, arg_min, and accuracy (the share of
// rows whose label is among their top-k indices). None has a gradient (Fluid's top_k_v2 has one that
// training does not use; not provided).
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels.h"
#include "nan_order.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// k from the K input when given, else the attribute; checked against the axis' size.
int64_t KOf(KernelContext& ctx, int64_t size) {
  int64_t k = ctx.Attr<int64_t>("k");
  if (ctx.HasInput("K")) k = IntsOf(ctx.Input("K"), "K").at(0);
  if (k < 1 || k > size)
    throw Error("k " + std::to_string(k) + " is not in [1, " + std::to_string(size) + "], the size of the axis");
  return k;
}

// The k best of each run of `n` values `post` apart, in order (ties: the lower index first;
// NaN above every number, nan_order.h). The runs are split across the passes' team. Each
// keeps its k best so far in order, best first: a value enters only when it beats the last
// of them, so most of a run costs one comparison each. A later value that ties an earlier
// one never beats it, which keeps the lower index first.
template <class T> void TopK(KernelContext& ctx, size_t axis, bool largest) {
  Tensor x = ctx.Input("X");
  const std::vector<int64_t> d = x.dims();
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size());
  const int64_t k = KOf(ctx, n);
  std::vector<int64_t> out_dims = d;
  out_dims[axis] = k;
  const T* px = x.data<T>();
  std::vector<T> values(static_cast<size_t>(pre * k * post));
  std::vector<int64_t> indices(values.size());
  // Whether value a comes before value b.
  const auto before = [largest](T a, T b) { return largest ? NanLast(b, a) : NanLast(a, b); };
  ParallelFor(pre * post, static_cast<double>(sizeof(T)) * static_cast<double>(x.numel()),
              [&](int64_t, int64_t first, int64_t last) {
                std::vector<std::pair<T, int64_t>> best;  // value, index; best first
                best.reserve(static_cast<size_t>(k) + 1);
                const auto order = [&](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
                  return before(a.first, b.first) || (!before(b.first, a.first) && a.second < b.second);
                };
                for (int64_t r = first; r < last; ++r) {
                  const int64_t i = r / post, c = r % post;
                  const T* v = px + i * n * post + c;
                  best.clear();
                  for (int64_t j = 0; j < k; ++j) best.emplace_back(v[j * post], j);
                  std::sort(best.begin(), best.end(), order);
                  T worst = best.back().first;
                  for (int64_t j = k; j < n; ++j) {
                    const T value = v[j * post];
                    if (!before(value, worst)) continue;
                    const auto at =
                        std::upper_bound(best.begin(), best.end(), value,
                                         [&](T a, const std::pair<T, int64_t>& e) { return before(a, e.first); });
                    best.insert(at, {value, j});
                    best.pop_back();
                    worst = best.back().first;
                  }
                  for (int64_t j = 0; j < k; ++j) {
                    const size_t o = static_cast<size_t>((i * k + j) * post + c);
                    values[o] = best[static_cast<size_t>(j)].first;
                    indices[o] = best[static_cast<size_t>(j)].second;
                  }
                }
              });
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  std::copy(values.begin(), values.end(), ctx.AllocateOutput<T>("Out", out_dims));
  std::copy(indices.begin(), indices.end(), ctx.AllocateOutput<int64_t>("Indices", out_dims));
  // Picking along another axis than the first keeps X's rows, so its sequences (Paddle's ShareLoD).
  if (axis == 0) return;
  ctx.Output("Out").set_lod(lod);
  ctx.Output("Indices").set_lod(lod);
}

template <class T> void TopKV1(KernelContext& ctx) {
  const size_t rank = ctx.Input("X").ndim();
  if (rank == 0) throw Error("X has no axis to pick from");
  TopK<T>(ctx, rank - 1, true);
}

template <class T> void TopKV2(KernelContext& ctx) {
  TopK<T>(ctx, NormalizeAxis(ctx.Attr<int64_t>("axis"), ctx.Input("X").ndim()), ctx.Attr<bool>("largest"));
}

// arg_max (kLargest) and arg_min: the first best index, the first NaN when there is one
// (nan_order.h).
template <class T, bool kLargest> void ArgBest(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  std::vector<int64_t> d = x.dims();
  const bool flatten = ctx.Attr<bool>("flatten");
  if (flatten) d = {x.numel()};
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size());
  if (n == 0) throw Error(std::string(kLargest ? "arg_max" : "arg_min") + " of an empty axis");
  std::vector<int64_t> best(static_cast<size_t>(pre * post));
  const T* px = x.data<T>();
  // One vector (i, c) at a time, on the passes' team, its best value held in a register.
  ParallelFor(pre * post, static_cast<double>(sizeof(T)) * x.numel(), [&](int64_t, int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* v = px + (r / post) * n * post + r % post;
      int64_t b = 0;
      T at_b = v[0];
      for (int64_t j = 1; j < n; ++j) {
        if (Improves<kLargest>(v[j * post], at_b)) b = j, at_b = v[j * post];
      }
      best[static_cast<size_t>(r)] = b;
    }
  });
  std::vector<int64_t> out_dims = d;
  if (flatten) out_dims = {1};  // one index into the flattened X, as Fluid gives it
  else if (ctx.Attr<bool>("keepdims")) out_dims[axis] = 1;
  else out_dims.erase(out_dims.begin() + static_cast<std::ptrdiff_t>(axis));
  const int64_t dtype = ctx.Attr<int64_t>("dtype");
  if (dtype == RILL_INT32) {
    int32_t* o = ctx.AllocateOutput<int32_t>("Out", out_dims);
    for (size_t i = 0; i < best.size(); ++i) o[i] = static_cast<int32_t>(best[i]);
  } else if (dtype == RILL_INT64 || dtype == -1) {
    std::copy(best.begin(), best.end(), ctx.AllocateOutput<int64_t>("Out", out_dims));
  } else {
    throw Error("dtype " + std::to_string(dtype) + " is neither INT32 (2) nor INT64 (3)");
  }
}

// accuracy: Accuracy = Correct / Total, Correct counting the rows of Indices [N, k] that
// hold their row's Label [N, 1].
void Accuracy(KernelContext& ctx) {
  Tensor indices = ctx.Input("Indices");
  Tensor label = ctx.Input("Label");
  const std::vector<int64_t> id = indices.dims();
  if (id.size() != 2 || label.numel() != id[0]) {
    throw Error("Indices " + DimsString(id) + " must be [N, k] and Label " + DimsString(label.dims()) +
                " hold N labels");
  }
  const int64_t* pi = indices.data<int64_t>();
  const int64_t* pl = label.data<int64_t>();
  int32_t correct = 0;
  for (int64_t i = 0; i < id[0]; ++i) {
    correct += std::find(pi + i * id[1], pi + (i + 1) * id[1], pl[i]) != pi + (i + 1) * id[1];
  }
  const auto total = static_cast<int32_t>(id[0]);
  *ctx.AllocateOutput<float>("Accuracy", {1}) =
      total > 0 ? static_cast<float>(correct) / static_cast<float>(total) : 0.f;
  if (ctx.HasOutput("Correct")) *ctx.AllocateOutput<int32_t>("Correct", {1}) = correct;
  if (ctx.HasOutput("Total")) *ctx.AllocateOutput<int32_t>("Total", {1}) = total;
}

}  // namespace

// top_k's and top_k_v2's gradient: X@GRAD is zero but where Out's values came from, which
// take Out@GRAD's (Indices along the axis).
template <class T, bool kV2> void TopKGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = x.dims(), gd = g.dims();
  if (d.empty()) throw Error("X has no axis to pick from");
  const size_t axis = kV2 ? NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size()) : d.size() - 1;
  const std::vector<int64_t> index = IntsOf(ctx.Input("Indices"), "Indices");
  if (gd.size() != d.size() || static_cast<int64_t>(index.size()) != g.numel()) {
    throw Error("Out@GRAD " + DimsString(gd) + " and Indices (" + std::to_string(index.size()) +
                " values) do not match X " + DimsString(d) + " with k along axis " + std::to_string(axis));
  }
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size()), k = gd[axis];
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", d);
  ParallelFill(dx, x.numel(), T(0));
  for (int64_t i = 0; i < pre; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t c = 0; c < post; ++c) {
        const int64_t at = (i * k + j) * post + c, to = index[static_cast<size_t>(at)];
        if (to < 0 || to >= n)
          throw Error("Indices holds " + std::to_string(to) + ", outside the axis of " + std::to_string(n));
        dx[(i * n + to) * post + c] += pg[at];
      }
    }
  }
}

void RegisterTopK(Registrar& r) {
  const OpSchema top_k =
      OpSchema("top_k")
          .Doc(
              "Out = the k largest values along X's last axis, in order (ties: lower index first); Indices "
              "(int64) where they were.")
          .Input("X", "the values")
          .Input("K", "k as a 1-element tensor, overriding the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the k values")
          .Output("Indices", "their positions, int64")
          .Attr("k", int64_t{1}, "how many")
          .KernelDtypeFrom("X")
          .Grad("top_k_grad", "X,Indices,Out@GRAD", "X");
  const OpSchema top_k_v2 =
      OpSchema("top_k_v2")
          .Doc(
              "Out = the k largest (or smallest) values along axis, in order (ties: lower index first); "
              "Indices (int64) where they were.")
          .Input("X", "the values")
          .Input("K", "k as a 1-element tensor, overriding the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the k values")
          .Output("Indices", "their positions, int64")
          .Attr("k", int64_t{1}, "how many")
          .Attr("axis", int64_t{-1}, "the axis")
          .Attr("largest", true, "the largest (true) or the smallest")
          .Attr("sorted", true, "informational: the k always come in order")
          .KernelDtypeFrom("X")
          .Grad("top_k_v2_grad", "X,Indices,Out@GRAD", "X");
  for (const OpSchema* schema : {&top_k, &top_k_v2}) {
    r.Op(*schema);
    r.Op(schema->MakeGradSchema());
  }
  for (const bool largest : {true, false}) {
    r.Op(OpSchema(largest ? "arg_max" : "arg_min")
             .Doc(std::string("Out = the index of the ") + (largest ? "largest" : "smallest") +
                  " value along axis (the first of equal ones).")
             .Input("X", "the values")
             .Output("Out", "the indices")
             .Attr("axis", int64_t{-1}, "the axis")
             .Attr("keepdims", false, "keep the axis, as 1")
             .Attr("flatten", false, "over all of X, as one axis (Out: [1])")
             .Attr("dtype", int64_t{RILL_INT64}, "Out's dtype: INT32 (2) or INT64 (3; -1 too)")
             .KernelDtypeFrom("X"));
  }
  r.Op(OpSchema("accuracy")
           .Doc("Accuracy = Correct / Total: the share of rows of Indices [N, k] holding their Label.")
           .Input("Out", "the top-k values (unused)")
           .Input("Indices", "the top-k indices, int64 [N, k]")
           .Input("Label", "int64 [N, 1]")
           .Output("Accuracy", "fp32 [1]")
           .Output("Correct", "int32 [1]", RILL_SLOT_OPTIONAL)
           .Output("Total", "int32 [1]", RILL_SLOT_OPTIONAL));
  RegisterCpu<float, double, int32_t, int64_t>(r, "top_k", [](auto t) { return &TopKV1<decltype(t)>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "top_k_v2", [](auto t) { return &TopKV2<decltype(t)>; });
  RegisterCpu<float, double>(r, "top_k_grad", [](auto t) { return &TopKGrad<decltype(t), false>; });
  RegisterCpu<float, double>(r, "top_k_v2_grad", [](auto t) { return &TopKGrad<decltype(t), true>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "arg_max", [](auto t) { return &ArgBest<decltype(t), true>; });
  RegisterCpu<float, double, int32_t, int64_t>(r, "arg_min", [](auto t) { return &ArgBest<decltype(t), false>; });
  r.Kernel("accuracy", RILL_CPU, RILL_ANY_DTYPE, &Accuracy);
}

}  // namespace rill::math
