// uniform_random, gaussian_random and truncated_gaussian_random (a normal distribution's
// values within two standard deviations of the mean), and the first two's
// *_batch_size_like forms (Out's shape takes one dim from Input). A non-zero `seed` makes
// the values reproducible (the same seed gives the same tensor, run after run, process
// after process, whatever the thread budget); seed 0 draws a fresh seed from the OS each
// run, as in Fluid.
//
// Values come from Philox (philox.h) in groups of kGroupBlocks blocks: group g is blocks
// g kGroupBlocks .. (g + 1) kGroupBlocks - 1 of the seed's stream, and the tensor's
// elements g Values<T>() .. (g + 1) Values<T>() - 1 are a function of group g alone, so
// groups split across the passes' team freely. Within a group: uniforms from the words in
// order (fp32: a word's top 24 bits, fp64: two words' top 53); a normal pair by Box-Muller
// from uniforms k and k + half; a truncated normal by the inverse of the normal's CDF over
// [-2, 2] of the uniform, as Paddle's kernel and PyTorch's trunc_normal_ draw it.
#include <algorithm>
#include <cmath>
#include <random>

#include "activation_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "philox.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

constexpr int64_t kGroupBlocks = 64;
template <class T> constexpr int64_t Values() { return kGroupBlocks * 4 * 4 / static_cast<int64_t>(sizeof(T)); }

// Out's shape: from Input and `shape` for a *_batch_size_like op (the only ones with an
// Input), else ShapeTensor, ShapeTensorList or `shape`.
std::vector<int64_t> OutShape(KernelContext& ctx) {
  if (ctx.HasInput("Input")) return BatchSizeLikeShape(ctx);
  return IntsFromInputs(ctx, "ShapeTensor", "ShapeTensorList", "shape");
}

PhiloxKey KeyFrom(KernelContext& ctx) {
  const int64_t seed = ctx.Attr<int64_t>("seed");
  return PhiloxKeyOf(seed != 0 ? static_cast<uint64_t>(seed) : std::random_device{}());
}

// Group g's Values<T>() uniforms in [0, 1), in steps of 2^-24 (fp32) or 2^-53 (fp64).
template <class T> void GroupUniforms(PhiloxKey key, int64_t g, T* u) {
  uint32_t words[4 * kGroupBlocks];
  PhiloxBlocks(static_cast<uint64_t>(g * kGroupBlocks), kGroupBlocks, key, words);
  if constexpr (sizeof(T) == 4) {
    for (int64_t k = 0; k < Values<T>(); ++k) u[k] = static_cast<float>(static_cast<int32_t>(words[k] >> 8)) * 0x1p-24f;
  } else {
    for (int64_t k = 0; k < Values<T>(); ++k) {
      const uint64_t bits = (uint64_t{words[2 * k]} << 32 | words[2 * k + 1]) >> 11;
      u[k] = static_cast<double>(static_cast<int64_t>(bits)) * 0x1p-53;
    }
  }
}

// out[0, n) from the seed's groups, `transform(v)` turning a group's uniforms, in v, into
// its values.
template <class T, class Transform> void FillFromGroups(T* out, int64_t n, PhiloxKey key, const Transform& transform) {
  const int64_t groups = (n + Values<T>() - 1) / Values<T>();
  ParallelFor(groups, static_cast<double>(sizeof(T)) * n, [&](int64_t, int64_t first, int64_t last) {
    alignas(64) T values[Values<T>()];
    for (int64_t g = first; g < last; ++g) {
      GroupUniforms(key, g, values);
      transform(values);
      const int64_t begin = g * Values<T>();
      std::copy(values, values + std::min(Values<T>(), n - begin), out + begin);
    }
  });
}

