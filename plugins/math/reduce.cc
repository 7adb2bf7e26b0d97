// Reductions: sum (of several tensors), mean (of all elements), reduce_{sum,mean,max,min,
// prod} (over `dim`, or everything with reduce_all; keep_dim keeps reduced dims as 1) and
// the boolean reduce_{all,any}, cumsum (running sums along an axis), and their gradients.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "broadcast.h"
#include "kernels.h"
#include "nan_order.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// sum with SelectedRows among X (the gradients of one embedding looked up several times):
// all SelectedRows give SelectedRows, as Paddle's MergeAdd makes them: their rows and
// values one after the other when no row repeats, else each row once, ascending, its values
// summed. X without rows take no part (their height is not checked). With a dense X too,
// the rows are added into the dense sum.
template <class T> void SumWithSelectedRows(KernelContext& ctx, size_t n) {
  std::vector<int64_t> rows, dense_dims;
  std::vector<T> values, dense;
  int64_t height = -1, width = -1;
  for (size_t i = 0; i < n; ++i) {
    Variable x = ctx.InputVar("X", i);
    if (!x.IsSelectedRows()) {
      Tensor t = x.tensor();
      if (dense.empty()) {
        dense_dims = t.dims();
        dense.assign(t.data<T>(), t.data<T>() + t.numel());
      } else if (t.dims() != dense_dims) {
        throw Error("X[" + std::to_string(i) + "] has shape " + DimsString(t.dims()) + ", an earlier X " +
                    DimsString(dense_dims));
      } else {
        VecMap<T>(dense.data(), t.numel()) += ConstVecMap<T>(t.data<T>(), t.numel());
      }
      continue;
    }
    const Variable::SelectedRows sr = x.selected_rows();
    if (sr.count == 0) {
      if (height < 0) height = sr.height;
      continue;
    }
    const int64_t w = sr.value.numel() / static_cast<int64_t>(sr.count);
    if (width >= 0 && (sr.height != height || w != width)) {
      throw Error("X[" + std::to_string(i) + "] is SelectedRows of height " + std::to_string(sr.height) +
                  " and rows of " + std::to_string(w) + "; an earlier X has " + std::to_string(height) + " and " +
                  std::to_string(width));
    }
    height = sr.height;
    width = w;
    rows.insert(rows.end(), sr.rows, sr.rows + sr.count);
    values.insert(values.end(), sr.value.data<T>(), sr.value.data<T>() + sr.value.numel());
  }
  if (dense.empty()) {
    // Grouped once: with no row repeated they stay in their order; else each row once, summed.
    RowGroups groups = GroupRows(rows.data(), rows.size());
    if (groups.rows.size() != rows.size()) {
      std::vector<T> merged(groups.rows.size() * static_cast<size_t>(width));
      SumGroups(groups, values.data(), width, merged.data());
      rows.swap(groups.rows);
      values.swap(merged);
    }
    Tensor out = ctx.OutputVar("Out").SetSelectedRows(rows.data(), rows.size(), height);
    std::copy(values.begin(), values.end(),
              out.Allocate<T>({static_cast<int64_t>(rows.size()), std::max<int64_t>(width, 0)}));
    return;
  }
  const int64_t dense_width =
      dense_dims.empty() || dense_dims[0] == 0 ? 0 : static_cast<int64_t>(dense.size()) / dense_dims[0];
  if (dense_dims.empty() || (width >= 0 && (height != dense_dims[0] || width != dense_width))) {
    throw Error("SelectedRows of height " + std::to_string(height) + " cannot be added to X " + DimsString(dense_dims));
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] < 0 || rows[k] >= dense_dims[0])
      throw Error("a SelectedRows row " + std::to_string(rows[k]) + " is outside X");
    VecMap<T>(dense.data() + rows[k] * dense_width, dense_width) += ConstVecMap<T>(values.data() + k * width, width);
  }
  std::copy(dense.begin(), dense.end(), ctx.AllocateOutput<T>("Out", dense_dims));
}

