// prelu, with Fluid's contract: Out = X where X > 0, else Alpha * X, with one Alpha for
// all of X (mode "all"), one per channel (dim 1 of NCHW, the last of NHWC: "channel"), or
// one per element of a sample ("element": Alpha shaped like X without its batch dim). Its
// gradient also gives Alpha@GRAD, the sum of X * Out@GRAD where X <= 0 over the elements
// sharing each Alpha.
#include "activation_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Which Alpha each element of X uses: its index is (i / inner) % count.
struct AlphaOf {
  int64_t inner = 1, count = 1;
  int64_t operator()(int64_t i) const { return (i / inner) % count; }
};

AlphaOf PlanAlpha(KernelContext& ctx, const std::vector<int64_t>& d, int64_t alphas) {
  const std::string mode = ctx.Attr<std::string>("mode");
  AlphaOf a;
  int64_t want = 1;
  if (mode == "all") {
    a.inner = Product(d, 0, d.size());
    a.count = 1;
  } else if (mode == "channel") {
    if (d.size() < 2) throw Error("channel mode needs X with a channel dim, X is " + DimsString(d));
    const bool nhwc = IsNhwc(ctx.Attr<std::string>("data_format"), "data_format");
    const size_t c = nhwc ? d.size() - 1 : 1;
    a.inner = Product(d, c + 1, d.size());
    a.count = want = d[c];
  } else if (mode == "element") {
    if (d.empty()) throw Error("element mode needs X with a batch dim");
    a.inner = 1;
    a.count = want = Product(d, 1, d.size());
  } else {
    throw Error("mode '" + mode + "' is none of all, channel and element");
  }
  if (alphas != want) {
    throw Error("Alpha holds " + std::to_string(alphas) + " values; mode " + mode + " on X " + DimsString(d) +
                " takes " + std::to_string(want));
  }
  // An empty X reads no Alpha: its runs may be of any length but 0.
  a.inner = std::max<int64_t>(a.inner, 1);
  a.count = std::max<int64_t>(a.count, 1);
  return a;
}

// Calls fn(first, last, alpha) for the elements [first, last) of X sharing one Alpha, run by
// run, the elements split across the passes' team (a run may span two chunks).
template <class T, class F> void ForEachRun(const AlphaOf& at, int64_t n, const T* alpha, double bytes, F fn) {
  ParallelFor(n, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end;) {
      const int64_t run = i / at.inner, stop = std::min(end, (run + 1) * at.inner);
      fn(i, stop, alpha[run % at.count]);
      i = stop;
    }
  });
}

// Channel and all modes: a run of elements sharing one Alpha is leaky_relu of that slope,
// on the activations' loops compiled per instruction set. Element mode (a run of one) is a
// loop of its own.
template <class T> void Prelu(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor alpha = ctx.Input("Alpha");
  const AlphaOf at = PlanAlpha(ctx, x.dims(), alpha.numel());
  const T* px = x.data<T>();
  const T* pa = alpha.data<T>();
  const int64_t n = x.numel();
  WriteOutput<T>(ctx, "Out", {"X", "Alpha"}, x.dims(), [&](T* out) {
    if (at.inner == 1) {
      ParallelFor(n, 3.0 * sizeof(T) * n, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) {
          const T v = px[i], scaled = pa[i % at.count] * v;
          out[i] = v > T(0) ? v : scaled;
        }
      });
      return;
    }
    static const auto leaky = activation::LoopsFor<activation::LeakyRelu, T>();
    ForEachRun(at, n, pa, 2.0 * sizeof(T) * n, [&](int64_t first, int64_t last, T a) {
      leaky.forward(activation::LeakyRelu(a), px + first, out + first, last - first);
    });
  });
}

template <class T> void PreluGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor alpha = ctx.Input("Alpha");
  Tensor g = ctx.Input("Out@GRAD");
  if (g.dims() != x.dims())
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like X " + DimsString(x.dims()));
  const AlphaOf at = PlanAlpha(ctx, x.dims(), alpha.numel());
  const T* px = x.data<T>();
  const T* pa = alpha.data<T>();
  const T* pg = g.data<T>();
  const int64_t n = x.numel(), runs = n / at.inner, outer = runs / at.count;
  // X as [outer, count, inner]: element (o, k, j) uses Alpha[k].
  if (ctx.HasOutput("X@GRAD")) {
    T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
    if (at.inner == 1) {
      ParallelFor(n, 4.0 * sizeof(T) * n, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) {
          const T gv = pg[i], scaled = pa[i % at.count] * gv;
          dx[i] = px[i] > T(0) ? gv : scaled;
        }
      });
    } else {
      static const auto leaky = activation::LoopsFor<activation::LeakyRelu, T>();
      ForEachRun(at, n, pa, 3.0 * sizeof(T) * n, [&](int64_t first, int64_t last, T a) {
        leaky.backward(activation::LeakyRelu(a), px + first, pg + first, dx + first, last - first);
      });
    }
  }
  if (!ctx.HasOutput("Alpha@GRAD")) return;
  T* da = ctx.AllocateOutput<T>("Alpha@GRAD", alpha.dims());
  // The sum for each Alpha, in an order fixed by the shapes alone: one Alpha's elements
  // per task, or, for a single Alpha, per chunk of elements, the chunks added in order.
  const auto term = [](T v, T gv) { return v <= T(0) ? v * gv : T(0); };
  if (at.count == 1) {
    const int64_t chunks = ParallelChunks(n, 2.0 * sizeof(T) * n);
    std::vector<T> partial(static_cast<size_t>(chunks), T(0));
    ParallelFor(n, 2.0 * sizeof(T) * n, [&](int64_t chunk, int64_t begin, int64_t end) {
      T sum = 0;
      for (int64_t i = begin; i < end; ++i) sum += term(px[i], pg[i]);
      partial[static_cast<size_t>(chunk)] = sum;
    });
    T sum = 0;
    for (T v : partial) sum += v;
    da[0] = sum;
    return;
  }
  ParallelFor(at.count, 2.0 * sizeof(T) * n, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      T sum = 0;
      for (int64_t o = 0; o < outer; ++o) {
        const int64_t base = (o * at.count + k) * at.inner;
        for (int64_t j = 0; j < at.inner; ++j) sum += term(px[base + j], pg[base + j]);
      }
      da[k] = sum;
    }
  });
}

}  // namespace

void RegisterPrelu(Registrar& r) {
  const OpSchema prelu =
      OpSchema("prelu")
          .Doc(
              "Out = X where X > 0, else Alpha * X: one Alpha for all of X, one per channel, or one per element of a "
              "sample (mode).")
          .Input("X", "the input")
          .Input("Alpha", "the slopes: 1 (all), C (channel) or X's size without the batch dim (element) values")
          .Output("Out", "the result, shaped like X")
          .Attr("mode", "all", "all, channel or element")
          .Attr("data_format", "NCHW", "where channel mode finds the channels: NCHW (dim 1) or NHWC (the last)")
          .KernelDtypeFrom("X")
          .Grad("prelu_grad", "X,Alpha,Out@GRAD", "X,Alpha");
  r.Op(prelu);
  r.Op(prelu.MakeGradSchema());
  RegisterCpu<float, double>(r, "prelu", [](auto t) { return &Prelu<decltype(t)>; });
  RegisterCpu<float, double>(r, "prelu_grad", [](auto t) { return &PreluGrad<decltype(t)>; });
}

}  // namespace rill::math
