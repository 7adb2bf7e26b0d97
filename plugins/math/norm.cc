// Normalization, with Fluid's contracts: layer_norm (each row of X flattened at
// begin_norm_axis normalized to mean 0 and variance 1, then scaled and shifted) and
// batch_norm (each channel normalized over the batch and the spatial dims in training, or
// by the running statistics at inference), and their gradients.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "channel_layout.h"
#include "intra_op.h"
#include "kernels.h"
#include "onednn.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction.h"

namespace rill::math {
namespace {

// X seen as [rows, width] at begin_norm_axis; Scale and Bias, when given, hold `width`.
struct NormShape {
  int64_t rows = 1, width = 1;
};
NormShape LayerNormShape(KernelContext& ctx, const std::vector<int64_t>& xd) {
  const int64_t axis = ctx.Attr<int64_t>("begin_norm_axis");
  if (axis < 1 || axis >= static_cast<int64_t>(xd.size()) + (xd.size() == 1 ? 1 : 0)) {
    throw Error("begin_norm_axis " + std::to_string(axis) + " is out of range [1, " + std::to_string(xd.size()) +
                ") for X " + DimsString(xd));
  }
  NormShape s{Product(xd, 0, static_cast<size_t>(axis)), Product(xd, static_cast<size_t>(axis), xd.size())};
  for (const char* slot : {"Scale", "Bias"}) {
    if (ctx.HasInput(slot) && ctx.Input(slot).numel() != s.width) {
      throw Error(std::string(slot) + " " + DimsString(ctx.Input(slot).dims()) + " does not hold the " +
                  std::to_string(s.width) + " values a row of X " + DimsString(xd) + " has from begin_norm_axis");
    }
  }
  return s;
}

// One row of X: its mean and 1 / sqrt(variance + epsilon), the variance biased and taken
// about the mean (two passes over the row, which is in cache for the second).
template <class T> struct RowMoments { T mean, var, inv_sigma; };
template <class T> RowMoments<T> MomentsOf(const T* row, int64_t width, T eps) {
  const ConstVecMap<T> x(row, width);
  RowMoments<T> m;
  m.mean = x.sum() / static_cast<T>(width);
  m.var = (x - m.mean).square().sum() / static_cast<T>(width);
  m.inv_sigma = T(1) / std::sqrt(m.var + eps);
  return m;
}

// Y = (X - mean) / sigma * Scale + Bias, row by row on the passes' team; each row's
// moments are its own sums, so the result does not depend on the thread budget. Y may be
// X itself: a row is read whole before it is written.
template <class T> void LayerNormLoops(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const NormShape s = LayerNormShape(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* px = x.data<T>();
  const T* scale = ctx.HasInput("Scale") ? ctx.Input("Scale").data<T>() : nullptr;
  const T* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<T>() : nullptr;
  T* py = ctx.AllocateOutput<T>("Y", x.dims());
  T* mean = ctx.HasOutput("Mean") ? ctx.AllocateOutput<T>("Mean", {s.rows}) : nullptr;
  T* var = ctx.HasOutput("Variance") ? ctx.AllocateOutput<T>("Variance", {s.rows}) : nullptr;
  ParallelFor(s.rows, 3.0 * sizeof(T) * static_cast<double>(s.rows * s.width),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const RowMoments<T> m = MomentsOf(px + r * s.width, s.width, eps);
                  VecMap<T> y(py + r * s.width, s.width);
                  y = (ConstVecMap<T>(px + r * s.width, s.width) - m.mean) * m.inv_sigma;
                  if (scale != nullptr) y *= ConstVecMap<T>(scale, s.width);
                  if (bias != nullptr) y += ConstVecMap<T>(bias, s.width);
                  if (mean != nullptr) mean[r] = m.mean;
                  if (var != nullptr) var[r] = m.var;
                }
              });
}

// With xhat = (x - mean) / sigma per row and dxhat = dy * scale:
// dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sigma; dscale = sum over rows of
// dy * xhat; dbias = sum over rows of dy. Mean and variance are recomputed from X. Rows
// are split across the passes' team; the column sums are kept per chunk and then summed
// over the chunks (reduction.h), the same bits for any thread budget.
template <class T> void LayerNormGradLoops(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const NormShape s = LayerNormShape(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* px = x.data<T>();
  const T* pdy = ctx.Input("Y@GRAD").data<T>();
  const T* scale = ctx.HasInput("Scale") ? ctx.Input("Scale").data<T>() : nullptr;
  T* dx = ctx.HasOutput("X@GRAD") ? ctx.AllocateOutput<T>("X@GRAD", x.dims()) : nullptr;
  const bool want_dscale = ctx.HasOutput("Scale@GRAD"), want_dbias = ctx.HasOutput("Bias@GRAD");
  const double bytes = 4.0 * sizeof(T) * static_cast<double>(s.rows * s.width);
  const int64_t chunks = ParallelChunks(s.rows, bytes);
  std::vector<T> dscale_part(want_dscale ? static_cast<size_t>(chunks * s.width) : 0, T(0));
  std::vector<T> dbias_part(want_dbias ? static_cast<size_t>(chunks * s.width) : 0, T(0));
  ParallelFor(s.rows, bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
    Vec<T> xhat(s.width), dxhat(s.width);
    for (int64_t r = begin; r < end; ++r) {
      const RowMoments<T> m = MomentsOf(px + r * s.width, s.width, eps);
      const ConstVecMap<T> dy(pdy + r * s.width, s.width);
      xhat = (ConstVecMap<T>(px + r * s.width, s.width) - m.mean) * m.inv_sigma;
      if (want_dscale) VecMap<T>(dscale_part.data() + chunk * s.width, s.width) += dy * xhat;
      if (want_dbias) VecMap<T>(dbias_part.data() + chunk * s.width, s.width) += dy;
      if (dx == nullptr) continue;
      dxhat = dy;
      if (scale != nullptr) dxhat *= ConstVecMap<T>(scale, s.width);
      const T mean_d = dxhat.mean(), mean_dx = (dxhat * xhat).mean();
      VecMap<T>(dx + r * s.width, s.width) = (dxhat - mean_d - xhat * mean_dx) * m.inv_sigma;
    }
  });
  const ReducePlan over_chunks = PlanReduction({chunks, s.width}, {true, false}, false);
  const auto add_chunks = [&](const std::vector<T>& part, const char* slot, const char* like) {
    ReduceInto<Reduction::kSum>(part.data(), over_chunks, ctx.AllocateOutput<T>(slot, ctx.Input(like).dims()));
  };
  if (want_dscale) add_chunks(dscale_part, "Scale@GRAD", "Scale");
  if (want_dbias) add_chunks(dbias_part, "Bias@GRAD", "Bias");
}

// layer_norm and its gradient in fp32 on oneDNN's layer normalization over X as
// [rows, width] (what beats the Eigen passes above, which fp64 keeps). The gradient has no
// Mean and Variance inputs (Fluid's layer_norm_grad takes X), so oneDNN's forward pass runs
// again first, into scratch.
class OnednnLayerNorm {
 public:
  // Y, Mean and Variance (each may be null: scratch) from X; false where oneDNN has no
  // implementation.
  bool Forward(const NormShape& s, float eps, const float* x, const float* scale, const float* bias, float* y,
               float* mean, float* var) {
    return RunIntraOp(Flops(s), 2 * Bytes(s), [&] {
      const auto call = Find(kForward, s, eps, scale != nullptr, bias != nullptr);
      if (!call->supported) return false;
      std::vector<float> mean_aside(mean ? 0 : static_cast<size_t>(s.rows)),
          var_aside(var ? 0 : static_cast<size_t>(s.rows));
      std::vector<void*> memory{const_cast<float*>(x)};
      if (scale) memory.push_back(const_cast<float*>(scale));
      if (bias) memory.push_back(const_cast<float*>(bias));
      memory.insert(memory.end(), {y, mean ? mean : mean_aside.data(), var ? var : var_aside.data()});
      call->Run(memory);
      return true;
    });
  }

