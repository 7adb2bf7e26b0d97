// max_pool2d_with_index and max_pool3d_with_index (and their gradients), with Paddle's
// contract (paddle/fluid/operators/pool_with_index_op.*, math/pooling.cc): max pooling of
// X [N, C, H, W] or [N, C, D, H, W] that also gives where each maximum is. Mask (int32,
// shaped like Out) holds the index of that element within its plane of X: h * W + w, or
// (d * H + h) * W + w. A window's maximum is its first element above all before it,
// starting from -FLT_MAX: an element that is NaN or not above -FLT_MAX is never taken, so
// a window of only such elements gives -FLT_MAX and index -1. Windows are ksize wide,
// strides apart over X padded by paddings on both sides of each dim; global_pooling: one
// window over the whole plane; adaptive: ksize is Out's size and the windows split X
// evenly. The gradient adds each element of Out@GRAD to X@GRAD at its Mask (none for -1).
#include <cfloat>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "pool_plan.h"
#include "shape.h"

namespace rill::math {
namespace {

// The windows of every spatial dim, depth first; a 2-D op's depth is one window over a
// depth of 1, so that one walk serves both.
struct IndexedPool {
  int64_t planes = 0;  // N * C
  int64_t depth = 1, height = 0, width = 0;
  Windows dims[3];
  std::vector<int64_t> out_dims;
  int64_t Volume() const { return depth * height * width; }
  int64_t OutVolume() const {
    return static_cast<int64_t>(dims[0].begin.size() * dims[1].begin.size() * dims[2].begin.size());
  }
};

IndexedPool PlanOf(KernelContext& ctx, const std::vector<int64_t>& x, size_t spatial) {
  if (x.size() != spatial + 2) {
    throw Error("X " + DimsString(x) + " must be " + (spatial == 2 ? "[N, C, H, W]" : "[N, C, D, H, W]"));
  }
  std::vector<int64_t> k = ctx.Attr<std::vector<int64_t>>("ksize");
  const std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  std::vector<int64_t> pad = ctx.Attr<std::vector<int64_t>>("paddings");
  const bool adaptive = ctx.Attr<bool>("adaptive");
  if (ctx.Attr<bool>("global_pooling")) {
    k.assign(x.begin() + 2, x.end());
    pad.assign(spatial, 0);
  }
  if (k.size() != spatial || s.size() != spatial || pad.size() != spatial) {
    throw Error("ksize, strides and paddings must hold " + std::to_string(spatial) + " values each, one per spatial " +
                "dim of X " + DimsString(x) + "; they hold " + std::to_string(k.size()) + ", " +
                std::to_string(s.size()) + " and " + std::to_string(pad.size()));
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (k[i] < 1 || s[i] < 1 || pad[i] < 0) {
      throw Error("ksize and strides must be positive and paddings not negative; dim " + std::to_string(i) +
                  " has ksize " + std::to_string(k[i]) + ", stride " + std::to_string(s[i]) + ", padding " +
                  std::to_string(pad[i]));
    }
  }
  IndexedPool p;
  p.planes = x[0] * x[1];
  p.out_dims = {x[0], x[1]};
  const size_t first = 3 - spatial;  // the dims[] entry of X's first spatial dim
  if (spatial == 2) p.dims[0] = SlideWindows(1, 1, 1, 0, 0, false, false, 1);
  for (size_t i = 0; i < spatial; ++i) {
    if (adaptive) CheckedCount({x[0], x[1], k[i]}, sizeof(double), "the adaptive output (ksize)");
    p.dims[first + i] = SlideWindows(x[2 + i], k[i], s[i], pad[i], pad[i], false, adaptive, k[i]);
    p.out_dims.push_back(static_cast<int64_t>(p.dims[first + i].begin.size()));
  }
  p.depth = spatial == 3 ? x[2] : 1;
  p.height = x[spatial];
  p.width = x[spatial + 1];
  return p;
}

template <class T, size_t kSpatial> void MaxPoolWithIndex(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const IndexedPool p = PlanOf(ctx, x.dims(), kSpatial);
  const T* in = x.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", p.out_dims);
  int32_t* mask = ctx.AllocateOutput<int32_t>("Mask", p.out_dims);
  if (p.Volume() > INT32_MAX) {
    throw Error("a plane of X " + DimsString(x.dims()) + " has more elements than Mask's int32 can index");
  }
  const int64_t volume = p.Volume(), out_volume = p.OutVolume(), hw = p.height * p.width;
  const Windows &wd = p.dims[0], &wh = p.dims[1], &ww = p.dims[2];
  ParallelFor(p.planes, static_cast<double>(sizeof(T)) * static_cast<double>(p.planes * volume),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const T* xs = in + plane * volume;
                  int64_t o = plane * out_volume;
                  for (size_t od = 0; od < wd.begin.size(); ++od) {
                    for (size_t oh = 0; oh < wh.begin.size(); ++oh) {
                      for (size_t ow = 0; ow < ww.begin.size(); ++ow, ++o) {
                        T best = static_cast<T>(-FLT_MAX);
                        int64_t at = -1;
                        for (int64_t d = wd.begin[od]; d < wd.end[od]; ++d) {
                          for (int64_t h = wh.begin[oh]; h < wh.end[oh]; ++h) {
                            for (int64_t w = ww.begin[ow]; w < ww.end[ow]; ++w) {
                              const int64_t i = d * hw + h * p.width + w;
                              if (best < xs[i]) {
                                best = xs[i];
                                at = i;
                              }
                            }
                          }
                        }
                        out[o] = best;
                        mask[o] = static_cast<int32_t>(at);
                      }
                    }
                  }
                }
              });
}

