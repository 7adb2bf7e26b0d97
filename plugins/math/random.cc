// uniform_random, gaussian_random and truncated_gaussian_random (a normal distribution's
// values within two standard deviations of the mean, the others drawn again), and the
// first two's *_batch_size_like forms (Out's shape takes one dim from Input). A non-zero
// `seed` makes the values reproducible (the same seed gives the same tensor, run after run,
// process after process); seed 0 draws a fresh seed from the OS each run, as in Fluid.
#include <cmath>
#include <random>

#include "kernels.h"
#include "ops.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// Out's shape: from Input and `shape` for a *_batch_size_like op (the only ones with an
// Input), else ShapeTensor, ShapeTensorList or `shape`.
std::vector<int64_t> OutShape(KernelContext& ctx) {
  if (ctx.HasInput("Input")) return BatchSizeLikeShape(ctx);
  return IntsFromInputs(ctx, "ShapeTensor", "ShapeTensorList", "shape");
}

uint64_t SeedFrom(KernelContext& ctx) {
  const int64_t seed = ctx.Attr<int64_t>("seed");
  return seed != 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
}

template <class T> void UniformRandom(KernelContext& ctx) {
  const double lo = ctx.Attr<float>("min"), hi = ctx.Attr<float>("max");
  if (!(lo < hi)) throw Error("min (" + std::to_string(lo) + ") must be less than max (" + std::to_string(hi) + ")");
  std::mt19937_64 engine(SeedFrom(ctx));
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor out = OutputValue(ctx, "Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = static_cast<T>(dist(engine));
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

template <class T> void GaussianRandom(KernelContext& ctx) {
  const double std_dev = ctx.Attr<float>("std");
  if (!(std_dev >= 0)) throw Error("std must be non-negative, got " + std::to_string(std_dev));
  std::mt19937_64 engine(SeedFrom(ctx));
  std::normal_distribution<double> dist(ctx.Attr<float>("mean"), std_dev);
  Tensor out = ctx.Output("Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = static_cast<T>(dist(engine));
}

template <class T> void TruncatedGaussianRandom(KernelContext& ctx) {
  const double mean = ctx.Attr<float>("mean"), std_dev = ctx.Attr<float>("std");
  if (!(std_dev >= 0)) throw Error("std must be non-negative, got " + std::to_string(std_dev));
  std::mt19937_64 engine(SeedFrom(ctx));
  std::normal_distribution<double> dist(mean, std_dev);
  Tensor out = ctx.Output("Out");
  T* po = out.Allocate<T>(OutShape(ctx));
  for (int64_t i = 0; i < out.numel(); ++i) {
    double v = dist(engine);
    while (std::abs(v - mean) > 2 * std_dev) v = dist(engine);  // each try lands inside with p = 0.954
    po[i] = static_cast<T>(v);
  }
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
                    "Out = values drawn from a normal distribution, within 2 std of the mean (others drawn again).")
           .Attr("mean", 0.0, "mean")
           .Attr("std", 1.0, "standard deviation"));
  RegisterCpu<float, double>(r, "truncated_gaussian_random",
                             [](auto t) { return &TruncatedGaussianRandom<decltype(t)>; });
}

}  // namespace rill::math