  // dX, dScale, dBias (each may be null: not wanted) from X and dY (Scale and Bias may be
  // null: the op has none).
  bool Backward(const NormShape& s, float eps, const float* x, const float* scale, const float* bias, const float* dy,
                float* dx, float* dscale, float* dbias) {
    const bool has_bias = bias != nullptr;
    return RunIntraOp(3 * Flops(s), 5 * Bytes(s), [&] {
      const auto forward = Find(kForward, s, eps, false, false);
      const auto backward = Find(kBackward, s, eps, scale != nullptr, has_bias);
      if (!forward->supported || !backward->supported) return false;
      const auto n = static_cast<size_t>(s.rows * s.width);
      const OnednnScratch y(n * sizeof(float)), mean(s.rows * sizeof(float)), var(s.rows * sizeof(float));
      forward->Run({const_cast<float*>(x), y.data(), mean.data(), var.data()});
      std::vector<float> dx_aside(dx ? 0 : n), dscale_aside(scale && !dscale ? static_cast<size_t>(s.width) : 0);
      std::vector<float> dbias_aside(has_bias && !dbias ? static_cast<size_t>(s.width) : 0);
      std::vector<void*> memory{const_cast<float*>(x), mean.data(), var.data(), const_cast<float*>(dy)};
      if (scale) memory.push_back(const_cast<float*>(scale));
      if (bias) memory.push_back(const_cast<float*>(bias));
      memory.push_back(dx ? dx : dx_aside.data());
      if (scale) memory.push_back(dscale ? dscale : dscale_aside.data());
      if (has_bias) memory.push_back(dbias ? dbias : dbias_aside.data());
      backward->Run(memory);
      return true;
    });
  }

