// dropout with Fluid's contract: in training each element is kept with probability
// 1 - dropout_prob (Mask says which), and either scaled by 1 / (1 - dropout_prob) then
// (upscale_in_train) or at inference by 1 - dropout_prob (downgrade_in_infer, Fluid's
// default); with is_test nothing is dropped. Its gradient passes Out@GRAD through Mask.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "philox.h"

namespace rill::math {
namespace {

bool Upscale(KernelContext& ctx) {
  const std::string how = ctx.Attr<std::string>("dropout_implementation");
  if (how != "downgrade_in_infer" && how != "upscale_in_train") {
    throw Error("dropout_implementation '" + how + "' is neither downgrade_in_infer nor upscale_in_train");
  }
  return how == "upscale_in_train";
}

double Probability(KernelContext& ctx) {
  const double p = ctx.Attr<float>("dropout_prob");
  if (!(p >= 0 && p <= 1)) throw Error("dropout_prob " + std::to_string(p) + " is not in [0, 1]");
  return p;
}

// What training multiplies a kept element (and its gradient) by: 1 / (1 - p) with
// upscale_in_train (0 when p is 1: every element is dropped), else 1.
template <class T> T TrainingScale(bool upscale, double p) {
  return upscale ? (p < 1 ? static_cast<T>(1 / (1 - p)) : T(0)) : T(1);
}

// The run's seed: the Seed input's value, else `seed` when fix_seed, else a fresh one.
uint64_t SeedOf(KernelContext& ctx) {
  if (ctx.HasInput("Seed")) return static_cast<uint64_t>(IntsOf(ctx.Input("Seed"), "dropout Seed").at(0));
  if (ctx.Attr<bool>("fix_seed")) return static_cast<uint64_t>(ctx.Attr<int64_t>("seed"));
  return std::random_device{}();
}

template <class T> void Dropout(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const double p = Probability(ctx);
  const bool upscale = Upscale(ctx);
  if (ctx.Attr<bool>("is_test")) {
    if (upscale) return ctx.Output("Out").ShareWith(x);  // Out is X
    const T keep = static_cast<T>(1 - p);
    const T* px = x.data<T>();
    const int64_t count = x.numel();
    WriteOutput<T>(ctx, "Out", {"X"}, x.dims(), [&](T* out) {
      ParallelFor(count, 2.0 * sizeof(T) * count, [&](int64_t, int64_t begin, int64_t end) {
        VecMap<T>(out + begin, end - begin) = ConstVecMap<T>(px + begin, end - begin) * keep;
      });
    });
    return;
  }
  // Element i is kept when the top 24 bits of word i % 4 of Philox block i / 4 (a uniform
  // in [0, 1) in steps of 2^-24, as a float's mantissa holds it) are at least p: a pure
  // function of (seed, i), so blocks split across the passes' team freely.
  const PhiloxKey key = PhiloxKeyOf(SeedOf(ctx));
  const auto threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));  // 2^24 p, at most 2^24
  const T scale = TrainingScale<T>(upscale, p);
  const T* px = x.data<T>();
  const int64_t n = x.numel(), blocks = (n + 3) / 4;
  // Mask straight into its output, unless the program names no Mask or names X itself.
  const bool mask_aside = !ctx.HasOutput("Mask") || OutputIsInput(ctx, "Mask", {"X"});
  std::unique_ptr<uint8_t[]> aside(mask_aside ? new uint8_t[static_cast<size_t>(n)] : nullptr);
  uint8_t* mask = mask_aside ? aside.get() : ctx.AllocateOutput<uint8_t>("Mask", x.dims());
  WriteOutput<T>(ctx, "Out", {"X"}, x.dims(), [&](T* out) {
    ParallelFor(blocks, (2.0 * sizeof(T) + 1) * static_cast<double>(n), [&](int64_t, int64_t first, int64_t last) {
      constexpr int64_t kRun = 256;  // blocks of words on the stack at a time
      uint32_t words[4 * kRun];
      for (int64_t b = first; b < last; b += kRun) {
        const int64_t run = std::min(kRun, last - b);
        PhiloxBlocks(static_cast<uint64_t>(b), run, key, words);
        const int64_t begin = 4 * b, count = std::min(4 * run, n - begin);
        const T* xs = px + begin;
        T* os = out + begin;
        uint8_t* ms = mask + begin;
        for (int64_t j = 0; j < count; ++j) {
          const bool kept = (words[j] >> 8) >= threshold;
          const T scaled = xs[j] * scale;  // both sides, then a blend: the mask is random
          ms[j] = kept;
          os[j] = kept ? scaled : T(0);
        }
      }
    });
  });
  if (mask_aside && ctx.HasOutput("Mask")) ParallelCopy(mask, ctx.AllocateOutput<uint8_t>("Mask", x.dims()), n);
}

template <class T> void DropoutGrad(KernelContext& ctx) {
  Tensor mask = ctx.Input("Mask");
  Tensor g = ctx.Input("Out@GRAD");
  if (mask.numel() != g.numel()) {
    throw Error("Mask " + DimsString(mask.dims()) + " and Out@GRAD " + DimsString(g.dims()) + " differ");
  }
  const double p = Probability(ctx);
  const T scale = TrainingScale<T>(Upscale(ctx), p);
  const uint8_t* pm = mask.data<uint8_t>();
  const T* pg = g.data<T>();
  const int64_t n = g.numel();
  WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, g.dims(), [&](T* dx) {
    ParallelFor(n, (2.0 * sizeof(T) + 1) * static_cast<double>(n), [&](int64_t, int64_t begin, int64_t end) {
      const uint8_t* ms = pm + begin;
      const T* gs = pg + begin;
      T* ds = dx + begin;
      for (int64_t i = 0; i < end - begin; ++i) {
        const T scaled = gs[i] * scale;  // both sides, then a blend: the mask is random
        ds[i] = ms[i] ? scaled : T(0);
      }
    });
  });
}

}  // namespace

void RegisterDropout(Registrar& r) {
  const OpSchema dropout =
      OpSchema("dropout")
          .Doc(
              "Out = X with each element kept with probability 1 - dropout_prob (Mask: 1 where kept), scaled by "
              "1 / (1 - dropout_prob) in training (upscale_in_train) or by 1 - dropout_prob at inference "
              "(downgrade_in_infer); with is_test nothing is dropped.")
          .Input("X", "the input")
          .Input("Seed", "an int32 seed for this run, overriding the attributes", RILL_SLOT_OPTIONAL)
          .Output("Out", "the result, shaped like X")
          .Output("Mask", "uint8, 1 where X was kept (training only)", RILL_SLOT_OPTIONAL)
          .Attr("dropout_prob", 0.5, "the probability of dropping an element")
          .Attr("is_test", false, "inference: drop nothing")
          .Attr("fix_seed", false, "use `seed` for every run")
          .Attr("seed", int64_t{0}, "the seed when fix_seed")
          .Attr("dropout_implementation", "downgrade_in_infer", "downgrade_in_infer or upscale_in_train")
          .KernelDtypeFrom("X")
          .Grad("dropout_grad", "Mask,Out@GRAD", "X");
  r.Op(dropout);
  OpSchema grad = dropout.MakeGradSchema();
  r.Op(grad.KernelDtypeFrom("Out@GRAD"));
  RegisterCpu<float, double>(r, "dropout", [](auto t) { return &Dropout<decltype(t)>; });
  RegisterCpu<float, double>(r, "dropout_grad", [](auto t) { return &DropoutGrad<decltype(t)>; });
}

}  // namespace rill::math
