// maxout, maxout_grad: the maximum over groups of consecutive channels, with Paddle's
// contract (paddle/fluid/operators/maxout_op.cc, math/maxouting.cc).
//
// X is 4-D with its channels at `axis` (1: [N, C, H, W]; 3 or -1: [N, H, W, C]); Out has
// C / groups channels there, channel o the maximum of X's channels o*groups ...
// o*groups + groups - 1 at each position. The gradient goes to the first channel of the
// group holding the maximum (ties: the lowest), as Paddle's kernel sends it.
#include <string>
#include <vector>

#include "channel_layout.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

struct MaxoutShape {
  ChannelLayout in;   // X as [N, C, S]
  ChannelLayout out;  // Out as [N, C / groups, S]
  int64_t groups;
  std::vector<int64_t> out_dims;
};

MaxoutShape ShapeOf(KernelContext& ctx, const std::vector<int64_t>& d) {
  const int64_t groups = ctx.Attr<int64_t>("groups");
  const int64_t axis = ctx.Attr<int64_t>("axis");
  if (groups <= 1) throw Error("groups must be greater than 1, got " + std::to_string(groups));
  if (axis != 1 && axis != 3 && axis != -1) throw Error("axis must be 1, 3 or -1, got " + std::to_string(axis));
  if (d.size() != 4) throw Error("X must be 4-D, got " + DimsString(d));
  const size_t a = axis == 1 ? 1 : 3;
  if (d[a] % groups != 0) {
    throw Error("X " + DimsString(d) + " has " + std::to_string(d[a]) + " channels at axis " + std::to_string(axis) +
                ", not a multiple of groups " + std::to_string(groups));
  }
  MaxoutShape s;
  s.groups = groups;
  s.in.nhwc = s.out.nhwc = a == 3;
  s.in.n = s.out.n = d[0];
  s.in.c = d[a];
  s.out.c = d[a] / groups;
  s.in.s = s.out.s = a == 3 ? d[1] * d[2] : d[2] * d[3];
  s.out_dims = d;
  s.out_dims[a] = s.out.c;
  return s;
}

// The channel of group `o` holding its maximum at (i, s): the lowest of equal ones.
template <class T> int64_t ArgmaxOfGroup(const T* x, const MaxoutShape& s, int64_t i, int64_t o, int64_t k) {
  int64_t best = o * s.groups;
  for (int64_t g = 1; g < s.groups; ++g) {
    if (x[s.in.At(i, o * s.groups + g, k)] > x[s.in.At(i, best, k)]) best = o * s.groups + g;
  }
  return best;
}

template <class T> void Maxout(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const MaxoutShape s = ShapeOf(ctx, x.dims());
  const T* px = x.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", s.out_dims);
  // Group o's maximum at each position: its first channel's value, replaced by a later
  // channel's only where that is greater, as ArgmaxOfGroup picks it.
  const auto keep_greater = [](T* best, const T* channel, int64_t count) {
    for (int64_t k = 0; k < count; ++k) best[k] = channel[k] > best[k] ? channel[k] : best[k];
  };
  ParallelFor(s.in.n * s.out.c, static_cast<double>(x.numel()) * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i = r / s.out.c, o = r % s.out.c;
      if (!s.in.nhwc) {  // channels of S contiguous positions: vector loops along them
        T* best = out + s.out.At(i, o, 0);
        const T* first = px + s.in.At(i, o * s.groups, 0);
        std::copy(first, first + s.in.s, best);
        for (int64_t g = 1; g < s.groups; ++g) keep_greater(best, first + g * s.in.s, s.in.s);
      } else {
        for (int64_t k = 0; k < s.out.s; ++k) out[s.out.At(i, o, k)] = px[s.in.At(i, ArgmaxOfGroup(px, s, i, o, k), k)];
      }
    }
  });
}

template <class T> void MaxoutGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X");
  const MaxoutShape s = ShapeOf(ctx, x.dims());
  Tensor g = ctx.Input("Out@GRAD");
  if (g.dims() != s.out_dims) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(s.out_dims));
  }
  const T *px = x.data<T>(), *dout = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  std::fill(dx, dx + x.numel(), T(0));
  ParallelFor(s.in.n, static_cast<double>(x.numel()) * sizeof(T) * 2, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t o = 0; o < s.out.c; ++o) {
        for (int64_t k = 0; k < s.out.s; ++k)
          dx[s.in.At(i, ArgmaxOfGroup(px, s, i, o, k), k)] = dout[s.out.At(i, o, k)];
      }
    }
  });
}

}  // namespace

void RegisterMaxout(Registrar& r) {
  const OpSchema maxout =
      OpSchema("maxout")
          .Doc(
              "Out's channel o = the maximum of X's channels o*groups ... o*groups + groups - 1, as Paddle defines it.")
          .Input("X", "4-D, channels at `axis`")
          .Output("Out", "X with C / groups channels")
          .Attr("groups", int64_t{2}, "the channels in a group: more than 1, dividing C")
          .Attr("axis", int64_t{1}, "the channel dim: 1 (NCHW), 3 or -1 (NHWC)")
          .KernelDtypeFrom("X")
          .Grad("maxout_grad", "X,Out@GRAD", "X");
  r.Op(maxout);
  r.Op(maxout.MakeGradSchema());
  RegisterCpu<float, double>(r, "maxout", [](auto t) { return &Maxout<decltype(t)>; });
  RegisterCpu<float, double>(r, "maxout_grad", [](auto t) { return &MaxoutGrad<decltype(t)>; });
}

}  // namespace rill::math