 private:
  enum Kind : int64_t { kForward, kBackward };
  using Key = std::array<int64_t, 7>;
  static double Flops(const NormShape& s) { return 8.0 * static_cast<double>(s.rows * s.width); }
  static double Bytes(const NormShape& s) { return sizeof(float) * static_cast<double>(s.rows * s.width); }

  // Operands: forward (X[, Scale][, Bias]) -> Y, Mean, Variance; backward (X, Mean,
  // Variance, dY[, Scale][, Bias]) -> dX[, dScale][, dBias].
  std::shared_ptr<const OnednnCall> Find(Kind kind, const NormShape& s, float eps, bool scale, bool shift) {
    int32_t eps_bits;
    std::memcpy(&eps_bits, &eps, sizeof eps_bits);
    const Key key{kind, s.rows, s.width, eps_bits, scale, shift, omp_get_max_threads()};
    return cache_.Find(key, [&] {
      using dnnl::memory;
      const memory::desc data({s.rows, s.width}, memory::data_type::f32, memory::format_tag::ab);
      const memory::desc row({s.width}, memory::data_type::f32, memory::format_tag::a);
      auto flags = dnnl::normalization_flags::none;
      if (scale) flags |= dnnl::normalization_flags::use_scale;
      if (shift) flags |= dnnl::normalization_flags::use_shift;
      const dnnl::layer_normalization_forward::primitive_desc forward(
          dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps, flags),
          UserScratchpad(), CpuEngine());
      OnednnCall c;
      if (kind == kForward) {
        c.primitive = dnnl::layer_normalization_forward(forward);
        c.operands = {{DNNL_ARG_SRC, data, forward.src_desc()}};
        if (scale) c.operands.push_back({DNNL_ARG_SCALE, row, forward.weights_desc()});
        if (shift) c.operands.push_back({DNNL_ARG_SHIFT, row, forward.weights_desc()});
        c.operands.push_back({DNNL_ARG_DST, data, forward.dst_desc(), true});
        c.operands.push_back({DNNL_ARG_MEAN, forward.mean_desc(), forward.mean_desc(), true});
        c.operands.push_back({DNNL_ARG_VARIANCE, forward.variance_desc(), forward.variance_desc(), true});
        return c;
      }
      const dnnl::layer_normalization_backward::primitive_desc backward(
          dnnl::layer_normalization_backward::desc(dnnl::prop_kind::backward, data, data, eps, flags), UserScratchpad(),
          CpuEngine(), forward);
      c.primitive = dnnl::layer_normalization_backward(backward);
      c.operands = {{DNNL_ARG_SRC, data, backward.src_desc()},
                    {DNNL_ARG_MEAN, backward.mean_desc(), backward.mean_desc()},
                    {DNNL_ARG_VARIANCE, backward.variance_desc(), backward.variance_desc()},
                    {DNNL_ARG_DIFF_DST, data, backward.diff_dst_desc()}};
      if (scale) c.operands.push_back({DNNL_ARG_SCALE, row, backward.weights_desc()});
      if (shift) c.operands.push_back({DNNL_ARG_SHIFT, row, backward.weights_desc()});
      c.operands.push_back({DNNL_ARG_DIFF_SRC, data, backward.diff_src_desc(), true});
      if (scale) c.operands.push_back({DNNL_ARG_DIFF_SCALE, row, backward.diff_weights_desc(), true});
      if (shift) c.operands.push_back({DNNL_ARG_DIFF_SHIFT, row, backward.diff_weights_desc(), true});
      return c;
    });
  }

