// dropout with Fluid's contract: in training each element is kept with probability
// 1 - dropout_prob (Mask says which), and either scaled by 1 / (1 - dropout_prob) then
// (upscale_in_train) or at inference by 1 - dropout_prob (downgrade_in_infer, Fluid's
// default); with is_test nothing is dropped. Its gradient passes Out@GRAD through Mask.
#include <random>

#include "kernels.h"
#include "ops.h"

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
    const T keep = upscale ? T(1) : static_cast<T>(1 - p);
    const T* px = x.data<T>();
    const int64_t count = x.numel();
    WriteOutput<T>(ctx, "Out", {"X"}, x.dims(), [&](T* out) {
      ParallelFor(count, 2.0 * sizeof(T) * count, [&](int64_t, int64_t begin, int64_t end) {
        VecMap<T>(out + begin, end - begin) = ConstVecMap<T>(px + begin, end - begin) * keep;
      });
    });
    return;
  }
  const std::vector<T> in(x.data<T>(), x.data<T>() + x.numel());  // Out may be X
  T* out = ctx.AllocateOutput<T>("Out", x.dims());
  const size_t n = in.size();
  std::vector<uint8_t> mask(n);
  std::mt19937_64 rng(SeedOf(ctx));
  std::bernoulli_distribution kept(1 - p);
  for (size_t i = 0; i < n; ++i) mask[i] = kept(rng) ? 1 : 0;
  const T scale = upscale ? (p < 1 ? static_cast<T>(1 / (1 - p)) : T(0)) : T(1);
  for (size_t i = 0; i < n; ++i) out[i] = mask[i] ? in[i] * scale : T(0);
  if (ctx.HasOutput("Mask")) {
    uint8_t* m = ctx.AllocateOutput<uint8_t>("Mask", x.dims());
    std::copy(mask.begin(), mask.end(), m);
  }
}

template <class T> void DropoutGrad(KernelContext& ctx) {
  Tensor mask = ctx.Input("Mask");
  Tensor g = ctx.Input("Out@GRAD");
  if (mask.numel() != g.numel()) {
    throw Error("Mask " + DimsString(mask.dims()) + " and Out@GRAD " + DimsString(g.dims()) + " differ");
  }
  const double p = Probability(ctx);
  const T scale = Upscale(ctx) ? (p < 1 ? static_cast<T>(1 / (1 - p)) : T(0)) : T(1);
  const uint8_t* pm = mask.data<uint8_t>();
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", g.dims());
  for (int64_t i = 0; i < g.numel(); ++i) dx[i] = pm[i] ? pg[i] * scale : T(0);
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