// Tensor arrays (gradients of one array reaching it from several uses): Out's entry k is the
// sum of the X's entries k that were written; an entry none wrote stays empty.
template <class T> void SumOfArrays(KernelContext& ctx, size_t n) {
  size_t length = 0;
  for (size_t i = 0; i < n; ++i) {
    Variable x = ctx.InputVar("X", i);
    if (!x.IsTensorArray()) throw Error("X[" + std::to_string(i) + "] is not a tensor array, X[0] is");
    length = std::max(length, x.TensorArraySize());
  }
  std::vector<std::vector<T>> sums(length);
  std::vector<std::vector<int64_t>> dims(length);
  for (size_t i = 0; i < n; ++i) {
    Variable x = ctx.InputVar("X", i);
    for (size_t k = 0; k < x.TensorArraySize(); ++k) {
      Tensor entry = x.TensorArrayAt(k);
      if (!entry.initialized()) continue;
      if (sums[k].empty() && dims[k].empty()) {
        dims[k] = entry.dims();
        sums[k].assign(entry.data<T>(), entry.data<T>() + entry.numel());
      } else if (entry.dims() != dims[k]) {
        throw Error("entry " + std::to_string(k) + " of X[" + std::to_string(i) + "] has shape " +
                    DimsString(entry.dims()) + ", an earlier X's has " + DimsString(dims[k]));
      } else {
        VecMap<T>(sums[k].data(), entry.numel()) += ConstVecMap<T>(entry.data<T>(), entry.numel());
      }
    }
  }
  Variable out = ctx.OutputVar("Out");  // written last: Out may be one of X
  out.ResizeTensorArray(length);
  for (size_t k = 0; k < length; ++k) {
    if (dims[k].empty() && sums[k].empty()) continue;
    std::copy(sums[k].begin(), sums[k].end(), out.TensorArrayAt(k).Allocate<T>(dims[k]));
  }
}

template <class T> void Sum(KernelContext& ctx) {
  const size_t n = ctx.op().InputCount("X");
  if (ctx.InputVar("X", 0).IsTensorArray()) return SumOfArrays<T>(ctx, n);
  for (size_t i = 0; i < n; ++i) {
    if (ctx.InputVar("X", i).IsSelectedRows()) return SumWithSelectedRows<T>(ctx, n);
  }
  const std::vector<int64_t> dims = ctx.Input("X", 0).dims();
  std::vector<const T*> xs(n);
  for (size_t i = 0; i < n; ++i) {
    Tensor x = ctx.Input("X", i);
    if (x.dims() != dims) {
      throw Error("X[" + std::to_string(i) + "] has shape " + DimsString(x.dims()) + ", X[0] has " + DimsString(dims));
    }
    xs[i] = x.data<T>();
  }
  // Out has X[0]'s LoD, as Paddle's sum gives it; read first, as Out may be one of X.
  const std::vector<std::vector<uint64_t>> lod = ctx.Input("X", 0).lod();
  // Out may be one of X (a gradient summed into itself): WriteOutput sums aside first then.
  WriteOutput<T>(ctx, "Out", {"X"}, dims, [&](T* po) {
    const int64_t numel = Product(dims, 0, dims.size());
    ParallelFor(numel, (static_cast<double>(n) + 1) * sizeof(T) * numel, [&](int64_t, int64_t begin, int64_t end) {
      VecMap<T> out(po + begin, end - begin);
      out = ConstVecMap<T>(xs[0] + begin, end - begin);
      for (size_t i = 1; i < n; ++i) out += ConstVecMap<T>(xs[i] + begin, end - begin);
    });
  });
  ctx.Output("Out").set_lod(lod);
}

template <class T> void Mean(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  if (x.numel() == 0) throw Error("mean of an empty tensor");
  T mean;
  ReduceInto<Reduction::kMean>(x.data<T>(), PlanReduction({x.numel()}, {true}, false), &mean);
  *ctx.AllocateOutput<T>("Out", {1}) = mean;
}

// The plan of reduce_* over its `dim` (or everything, reduce_all), keep_dim kept.
ReducePlan PlanReduceOp(KernelContext& ctx, const std::vector<int64_t>& in) {
  const size_t rank = in.size();
  const bool all = ctx.Attr<bool>("reduce_all");
  std::vector<bool> reduced(rank, all);
  if (!all) {
    for (int64_t d : ctx.Attr<std::vector<int64_t>>("dim")) reduced[NormalizeAxis(d, rank, "dim")] = true;
  }
  return PlanReduction(in, reduced, ctx.Attr<bool>("keep_dim"));
}