  OnednnCache<Key> cache_;
};

// layer_norm and its gradient: fp32 on oneDNN (OnednnLayerNorm) unless Y is X's own
// variable; otherwise, and fp64, the Eigen passes.
template <class T> class LayerNorm {
 public:
  explicit LayerNorm(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    if constexpr (std::is_same_v<T, float>) {
      Tensor x = ctx.Input("X");
      const NormShape s = LayerNormShape(ctx, x.dims());
      if (!OutputIsInput(ctx, "Y", {"X"}) && s.rows > 0 && s.width > 0) {
        const float* scale = ctx.HasInput("Scale") ? ctx.Input("Scale").data<float>() : nullptr;
        const float* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<float>() : nullptr;
        float* y = ctx.AllocateOutput<float>("Y", x.dims());
        float* mean = ctx.HasOutput("Mean") ? ctx.AllocateOutput<float>("Mean", {s.rows}) : nullptr;
        float* var = ctx.HasOutput("Variance") ? ctx.AllocateOutput<float>("Variance", {s.rows}) : nullptr;
        if (onednn_.Forward(s, ctx.Attr<float>("epsilon"), x.data<float>(), scale, bias, y, mean, var)) return;
      }
    }
    LayerNormLoops<T>(ctx);
  }

 private:
  OnednnLayerNorm onednn_;
};

template <class T> class LayerNormGrad {
 public:
  explicit LayerNormGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    if constexpr (std::is_same_v<T, float>) {
      Tensor x = ctx.Input("X");
      const NormShape s = LayerNormShape(ctx, x.dims());
      if (s.rows > 0 && s.width > 0) {
        const float* scale = ctx.HasInput("Scale") ? ctx.Input("Scale").data<float>() : nullptr;
        float* dx = ctx.HasOutput("X@GRAD") ? ctx.AllocateOutput<float>("X@GRAD", x.dims()) : nullptr;
        float* dscale =
            ctx.HasOutput("Scale@GRAD") ? ctx.AllocateOutput<float>("Scale@GRAD", ctx.Input("Scale").dims()) : nullptr;
        float* dbias =
            ctx.HasOutput("Bias@GRAD") ? ctx.AllocateOutput<float>("Bias@GRAD", ctx.Input("Bias").dims()) : nullptr;
        const float* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<float>() : nullptr;
        if (onednn_.Backward(s, ctx.Attr<float>("epsilon"), x.data<float>(), scale, bias,
                             ctx.Input("Y@GRAD").data<float>(), dx, dscale, dbias)) {
          return;
        }
      }
    }
    LayerNormGradLoops<T>(ctx);
  }

 private:
  OnednnLayerNorm onednn_;
};

// An X-shaped tensor's contiguous runs, so that every per-channel pass is a vector
// operation whichever the layout: in NCHW a run is one image's one channel (s values), in
// NHWC one image's one position (all c channels). Runs are numbered image by image.
int64_t RunCount(const ChannelLayout& l) { return l.nhwc ? l.n * l.s : l.n * l.c; }

// Calls f(in, per, acc, out) for runs [begin, end):
//   in(p):       the run of p (an X-shaped tensor's data) as an Eigen array;
//   per(v):      per-channel values v along the run (one value repeated in NCHW, v itself
//                in NHWC);
//   acc(out, e): adds the run's expression e into per-channel sums out;
//   out(p):      the run of p, writable.
template <class T, class F> void ForEachRun(const ChannelLayout& l, int64_t begin, int64_t end, F f) {
  if (l.nhwc) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * l.c, c = l.c;
      f([=](const T* p) { return ConstVecMap<T>(p + at, c); }, [=](const T* v) { return ConstVecMap<T>(v, c); },
        [=](T* sums, const auto& e) { VecMap<T>(sums, c) += e; }, [=](T* p) { return VecMap<T>(p + at, c); });
    }
    return;
  }
  for (int64_t r = begin; r < end; ++r) {
    const int64_t ch = r % l.c, at = r * l.s, s = l.s;
    f([=](const T* p) { return ConstVecMap<T>(p + at, s); }, [=](const T* v) { return Vec<T>::Constant(s, v[ch]); },
      [=](T* sums, const auto& e) { sums[ch] += e.sum(); }, [=](T* p) { return VecMap<T>(p + at, s); });
  }
}

