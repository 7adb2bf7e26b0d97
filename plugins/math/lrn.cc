// lrn, lrn_grad: local response normalization across channels, with Paddle's contract
// (paddle/fluid/operators/lrn_op.cc).
//
// X is [N, C, H, W] (or [N, H, W, C] under data_format NHWC). For each position, channel c
// is divided by a power of the squared values of its n neighbouring channels (n odd, the
// window centred on c and cut at the first and last channel):
//   MidOut[c] = k + alpha * sum_{j = c - (n-1)/2}^{c + (n-1)/2} X[j]^2
//   Out[c]    = X[c] * MidOut[c]^-beta
// alpha is not divided by n (Caffe's and oneDNN's LRN divide it; Paddle's does not).
// MidOut is kept for the gradient:
//   X@GRAD[c] = MidOut[c]^-beta * Out@GRAD[c]
//             - 2 alpha beta X[c] * sum_{j in c's window} Out@GRAD[j] Out[j] / MidOut[j]
// (the window is symmetric, so j's window holds c exactly when c's holds j).
#include <cmath>
#include <string>
#include <vector>

#include "channel_layout.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct LrnAttrs {
  int64_t n;  // the window, odd
  float k, alpha, beta;
};

LrnAttrs AttrsOf(KernelContext& ctx) {
  const LrnAttrs a{ctx.Attr<int64_t>("n"), ctx.Attr<float>("k"), ctx.Attr<float>("alpha"), ctx.Attr<float>("beta")};
  if (a.n <= 0 || a.n % 2 == 0) throw Error("n must be a positive odd number of channels, got " + std::to_string(a.n));
  return a;
}

// X's [N, C, S] view, in the layout data_format names.
ChannelLayout LayoutOfX(KernelContext& ctx, const std::vector<int64_t>& d) {
  if (d.size() != 4) throw Error("X must be 4-D ([N, C, H, W] or [N, H, W, C]), got " + DimsString(d));
  ChannelLayout l;
  l.nhwc = IsNhwc(ctx.Attr<std::string>("data_format"), "data_format");
  l.n = d[0];
  l.c = l.nhwc ? d[3] : d[1];
  l.s = l.nhwc ? d[1] * d[2] : d[2] * d[3];
  return l;
}

template <class T> void Lrn(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const LrnAttrs a = AttrsOf(ctx);
  const ChannelLayout l = LayoutOfX(ctx, x.dims());
  const int64_t half = (a.n - 1) / 2;
  const T* px = x.data<T>();
  T* mid = ctx.AllocateOutput<T>("MidOut", x.dims());
  T* out = ctx.AllocateOutput<T>("Out", x.dims());
  ParallelFor(l.n, static_cast<double>(x.numel()) * sizeof(T) * 3, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < l.c; ++c) {
        const int64_t lo = std::max<int64_t>(c - half, 0), hi = std::min<int64_t>(c + half, l.c - 1);
        for (int64_t s = 0; s < l.s; ++s) {
          T sum = 0;
          for (int64_t j = lo; j <= hi; ++j) sum += px[l.At(i, j, s)] * px[l.At(i, j, s)];
          const int64_t at = l.At(i, c, s);
          mid[at] = static_cast<T>(a.k) + static_cast<T>(a.alpha) * sum;
          out[at] = px[at] * std::pow(mid[at], -static_cast<T>(a.beta));
        }
      }
    }
  });
  ctx.Output("Out").set_lod(x.lod());
}

template <class T> void LrnGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X");
  const LrnAttrs a = AttrsOf(ctx);
  const ChannelLayout l = LayoutOfX(ctx, x.dims());
  for (const char* slot : {"Out", "MidOut", "Out@GRAD"}) {
    if (ctx.Input(slot).dims() != x.dims()) {
      throw Error(std::string(slot) + " " + DimsString(ctx.Input(slot).dims()) + " is not shaped like X " +
                  DimsString(x.dims()));
    }
  }
  const int64_t half = (a.n - 1) / 2;
  const T ratio = static_cast<T>(-2) * static_cast<T>(a.alpha) * static_cast<T>(a.beta);
  const T *px = x.data<T>(), *out = ctx.Input("Out").data<T>(), *mid = ctx.Input("MidOut").data<T>(),
          *dout = ctx.Input("Out@GRAD").data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFor(l.n, static_cast<double>(x.numel()) * sizeof(T) * 5, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < l.c; ++c) {
        const int64_t lo = std::max<int64_t>(c - half, 0), hi = std::min<int64_t>(c + half, l.c - 1);
        for (int64_t s = 0; s < l.s; ++s) {
          T sum = 0;
          for (int64_t j = lo; j <= hi; ++j) {
            const int64_t at = l.At(i, j, s);
            sum += dout[at] * out[at] / mid[at];
          }
          const int64_t at = l.At(i, c, s);
          dx[at] = std::pow(mid[at], -static_cast<T>(a.beta)) * dout[at] + ratio * px[at] * sum;
        }
      }
    }
  });
}

}  // namespace

void RegisterLrn(Registrar& r) {
  const OpSchema lrn =
      OpSchema("lrn")
          .Doc(
              "Local response normalization across channels, as Paddle defines it: MidOut = k + alpha * (the sum of "
              "the squares of the n channels centred on each), Out = X * MidOut^-beta (alpha not divided by n).")
          .Input("X", "[N, C, H, W], or [N, H, W, C] under data_format NHWC")
          .Output("Out", "shaped like X, with its LoD")
          .Output("MidOut", "k + alpha * the window's sum of squares, kept for the gradient")
          .Attr("n", int64_t{5}, "the channels in a window: odd")
          .Attr("k", 2.0f, "the bias")
          .Attr("alpha", 1e-4f, "the scale of the sum of squares")
          .Attr("beta", 0.75f, "the power")
          .Attr("data_format", "AnyLayout", "NCHW or NHWC (AnyLayout: NCHW)")
          .KernelDtypeFrom("X")
          .Grad("lrn_grad", "X,Out,MidOut,Out@GRAD", "X");
  r.Op(lrn);
  r.Op(lrn.MakeGradSchema());
  RegisterCpu<float, double>(r, "lrn", [](auto t) { return &Lrn<decltype(t)>; });
  RegisterCpu<float, double>(r, "lrn_grad", [](auto t) { return &LrnGrad<decltype(t)>; });
}

}  // namespace rill::math