template <Reduction R, class T> void Reduce(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const ReducePlan p = PlanReduceOp(ctx, x.dims());
  // Into a buffer of its own: Out may be X.
  std::vector<T> acc(static_cast<size_t>(p.out_numel));
  ReduceInto<R>(x.data<T>(), p, acc.data());
  std::copy(acc.begin(), acc.end(), ctx.AllocateOutput<T>("Out", p.out_dims));
}

// X@GRAD[i] = Out@GRAD at i's output (sum); divided by the count (mean); only where X[i]
// is the maximum or minimum (max, min; a NaN extreme is every NaN of its run, nan_order.h);
// times Out / X[i] (prod, as Paddle computes it: a zero X gives inf or NaN).
template <Reduction R, class T> void ReduceGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor out = ctx.Input("Out");
  Tensor g = ctx.Input("Out@GRAD");
  const ReducePlan p = PlanReduceOp(ctx, x.dims());
  if (g.numel() != p.out_numel || out.numel() != p.out_numel) {
    throw Error("Out " + DimsString(out.dims()) + " and Out@GRAD " + DimsString(g.dims()) + " must hold the " +
                std::to_string(p.out_numel) + " elements of the reduction's output");
  }
  const T* px = x.data<T>();
  const T* po = out.data<T>();
  const T* pg = g.data<T>();
  const T scale = R == Reduction::kMean ? T(1) / static_cast<T>(std::max<int64_t>(p.count, 1)) : T(1);
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  // dx[i + k] for the k < length input elements from i on, landing on output elements
  // o + k (kStep 1) or all on o (kStep 0); one branch-free loop per reduction and step.
  const auto run = [&](int64_t i, int64_t o, int64_t length, auto step) {
    constexpr int64_t kStep = decltype(step)::value;
    T* d = dx + i;
    const T* xs = px + i;
    const T* os = po + o;
    const T* gs = pg + o;
    // With kStep 0 the output's values are loaded once, before the loop (dx could alias
    // them as far as the compiler knows, which would keep the loop scalar).
    const T g0 = gs[0] * scale, o0 = os[0];
    for (int64_t k = 0; k < length; ++k) {
      const T gv = kStep == 0 ? g0 : gs[k] * scale;
      const T ov = kStep == 0 ? o0 : os[k];
      if constexpr (R == Reduction::kProd) {
        d[k] = gv * ov / xs[k];
      } else if constexpr (R == Reduction::kMax || R == Reduction::kMin) {
        d[k] = (xs[k] == ov || (IsNan(xs[k]) && IsNan(ov))) ? gv : T(0);
      } else {
        d[k] = gv;
      }
    }
  };
  constexpr std::integral_constant<int64_t, 0> kBroadcast;
  constexpr std::integral_constant<int64_t, 1> kAlong;
  const double bytes = static_cast<double>(3 * sizeof(T)) * static_cast<double>(p.numel);
  Middle m;
  if (p.numel > 0 && AsMiddle(p, &m)) {
    // X [outer, n, inner]: rows (o, j) of `inner` elements, each from output row o.
    ParallelFor(m.outer * m.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      if (m.inner == 1) {  // runs of X's rows: the reduced dim is innermost
        for (int64_t r = begin; r < end;) {
          const int64_t o = r / m.n, stop = std::min(end, (o + 1) * m.n);
          run(r, o, stop - r, kBroadcast);
          r = stop;
        }
        return;
      }
      for (int64_t r = begin; r < end; ++r) run(r * m.inner, (r / m.n) * m.inner, m.inner, kAlong);
    });
    return;
  }
  const bool inner_reduced = p.InnerReduced();
  ForEachRun(p, [&](int64_t in, int64_t o, int64_t length) {
    if (inner_reduced) run(in, o, length, kBroadcast);
    else run(in, o, length, kAlong);
  });
}

// reduce_all (every element true) and reduce_any (some element true) of a bool X: the
// minimum and the maximum of its bytes (a bool's byte is nonzero exactly when it is true).
template <bool kAll> void ReduceBool(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const ReducePlan p = PlanReduceOp(ctx, x.dims());
  const auto* px = static_cast<const uint8_t*>(x.raw_data());
  std::vector<uint8_t> acc(static_cast<size_t>(p.out_numel));
  ReduceInto<kAll ? Reduction::kMin : Reduction::kMax>(px, p, acc.data());
  bool* out = ctx.AllocateOutput<bool>("Out", p.out_dims);
  for (size_t k = 0; k < acc.size(); ++k) out[k] = acc[k] != 0;
}