// A pass over every run of X that writes an output (f as ForEachRun's), moving `bytes`:
// in parallel chunks when that is large (parallel_for.h).
template <class T, class F> void WriteRuns(const ChannelLayout& l, double bytes, F f) {
  ParallelFor(RunCount(l), bytes, [&](int64_t, int64_t begin, int64_t end) { ForEachRun<T>(l, begin, end, f); });
}

// K per-channel sums over every run of X, moving `bytes`: f(sums, in, per, acc) adds a
// run's contributions through acc into sums[k] (l.c values each). Runs are summed in
// blocks of kBlockRuns first, so a channel's rounding error grows with the number of
// blocks, not of runs (NHWC has one run per pixel: a running sum over thousands of rows
// would lose fp32 digits). Each chunk of ParallelFor keeps sums of its own, added up in
// chunk order.
template <class T, size_t K, class F> std::array<std::vector<T>, K> SumRuns(const ChannelLayout& l, double bytes, F f) {
  constexpr int64_t kBlockRuns = 64;
  const size_t c = static_cast<size_t>(l.c);
  const int64_t chunks = ParallelChunks(RunCount(l), bytes);
  std::vector<T> partial(static_cast<size_t>(chunks) * K * c, T(0));
  ParallelFor(RunCount(l), bytes, [&](int64_t chunk, int64_t begin, int64_t end) {
    T* mine = partial.data() + static_cast<size_t>(chunk) * K * c;
    std::vector<T> block(K * c);
    std::array<T*, K> sums;
    for (size_t k = 0; k < K; ++k) sums[k] = block.data() + k * c;
    for (int64_t first = begin; first < end; first += kBlockRuns) {
      std::fill(block.begin(), block.end(), T(0));
      ForEachRun<T>(l, first, std::min(first + kBlockRuns, end),
                    [&](auto in, auto per, auto acc, auto) { f(sums, in, per, acc); });
      for (size_t i = 0; i < K * c; ++i) mine[i] += block[i];
    }
  });
  std::array<std::vector<T>, K> total;
  for (size_t k = 0; k < K; ++k) {
    total[k].assign(c, T(0));
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const T* p = partial.data() + (static_cast<size_t>(chunk) * K + k) * c;
      for (size_t ch = 0; ch < c; ++ch) total[k][ch] += p[ch];
    }
  }
  return total;
}