template <class T, size_t kSpatial> void MaxPoolWithIndexGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), mask = ctx.Input("Mask"), g = ctx.Input("Out@GRAD");
  const IndexedPool p = PlanOf(ctx, x.dims(), kSpatial);
  if (mask.dims() != p.out_dims || g.dims() != p.out_dims || mask.dtype() != RILL_INT32) {
    throw Error("Mask (int32) and Out@GRAD must be shaped like Out " + DimsString(p.out_dims) + "; got " +
                DataTypeName(mask.dtype()) + " " + DimsString(mask.dims()) + " and " + DimsString(g.dims()));
  }
  const int32_t* m = mask.data<int32_t>();
  const T* dout = g.data<T>();
  const int64_t volume = p.Volume(), out_volume = p.OutVolume();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
  ParallelFor(p.planes, static_cast<double>(sizeof(T)) * static_cast<double>(p.planes * (volume + out_volume)),
              [&](int64_t, int64_t begin, int64_t end) {
                std::fill(dx + begin * volume, dx + end * volume, T(0));
                for (int64_t o = begin * out_volume; o < end * out_volume; ++o) {
                  if (m[o] < 0) continue;
                  if (m[o] >= volume) {
                    throw Error("Mask[" + std::to_string(o) + "] = " + std::to_string(m[o]) +
                                " is not an index within a plane of X " + DimsString(x.dims()));
                  }
                  dx[o / out_volume * volume + m[o]] += dout[o];
                }
              });
}

OpSchema IndexedPoolSchema(const char* type, size_t spatial) {
  const std::vector<int64_t> ones(spatial, 1), zeros(spatial, 0);
  const std::string layout = spatial == 2 ? "[N, C, H, W]" : "[N, C, D, H, W]";
  return OpSchema(type)
      .Doc("Out = the max of each ksize window of X " + layout +
           ", and Mask its index within X's plane (int32; -1 where no element is above -FLT_MAX); "
           "global_pooling: one window; adaptive: ksize is Out's size. As Paddle's.")
      .Input("X", layout)
      .Output("Out", "the pooled X")
      .Output("Mask", "int32, shaped like Out: each maximum's index within its plane of X")
      .RequiredAttr("ksize", RILL_ATTR_INTS, "the window (adaptive: Out's size)")
      .Attr("strides", ones, "the windows' step")
      .Attr("paddings", zeros, "added before and after each spatial dim")
      .Attr("global_pooling", false, "one window over each whole plane")
      .Attr("adaptive", false, "windows that split X evenly into ksize")
      .KernelDtypeFrom("X")
      .Grad(std::string(type) + "_grad", "X,Mask,Out@GRAD", "X");
}

}  // namespace

void RegisterPoolWithIndex(Registrar& r) {
  for (const auto& [type, spatial] : {std::pair<const char*, size_t>{"max_pool2d_with_index", 2},
                                      std::pair<const char*, size_t>{"max_pool3d_with_index", 3}}) {
    const OpSchema schema = IndexedPoolSchema(type, spatial);
    r.Op(schema);
    r.Op(schema.MakeGradSchema());
  }
  RegisterCpu<float, double>(r, "max_pool2d_with_index", [](auto t) { return &MaxPoolWithIndex<decltype(t), 2>; });
  RegisterCpu<float, double>(r, "max_pool3d_with_index", [](auto t) { return &MaxPoolWithIndex<decltype(t), 3>; });
  RegisterCpu<float, double>(r, "max_pool2d_with_index_grad",
                             [](auto t) { return &MaxPoolWithIndexGrad<decltype(t), 2>; });
  RegisterCpu<float, double>(r, "max_pool3d_with_index_grad",
                             [](auto t) { return &MaxPoolWithIndexGrad<decltype(t), 3>; });
}

}  // namespace rill::math