template <class T> void UniformRandom(KernelContext& ctx) {
  const double lo = ctx.Attr<float>("min"), hi = ctx.Attr<float>("max");
  if (!(lo < hi)) throw Error("min (" + std::to_string(lo) + ") must be less than max (" + std::to_string(hi) + ")");
  Tensor out = OutputValue(ctx, "Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  // lo + (hi - lo) u rounds up to hi for u near 1 where the two are close: the largest T
  // below hi stands for it, keeping the range half-open.
  const T low = static_cast<T>(lo), width = static_cast<T>(hi - lo);
  const T below_hi = std::nextafter(static_cast<T>(hi), static_cast<T>(lo));
  FillFromGroups<T>(po, out.numel(), KeyFrom(ctx), [&](T* v) {
    for (int64_t k = 0; k < Values<T>(); ++k) v[k] = std::min(low + width * v[k], below_hi);
  });
  // Paddle's diagonal: diag_num elements diag_step + 1 apart, from the first, set to diag_val.
  const int64_t diag_num = ctx.Attr<int64_t>("diag_num"), diag_step = ctx.Attr<int64_t>("diag_step");
  if (diag_num < 0 || diag_step < 0) {
    throw Error("diag_num and diag_step must be at least 0, got " + std::to_string(diag_num) + " and " +
                std::to_string(diag_step));
  }
  if (diag_num > 0 && (diag_num - 1) * (diag_step + 1) >= out.numel()) {
    throw Error("a diagonal of " + std::to_string(diag_num) + " elements " + std::to_string(diag_step + 1) +
                " apart does not fit Out's " + std::to_string(out.numel()));
  }
  for (int64_t i = 0; i < diag_num; ++i) po[i * (diag_step + 1)] = static_cast<T>(ctx.Attr<float>("diag_val"));
}

// The activations' loops (activation_loops.h) for functor Op on T, picked once.
template <class Op, class T> auto ActivationLoop() {
  static const auto loop = activation::LoopsFor<Op, T>().forward;
  return loop;
}

template <class T> void GaussianRandom(KernelContext& ctx) {
  const double std_dev = ctx.Attr<float>("std");
  if (!(std_dev >= 0)) throw Error("std must be non-negative, got " + std::to_string(std_dev));
  const T mean = static_cast<T>(ctx.Attr<float>("mean")), scale = static_cast<T>(std_dev);
  Tensor out = ctx.Output("Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  const activation::Log log(ctx);
  const activation::Sqrt sqrt(ctx);
  const activation::Cos cos(ctx);
  const activation::Sin sin(ctx);
  constexpr int64_t half = Values<T>() / 2;
  FillFromGroups<T>(po, out.numel(), KeyFrom(ctx), [&](T* v) {
    T* first = v;
    T* second = v + half;
    T radius[half], angle[half];
    for (int64_t k = 0; k < half; ++k) radius[k] = T(1) - first[k];  // in (0, 1]: a finite log
    ActivationLoop<activation::Log, T>()(log, radius, radius, half);
    for (int64_t k = 0; k < half; ++k) radius[k] *= T(-2);
    ActivationLoop<activation::Sqrt, T>()(sqrt, radius, radius, half);
    for (int64_t k = 0; k < half; ++k) angle[k] = static_cast<T>(2 * M_PI) * second[k];
    ActivationLoop<activation::Cos, T>()(cos, angle, first, half);
    ActivationLoop<activation::Sin, T>()(sin, angle, second, half);
    for (int64_t k = 0; k < half; ++k) {
      first[k] = mean + scale * radius[k] * first[k];
      second[k] = mean + scale * radius[k] * second[k];
    }
  });
}

template <class T> void TruncatedGaussianRandom(KernelContext& ctx) {
  const double mean = ctx.Attr<float>("mean"), std_dev = ctx.Attr<float>("std");
  if (!(std_dev >= 0)) throw Error("std must be non-negative, got " + std::to_string(std_dev));
  Tensor out = ctx.Output("Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  // The normal's CDF over [-2, 2] is (1 + erf(z / sqrt(2))) / 2: z = sqrt(2) erfinv(x) for x
  // uniform in [-erf(sqrt(2)), erf(sqrt(2))). erfinv there (w below 5) is the central
  // polynomial of Giles' single-precision approximation ("Approximating the erfinv
  // function", GPU Computing Gems, 2011); fp64 refines it by two Newton steps on erf.
  const T bound = static_cast<T>(std::erf(M_SQRT2)), lo = static_cast<T>(mean - 2 * std_dev);
  const T hi = static_cast<T>(mean + 2 * std_dev), m = static_cast<T>(mean), s = static_cast<T>(std_dev * M_SQRT2);
  const activation::Log log(ctx);
  FillFromGroups<T>(po, out.numel(), KeyFrom(ctx), [&](T* x) {
    T w[Values<T>()];
    for (int64_t k = 0; k < Values<T>(); ++k) {
      x[k] = (T(2) * x[k] - T(1)) * bound;
      w[k] = (T(1) - x[k]) * (T(1) + x[k]);
    }
    ActivationLoop<activation::Log, T>()(log, w, w, Values<T>());
    for (int64_t k = 0; k < Values<T>(); ++k) {
      const T c = -w[k] - T(2.5);
      T p = T(2.81022636e-08);
      for (const T coefficient : {T(3.43273939e-07), T(-3.5233877e-06), T(-4.39150654e-06), T(0.00021858087),
                                  T(-0.00125372503), T(-0.00417768164), T(0.246640727), T(1.50140941)}) {
        p = p * c + coefficient;
      }
      w[k] = p * x[k];
    }
    if constexpr (sizeof(T) == 8) {
      for (int64_t k = 0; k < Values<T>(); ++k) {
        for (int step = 0; step < 2; ++step) w[k] -= (std::erf(w[k]) - x[k]) / (M_2_SQRTPI * std::exp(-w[k] * w[k]));
      }
    }
    for (int64_t k = 0; k < Values<T>(); ++k) x[k] = std::min(std::max(m + s * w[k], lo), hi);  // within the bounds
  });
}

OpSchema RandomSchema(const char* type, const char* doc) {
  return OpSchema(type)
      .Doc(doc)
      .Input("ShapeTensor", "the shape, a 1-D int32/int64 tensor; replaces the attribute", RILL_SLOT_OPTIONAL)
      .Input("ShapeTensorList", "the shape, one 1-element int32/int64 tensor per dim",
             RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
      .Output("Out", "the random tensor")
      .Attr("shape", std::vector<int64_t>{}, "dimensions of Out")
      .Attr("dtype", int64_t{RILL_FP32}, "element type (fp32 or fp64)")
      .Attr("seed", int64_t{0}, "random seed; 0 draws one from the OS each run")
      .KernelDtypeFrom("attr:dtype");
}

OpSchema BatchSizeLikeSchema(const char* type, const char* doc) {
  return OpSchema(type)
      .Doc(doc)
      .Input("Input", "the tensor whose dim Out takes")
      .Output("Out", "the random tensor")
      .Attr("shape", std::vector<int64_t>{}, "dimensions of Out, one of them replaced")
      .Attr("input_dim_idx", int64_t{0}, "the dim of Input taken")
      .Attr("output_dim_idx", int64_t{0}, "the dim of Out it replaces")
      .Attr("dtype", int64_t{RILL_FP32}, "element type (fp32 or fp64)")
      .Attr("seed", int64_t{0}, "random seed; 0 draws one from the OS each run")
      .KernelDtypeFrom("attr:dtype");
}

}  // namespace

void RegisterRandom(Registrar& r) {
  const auto uniform = [](OpSchema s) {
    return s.Attr("min", -1.0, "lower bound")
        .Attr("max", 1.0, "upper bound (exclusive)")
        .Attr("diag_num", int64_t{0}, "elements of a diagonal set to diag_val (0: none)")
        .Attr("diag_step", int64_t{0}, "elements skipped between two of the diagonal")
        .Attr("diag_val", 1.0, "the diagonal's value");
  };
  const auto gaussian = [](OpSchema s) { return s.Attr("mean", 0.0, "mean").Attr("std", 1.0, "standard deviation"); };
  r.Op(uniform(RandomSchema("uniform_random", "Out = values drawn uniformly from [min, max).")));
  RegisterCpu<float, double>(r, "uniform_random", [](auto t) { return &UniformRandom<decltype(t)>; });
  r.Op(uniform(BatchSizeLikeSchema("uniform_random_batch_size_like",
                                   "Out = values drawn uniformly from [min, max), of `shape` with dim output_dim_idx "
                                   "replaced by Input's dim input_dim_idx (the batch size).")));
  RegisterCpu<float, double>(r, "uniform_random_batch_size_like", [](auto t) { return &UniformRandom<decltype(t)>; });
  r.Op(gaussian(RandomSchema("gaussian_random", "Out = values drawn from a normal distribution.")));
  RegisterCpu<float, double>(r, "gaussian_random", [](auto t) { return &GaussianRandom<decltype(t)>; });
  r.Op(gaussian(BatchSizeLikeSchema("gaussian_random_batch_size_like",
                                    "Out = values drawn from a normal distribution, of `shape` with dim output_dim_idx "
                                    "replaced by Input's dim input_dim_idx (the batch size).")));
  RegisterCpu<float, double>(r, "gaussian_random_batch_size_like", [](auto t) { return &GaussianRandom<decltype(t)>; });
  r.Op(RandomSchema("truncated_gaussian_random",
                    "Out = values drawn from a normal distribution truncated to within 2 std of the mean.")
           .Attr("mean", 0.0, "mean")
           .Attr("std", 1.0, "standard deviation"));
  RegisterCpu<float, double>(r, "truncated_gaussian_random",
                             [](auto t) { return &TruncatedGaussianRandom<decltype(t)>; });
}

}  // namespace rill::math