// Training (unless is_test without trainable_statistics, or use_global_stats): each
// channel's batch mean and (biased) variance normalize it, SavedMean and SavedVariance
// (1 / sqrt(var + epsilon)) keep them for the gradient, and MeanOut/VarianceOut =
// momentum * running + (1 - momentum) * batch.
// Y = X * a + b per channel, a = Scale / sqrt(var + epsilon), b = Bias - mean * a.
template <class T> void BatchNorm(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T momentum = ScalarFromInput<T, float>(ctx, "MomentumTensor", "momentum");
  // is_test with trainable_statistics normalizes by the batch, as training does (Paddle's).
  const bool global =
      (ctx.Attr<bool>("is_test") && !ctx.Attr<bool>("trainable_statistics")) || ctx.Attr<bool>("use_global_stats");
  const T* scale = ChannelInput<T>(ctx, "Scale", l.c);
  const T* bias = ChannelInput<T>(ctx, "Bias", l.c);
  // Copies: MeanOut and VarianceOut are usually Mean's and Variance's own variables.
  const T* rm = ChannelInput<T>(ctx, "Mean", l.c);
  const T* rv = ChannelInput<T>(ctx, "Variance", l.c);
  const std::vector<T> running_mean(rm, rm + l.c), running_var(rv, rv + l.c);
  const T* px = x.data<T>();
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(x.numel());
  const T m = static_cast<T>(l.n * l.s);
  std::vector<T> mean = running_mean, var = running_var;
  if (!global) {
    mean = SumRuns<T, 1>(l, bytes, [&](auto sums, auto in, auto, auto acc) { acc(sums[0], in(px)); })[0];
    for (T& v : mean) v = m > 0 ? v / m : T(0);
    var = SumRuns<T, 1>(
        l, bytes, [&](auto sums, auto in, auto per, auto acc) { acc(sums[0], (in(px)-per(mean.data())).square()); })[0];
    for (T& v : var) v = m > 0 ? v / m : T(0);
  }
  std::vector<T> inv_std(static_cast<size_t>(l.c)), a(static_cast<size_t>(l.c)), b(static_cast<size_t>(l.c));
  for (int64_t ch = 0; ch < l.c; ++ch) {
    inv_std[ch] = T(1) / std::sqrt(var[ch] + eps);
    a[ch] = inv_std[ch] * scale[ch];
    b[ch] = bias[ch] - mean[ch] * a[ch];
  }
  WriteOutput<T>(ctx, "Y", {"X"}, x.dims(), [&](T* y) {
    WriteRuns<T>(l, 2 * bytes,
                 [&](auto in, auto per, auto, auto out) { out(y) = in(px)*per(a.data()) + per(b.data()); });
  });
  const auto write = [&](const char* slot, const auto& values) {
    if (ctx.HasOutput(slot)) std::copy(values.begin(), values.end(), ctx.AllocateOutput<T>(slot, {l.c}));
  };
  std::vector<T> mean_out = running_mean, var_out = running_var;
  if (!global) {
    for (int64_t ch = 0; ch < l.c; ++ch) {
      mean_out[ch] = momentum * running_mean[ch] + (T(1) - momentum) * mean[ch];
      var_out[ch] = momentum * running_var[ch] + (T(1) - momentum) * var[ch];
    }
  }
  write("MeanOut", mean_out);
  write("VarianceOut", var_out);
  write("SavedMean", mean);
  write("SavedVariance", inv_std);
}

// With xhat = (x - mean) * inv_std over a channel's m elements: dbias = sum dy, dscale =
// sum dy * xhat, dx = scale * inv_std / m * (m dy - dbias - xhat dscale) in training; with
// the running statistics (use_global_stats), dx = dy * scale * inv_std. Either is
// dx = A dy + B x + C per channel.
template <class T> void BatchNormGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const ChannelLayout l = LayoutOf(ctx, x.dims());
  const bool global = ctx.Attr<bool>("use_global_stats") || ctx.Attr<bool>("is_test");
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* scale = ChannelInput<T>(ctx, "Scale", l.c);
  const T* saved_mean = ChannelInput<T>(ctx, global ? "Mean" : "SavedMean", l.c);
  const T* saved_var = ChannelInput<T>(ctx, global ? "Variance" : "SavedVariance", l.c);
  const size_t c = static_cast<size_t>(l.c);
  std::vector<T> inv_std(c);
  for (size_t ch = 0; ch < c; ++ch) inv_std[ch] = global ? T(1) / std::sqrt(saved_var[ch] + eps) : saved_var[ch];
  Tensor g = ctx.Input("Y@GRAD");
  if (g.numel() != x.numel())
    throw Error("Y@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const T* px = x.data<T>();
  const T* dy = g.data<T>();
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(x.numel());
  const T m = static_cast<T>(l.n * l.s);
  auto [dbias, dscale] = SumRuns<T, 2>(l, 2 * bytes, [&](auto sums, auto in, auto per, auto acc) {
    acc(sums[0], in(dy));
    acc(sums[1], in(dy) * (in(px)-per(saved_mean)));
  });
  std::vector<T> ka(c), kb(c, T(0)), kc(c, T(0));
  for (size_t ch = 0; ch < c; ++ch) {
    dscale[ch] *= inv_std[ch];
    ka[ch] = scale[ch] * inv_std[ch];
    if (!global && m > 0) {
      kb[ch] = -ka[ch] * inv_std[ch] * dscale[ch] / m;
      kc[ch] = -ka[ch] * dbias[ch] / m - kb[ch] * saved_mean[ch];
    }
  }
  if (ctx.HasOutput("X@GRAD")) {
    T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
    WriteRuns<T>(l, 3 * bytes, [&](auto in, auto per, auto, auto out) {
      out(dx) = in(dy)*per(ka.data()) + in(px)*per(kb.data()) + per(kc.data());
    });
  }
  if (ctx.HasOutput("Scale@GRAD")) std::copy(dscale.begin(), dscale.end(), ctx.AllocateOutput<T>("Scale@GRAD", {l.c}));
  if (ctx.HasOutput("Bias@GRAD")) std::copy(dbias.begin(), dbias.end(), ctx.AllocateOutput<T>("Bias@GRAD", {l.c}));
}

}  // namespace