// Each X@GRAD is Out@GRAD: a view of its memory, no copy, whatever the dtype.
void SumGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const OpInfo op = ctx.op();
  for (size_t i = 0; i < op.OutputCount("X@GRAD"); ++i) {
    if (op.OutputName("X@GRAD", i) == RILL_EMPTY_VAR_NAME) continue;
    ctx.Output("X@GRAD", i).ShareWith(g);
  }
}

template <class T> void MeanGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const T g = *ctx.Input("Out@GRAD").data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFill(dx, x.numel(), g / static_cast<T>(x.numel()));
}

// cumsum: running sums along `axis` (or over X flattened), Fluid's contract: `exclusive`
// leaves each element out of its own sum, `reverse` runs from the end. Its gradient is the
// running sum of Out@GRAD the other way, with the same exclusivity.
template <class T>
void RunningSums(const T* in, T* out, int64_t pre, int64_t n, int64_t post, bool exclusive, bool reverse) {
  // X as pre blocks of [n, post]; a block's post columns split into runs of at most
  // kColumns, each run of each block one item on the team. Within an item the running sums
  // of its columns advance a row at a time (a vector loop across the columns), or along the
  // one column when post is 1. Each sum adds its elements in order, as a serial walk would,
  // so the result is the same bits whatever the split.
  constexpr int64_t kColumns = 256;
  const int64_t runs = (post + kColumns - 1) / kColumns;
  ParallelFor(pre * runs, 2.0 * sizeof(T) * static_cast<double>(pre * n * post),
              [&](int64_t, int64_t first, int64_t last) {
                T sums[kColumns];
                for (int64_t item = first; item < last; ++item) {
                  const int64_t c0 = item % runs * kColumns, width = std::min(kColumns, post - c0);
                  const int64_t at0 = item / runs * n * post + c0;  // the item's first element
                  const T* x = in + at0;
                  T* o = out + at0;
                  if (post == 1) {  // one column: its sum in a register
                    T sum = 0;
                    const int64_t first_at = reverse ? n - 1 : 0, delta = reverse ? -1 : 1;
                    if (exclusive) {
                      for (int64_t step = 0, at = first_at; step < n; ++step, at += delta) o[at] = sum, sum += x[at];
                    } else {
                      for (int64_t step = 0, at = first_at; step < n; ++step, at += delta) sum += x[at], o[at] = sum;
                    }
                    continue;
                  }
                  std::fill(sums, sums + width, T(0));
                  for (int64_t step = 0; step < n; ++step) {
                    const int64_t at = (reverse ? n - 1 - step : step) * post;
                    if (exclusive) {
                      for (int64_t c = 0; c < width; ++c) o[at + c] = sums[c], sums[c] += x[at + c];
                    } else {
                      for (int64_t c = 0; c < width; ++c) sums[c] += x[at + c], o[at + c] = sums[c];
                    }
                  }
                }
              });
}

template <class T, bool kGrad> void Cumsum(KernelContext& ctx) {
  Tensor x = ctx.Input(kGrad ? "Out@GRAD" : "X");
  const bool flatten = ctx.Attr<bool>("flatten");
  // The gradient of a flattened cumsum is shaped like X, not like the 1-D Out.
  const std::vector<int64_t> out_dims = kGrad     ? ctx.Input("X").dims()
                                        : flatten ? std::vector<int64_t>{x.numel()}
                                                  : x.dims();
  if (kGrad && Product(out_dims, 0, out_dims.size()) != x.numel()) {
    throw Error("Out@GRAD " + DimsString(x.dims()) + " does not have X's " + DimsString(out_dims) + " elements");
  }
  const std::vector<int64_t> d = flatten ? std::vector<int64_t>{x.numel()} : x.dims();
  const size_t axis = flatten ? 0 : NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  const int64_t pre = Product(d, 0, axis), n = d[axis], post = Product(d, axis + 1, d.size());
  const bool reverse = ctx.Attr<bool>("reverse") != kGrad;
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, kGrad ? "X@GRAD" : "Out", {kGrad ? "Out@GRAD" : "X"}, out_dims,
                 [&](T* out) { RunningSums(px, out, pre, n, post, ctx.Attr<bool>("exclusive"), reverse); });
}