void RegisterNorm(Registrar& r) {
  const OpSchema batch_norm =
      OpSchema("batch_norm")
          .Doc(
              "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias per channel: the batch's statistics over "
              "N and the spatial dims in training (MeanOut/VarianceOut then move the running ones by momentum), "
              "the running Mean and Variance with is_test or use_global_stats. The per-channel tensors have X's "
              "dtype, but fp32 for an fp16 X (CUDA).")
          .Input("X", "[N, C, ...] (NCHW) or [N, ..., C] (NHWC)")
          .Input("Scale", "per channel")
          .Input("Bias", "per channel")
          .Input("Mean", "the running mean, per channel")
          .Input("Variance", "the running variance, per channel")
          .Input("MomentumTensor", "one element: momentum, in place of the attribute (fp32 or fp64)",
                 RILL_SLOT_OPTIONAL)
          .Output("Y", "the normalized X")
          .Output("MeanOut", "the running mean updated (Fluid names Mean's variable)", RILL_SLOT_OPTIONAL)
          .Output("VarianceOut", "the running variance updated (Fluid names Variance's variable)", RILL_SLOT_OPTIONAL)
          .Output("SavedMean", "the batch mean, for the gradient", RILL_SLOT_OPTIONAL)
          .Output("SavedVariance", "1 / sqrt(batch variance + epsilon), for the gradient", RILL_SLOT_OPTIONAL)
          .Output("ReserveSpace", "unused (cuDNN's)", RILL_SLOT_OPTIONAL)
          .Attr("momentum", 0.9, "how much of the running statistics stays each step")
          .Attr("epsilon", 1e-5, "added to the variance")
          .Attr("is_test", false, "inference: normalize by the running statistics")
          .Attr("use_global_stats", false, "normalize by the running statistics in training too")
          .Attr("trainable_statistics", false,
                "with is_test: normalize by the batch's statistics and update the running ones, as in training")
          .Attr("data_layout", "NCHW", "NCHW or NHWC")
          .KernelDtypeFrom("X")
          .Grad("batch_norm_grad", "X,Scale,Bias,Mean,Variance,SavedMean,SavedVariance,Y@GRAD", "X,Scale,Bias");
  r.Op(batch_norm);
  r.Op(batch_norm.MakeGradSchema());
  RegisterCpu<float, double>(r, "batch_norm", [](auto t) { return &BatchNorm<decltype(t)>; });
  RegisterCpu<float, double>(r, "batch_norm_grad", [](auto t) { return &BatchNormGrad<decltype(t)>; });

  const OpSchema layer_norm =
      OpSchema("layer_norm")
          .Doc(
              "Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, mean and variance over each row of X "
              "flattened at begin_norm_axis; Mean and Variance hold them per row.")
          .Input("X", "the input")
          .Input("Scale", "per element of a row, [prod(X.dims[begin_norm_axis:])]", RILL_SLOT_OPTIONAL)
          .Input("Bias", "per element of a row, likewise", RILL_SLOT_OPTIONAL)
          .Output("Y", "the normalized X")
          .Output("Mean", "each row's mean", RILL_SLOT_OPTIONAL)
          .Output("Variance", "each row's (biased) variance", RILL_SLOT_OPTIONAL)
          .Attr("epsilon", 1e-5, "added to the variance")
          .Attr("begin_norm_axis", int64_t{1}, "the first dim of a row")
          .KernelDtypeFrom("X")
          .Grad("layer_norm_grad", "X,Scale,Bias,Y@GRAD", "X,Scale,Bias");
  r.Op(layer_norm);
  r.Op(layer_norm.MakeGradSchema());
  RegisterCpuStateful<float, double>(r, "layer_norm", [](auto t) { return TypeTag<LayerNorm<decltype(t)>>{}; });
  RegisterCpuStateful<float, double>(r, "layer_norm_grad",
                                     [](auto t) { return TypeTag<LayerNormGrad<decltype(t)>>{}; });
}

}  // namespace rill::math