OpSchema ReduceSchema(const char* type, const std::string& what) {
  return OpSchema(type)
      .Doc("Out = " + what + " of X over `dim` (or every element with reduce_all).")
      .Input("X", "input")
      .Output("Out", "reduced tensor")
      .Attr("dim", std::vector<int64_t>{0}, "dimensions to reduce (negative counts from the end)")
      .Attr("keep_dim", false, "keep reduced dimensions as size 1")
      .Attr("reduce_all", false, "reduce every dimension")
      .KernelDtypeFrom("X");
}

template <Reduction R> void AddReduce(Registrar& r, const char* type, const char* what) {
  const std::string grad = std::string(type) + "_grad";
  const OpSchema schema = ReduceSchema(type, std::string("the ") + what).Grad(grad, "X,Out,Out@GRAD", "X");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, type, [](auto t) { return &Reduce<R, decltype(t)>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &ReduceGrad<R, decltype(t)>; });
}

}  // namespace

void RegisterReduce(Registrar& r) {
  const OpSchema sum =
      OpSchema("sum")
          .Doc(
              "Out = X[0] + X[1] + ..., tensors of one shape; SelectedRows among them: SelectedRows of all their "
              "rows, or added into the dense ones' sum.")
          .Input("X", "tensors to add", RILL_SLOT_DUPLICABLE)
          .Output("Out", "their sum")
          .KernelDtypeFrom("X")
          .Grad("sum_grad", "Out@GRAD", "X");
  r.Op(sum);
  r.Op(sum.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "sum", [](auto t) { return &Sum<decltype(t)>; });
  r.Kernel("sum_grad", RILL_CPU, RILL_ANY_DTYPE, &SumGrad);
  const OpSchema mean = OpSchema("mean")
                            .Doc("Out = the mean of every element of X, shape [1].")
                            .Input("X", "input")
                            .Output("Out", "[1] tensor")
                            .KernelDtypeFrom("X")
                            .Grad("mean_grad", "X,Out@GRAD", "X");
  r.Op(mean);
  r.Op(mean.MakeGradSchema());
  RegisterCpu<float, double>(r, "mean", [](auto t) { return &Mean<decltype(t)>; });
  RegisterCpu<float, double>(r, "mean_grad", [](auto t) { return &MeanGrad<decltype(t)>; });
  const OpSchema cumsum = OpSchema("cumsum")
                              .Doc("Out = the running sums of X along axis (or of X flattened, with flatten).")
                              .Input("X", "input")
                              .Output("Out", "the sums, shaped like X (1-D with flatten)")
                              .Attr("axis", int64_t{-1}, "the axis summed along")
                              .Attr("flatten", false, "sum X's elements in order, as one axis")
                              .Attr("exclusive", false, "leave each element out of its own sum (the first sum is 0)")
                              .Attr("reverse", false, "sum from the end of the axis")
                              .KernelDtypeFrom("X")
                              .Grad("cumsum_grad", "X,Out@GRAD", "X");
  r.Op(cumsum);
  r.Op(cumsum.MakeGradSchema());
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "cumsum", [](auto t) { return &Cumsum<decltype(t), false>; });
  RegisterCpu<float, double>(r, "cumsum_grad", [](auto t) { return &Cumsum<decltype(t), true>; });
  AddReduce<Reduction::kSum>(r, "reduce_sum", "sum");
  AddReduce<Reduction::kMean>(r, "reduce_mean", "mean");
  AddReduce<Reduction::kMax>(r, "reduce_max", "maximum");
  AddReduce<Reduction::kMin>(r, "reduce_min", "minimum");
  AddReduce<Reduction::kProd>(r, "reduce_prod", "product");
  r.Op(ReduceSchema("reduce_all", "whether every element is true"));
  r.Op(ReduceSchema("reduce_any", "whether some element is true"));
  r.Kernel("reduce_all", RILL_CPU, RILL_BOOL, &ReduceBool<true>);
  r.Kernel("reduce_any", RILL_CPU, RILL_BOOL, &ReduceBool<false>);
}

}  // namespace rill::math
