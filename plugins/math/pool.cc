// pool2d with Fluid's contract: max or average pooling over 2-D windows of an NCHW or NHWC
// tensor (ksize, strides, paddings of 2 or 4 values, padding_algorithm EXPLICIT, SAME or
// VALID, ceil_mode, global_pooling, adaptive, exclusive averages), and its gradient.
// fp32 on oneDNN's pooling where it has the plan, otherwise (fp64, adaptive) plain loops; max
// pooling's gradient given Out on pool_loops.h's row loops.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "intra_op.h"
#include "pool_loops.h"
#include "pool_plan.h"
#include "kernels.h"
#include "onednn.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Calls fn(in, out, y0, y1, x0, x1, divisor) for each output position of each image and
// channel: `in` is the offset in X of the channel's element (0, 0), so that the window's
// element (y, x) is at in + y * p.RowStride() + x * p.ColStride(); `out` is the position's
// offset in Out; the window is [y0, y1) x [x0, x1), non-empty (Plan checks). The (image,
// channel) planes split across the passes' team (parallel_for.h): each reads and writes
// only its own elements (of Out, and of X@GRAD), so the split changes no result.
template <class T, class F> void ForEachWindow(const PoolPlan& p, F fn) {
  const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
  const double bytes = sizeof(T) * static_cast<double>(p.n * p.c * (p.h * p.w + oh * ow));
  ParallelFor(p.n * p.c, bytes, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t i = plane / p.c, ch = plane % p.c;
      const int64_t in = p.At(i, ch, 0, 0, p.h, p.w);
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t y0 = p.rows.begin[y], y1 = p.rows.end[y], x0 = p.cols.begin[x], x1 = p.cols.end[x];
          const int64_t divisor = p.exclusive || p.adaptive ? (y1 - y0) * (x1 - x0) : p.rows.full * p.cols.full;
          fn(in, p.At(i, ch, y, x, oh, ow), y0, y1, x0, x1, divisor);
        }
      }
    }
  });
}

// A window of X: [y0, y1) x [x0, x1) of the channel whose element (0, 0) is `base`, its
// elements `row` and `col` apart. Both scans below are branch-free (a select per
// element): which element is largest in random data is a branch no predictor guesses.
struct Window {
  int64_t y0, y1, x0, x1, row, col;
};

// The window's maximum by nan_order.h's rule: NaN where it holds one.
template <class T> [[gnu::always_inline]] inline T WindowMax(const T* base, const Window& w) {
  T acc = -std::numeric_limits<T>::infinity();
  bool nan = false;
  for (int64_t y = w.y0; y < w.y1; ++y) {
    const T* r = base + y * w.row;
    for (int64_t x = w.x0; x < w.x1; ++x) {
      const T v = r[x * w.col];
      acc = v > acc ? v : acc;
      nan |= v != v;
    }
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : acc;
}

// The offset from `base` of the window's first element (row by row) equal to m, or where
// m is NaN its first NaN; -1 where none is.
template <class T> [[gnu::always_inline]] inline int64_t FirstEqual(const T* base, const Window& w, T m) {
  const bool nan = m != m;
  int64_t first = -1;
  for (int64_t y = w.y1; y-- > w.y0;) {  // backwards, so the last match kept is the first
    for (int64_t x = w.x1; x-- > w.x0;) {
      const int64_t at = y * w.row + x * w.col;
      const T v = base[at];
      const int64_t hit = (v == m) | (nan & (v != v));  // 0 or 1: `first` moves by arithmetic
      first += (at - first) * hit;
    }
  }
  return first;
}

// Whether no two of the windows share an element.
bool Disjoint(const Windows& ws) {
  for (size_t i = 1; i < ws.begin.size(); ++i) {
    if (ws.begin[i] < ws.end[i - 1]) return false;
  }
  return true;
}

// Whether an offset within a plane (NCHW) or an image (NHWC) of X fits in int32_t, as
// pool_loops.h's loops need.
bool OffsetsFitInt32(const PoolPlan& p) {
  return (p.nhwc ? p.h * p.w * p.c : p.h * p.w) <= std::numeric_limits<int32_t>::max();
}

// Max pooling's gradient where Out is given: each window's gradient goes to its first
// element equal to its Out, or where none is (an Out that is not X's pooling there) to its
// first largest. Windows are searched a row at a time (FirstEqualRow): windows evenly
// spaced in X whose Out and Out@GRAD lie side by side. NCHW, those are the whole windows
// of an output row, kw wide and sw apart (the clipped ones at its ends go one by one);
// NHWC, the windows of one position across the channels. The work splits by planes (NCHW)
// or images (NHWC), each zeroing and writing only its own part of X@GRAD, in a fixed order.
// Needs OffsetsFitInt32(p).
template <class T> void MaxGradFromOut(const PoolPlan& p, const T* x, const T* out, const T* g, T* dx) {
  const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
  const int64_t row = p.RowStride(), col = p.ColStride();
  const MaxPoolGradLoops<T>& loops = MaxPoolGradLoopsFor<T>();
  // Where no two windows share an element, each element of X@GRAD gets at most one
  // window's gradient: it is stored, not added to the 0 there.
  const bool disjoint = Disjoint(p.rows) && Disjoint(p.cols);
  // Windows [0, n) of [y0, y1) x [x0, x1), window k's from X's offset in + k * step; their
  // Out and Out@GRAD at o + k.
  const auto send = [&](std::vector<int32_t>& at, int64_t in, int64_t n, int64_t step, int64_t y0, int64_t y1,
                        int64_t x0, int64_t x1, int64_t o) {
    at.resize(static_cast<size_t>(n));
    const bool missed = loops.first_equal(x + in, n, step, y1 - y0, x1 - x0, row, col, out + o, at.data());
    // Locals, not the closure's references, so that a store to X@GRAD is not taken to
    // change where the next window's values are.
    const T* const xs = x + in;
    const T* const gs = g + o;
    T* const dxs = dx + in;
    int32_t* const found = at.data();
    for (int64_t k = 0; missed && k < n; ++k) {
      if (found[k] < 0) {
        const Window w{0, y1 - y0, 0, x1 - x0, row, col};
        found[k] = static_cast<int32_t>(FirstEqual(xs + k * step, w, WindowMax(xs + k * step, w)));
      }
    }
    if (disjoint) {
      loops.store(found, gs, n, step, dxs);
    } else {
      for (int64_t k = 0; k < n; ++k) dxs[k * step + found[k]] += gs[k];
    }
  };
  const double bytes = sizeof(T) * static_cast<double>(p.n * p.c * (2 * p.h * p.w + 2 * oh * ow));
  if (p.nhwc) {
    const int64_t image = p.h * p.w * p.c;
    ParallelFor(p.n, bytes, [&](int64_t, int64_t begin, int64_t end) {
      std::vector<int32_t> at;
      for (int64_t i = begin; i < end; ++i) {
        std::fill(dx + i * image, dx + (i + 1) * image, T(0));
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t xx = 0; xx < ow; ++xx) {
            const int64_t y0 = p.rows.begin[y], x0 = p.cols.begin[xx];
            send(at, p.At(i, 0, y0, x0, p.h, p.w), p.c, 1, y0, p.rows.end[y], x0, p.cols.end[xx],
                 p.At(i, 0, y, xx, oh, ow));
          }
        }
      }
    });
    return;
  }
  // [xa, xb): the output columns whose windows are whole, kw wide from xx * sw - left.
  const auto whole = [&](int64_t xx) {
    return !p.adaptive && p.cols.begin[xx] == xx * p.sw - p.left && p.cols.end[xx] == p.cols.begin[xx] + p.kw;
  };
  int64_t xa = 0;
  while (xa < ow && !whole(xa)) ++xa;
  int64_t xb = xa;
  while (xb < ow && whole(xb)) ++xb;
  ParallelFor(p.n * p.c, bytes, [&](int64_t, int64_t begin, int64_t end) {
    std::vector<int32_t> at;
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t in = plane * p.h * p.w;
      std::fill(dx + in, dx + in + p.h * p.w, T(0));
      for (int64_t y = 0; y < oh; ++y) {
        const int64_t y0 = p.rows.begin[y], y1 = p.rows.end[y], o = (plane * oh + y) * ow;
        const auto one = [&](int64_t xx) {
          send(at, in + y0 * row + p.cols.begin[xx] * col, 1, 0, y0, y1, p.cols.begin[xx], p.cols.end[xx], o + xx);
        };
        for (int64_t xx = 0; xx < xa; ++xx) one(xx);
        if (xb > xa) {
          const int64_t x0 = p.cols.begin[xa];
          send(at, in + y0 * row + x0 * col, xb - xa, p.sw * col, y0, y1, x0, x0 + p.kw, o + xa);
        }
        for (int64_t xx = xb; xx < ow; ++xx) one(xx);
      }
    }
  });
}

// oneDNN's pooling for an fp32 plan that is not adaptive (oneDNN has no adaptive
// pooling): the same windows, its right and bottom padding set to where the last window
// ends (ceil_mode's included), exclusive averages excluding the padding and the others
// dividing by the window's size, as Fluid's do.
class OnednnPool {
 public:
  // Each writes its result and returns true, or returns false, writing nothing, where
  // oneDNN has no implementation for the plan.
  bool Forward(const PoolPlan& p, const float* x, float* y) {
    if (p.adaptive || p.n == 0 || p.c == 0) return false;
    const Geometry g(p);
    return RunIntraOp(g.Flops(p), g.Bytes(p), [&] {
      const auto call = Find(kForward, p, g);
      if (!call->supported) return false;
      call->Run({const_cast<float*>(x), y});
      return true;
    });
  }

  // X@GRAD from X and Out@GRAD. Max pooling's gradient goes to the element oneDNN's
  // forward pass records as its window's largest (the first, as Fluid's), so that pass
  // runs again here, into scratch.
  bool Backward(const PoolPlan& p, const float* x, const float* dy, float* dx) {
    if (p.adaptive || p.n == 0 || p.c == 0) return false;
    const Geometry g(p);
    return RunIntraOp(2 * g.Flops(p), 2 * g.Bytes(p), [&] {
      const auto backward = Find(kBackward, p, g);
      if (!backward->supported) return false;
      if (p.max) {
        const auto forward = Find(kForwardRecording, p, g);
        if (!forward->supported) return false;
        const OnednnScratch y(forward->operands[1].user.get_size()), workspace(forward->operands[2].user.get_size());
        forward->Run({const_cast<float*>(x), y.data(), workspace.data()});
        backward->Run({const_cast<float*>(dy), workspace.data(), dx});
      } else {
        backward->Run({const_cast<float*>(dy), dx});
      }
      return true;
    });
  }

 private:
  // Out's size, and the bottom and right padding oneDNN is given: up to where the last
  // window ends (ceil_mode's included; never less than 0).
  struct Geometry {
    explicit Geometry(const PoolPlan& p)
        : oh(static_cast<int64_t>(p.rows.begin.size())),
          ow(static_cast<int64_t>(p.cols.begin.size())),
          bottom(std::max<int64_t>((oh - 1) * p.sh + p.kh - p.h - p.top, 0)),
          right(std::max<int64_t>((ow - 1) * p.sw + p.kw - p.w - p.left, 0)) {}
    double Flops(const PoolPlan& p) const { return static_cast<double>(p.n * p.c * oh * ow * p.kh * p.kw); }
    // X read and Out written (or Out@GRAD read and X@GRAD written).
    double Bytes(const PoolPlan& p) const {
      return sizeof(float) * static_cast<double>(p.n * p.c * (p.h * p.w + oh * ow));
    }
    int64_t oh, ow, bottom, right;
  };
  // kForward: (X) -> Out; kForwardRecording: (X) -> Out, workspace (max's argmax);
  // kBackward: (Out@GRAD[, workspace]) -> X@GRAD.
  enum Kind : int64_t { kForward, kForwardRecording, kBackward };
  using Key = std::array<int64_t, 19>;

  std::shared_ptr<const OnednnCall> Find(Kind kind, const PoolPlan& p, const Geometry& g) {
    const Key key{kind,
                  p.nhwc,
                  p.max,
                  p.exclusive,
                  p.n,
                  p.c,
                  p.h,
                  p.w,
                  p.kh,
                  p.kw,
                  p.sh,
                  p.sw,
                  p.top,
                  p.left,
                  g.bottom,
                  g.right,
                  g.oh,
                  g.ow,
                  omp_get_max_threads()};
    return cache_.Find(key, [&] {
      using dnnl::memory;
      const auto tag = p.nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw;
      const memory::desc in({p.n, p.c, p.h, p.w}, memory::data_type::f32, tag);
      const memory::desc out({p.n, p.c, g.oh, g.ow}, memory::data_type::f32, tag);
      const dnnl::algorithm algorithm = p.max         ? dnnl::algorithm::pooling_max
                                        : p.exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                                                      : dnnl::algorithm::pooling_avg_include_padding;
      const memory::dims strides{p.sh, p.sw}, kernel{p.kh, p.kw}, pad_l{p.top, p.left}, pad_r{g.bottom, g.right};
      const dnnl::pooling_forward::primitive_desc forward(
          dnnl::pooling_forward::desc(
              kind == kForward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training, algorithm, in,
              out, strides, kernel, pad_l, pad_r),
          UserScratchpad(), CpuEngine());
      OnednnCall c;
      if (kind == kForward) {
        c.primitive = dnnl::pooling_forward(forward);
        c.operands = {{DNNL_ARG_SRC, in, forward.src_desc()}, {DNNL_ARG_DST, out, forward.dst_desc(), true}};
      } else if (kind == kForwardRecording) {
        c.primitive = dnnl::pooling_forward(forward);
        c.operands = {{DNNL_ARG_SRC, in, forward.src_desc()},
                      {DNNL_ARG_DST, forward.dst_desc(), forward.dst_desc(), true},
                      {DNNL_ARG_WORKSPACE, forward.workspace_desc(), forward.workspace_desc(), true}};
      } else {
        const dnnl::pooling_backward::primitive_desc backward(
            dnnl::pooling_backward::desc(algorithm, in, out, strides, kernel, pad_l, pad_r), UserScratchpad(),
            CpuEngine(), forward);
        c.primitive = dnnl::pooling_backward(backward);
        c.operands = {{DNNL_ARG_DIFF_DST, out, backward.diff_dst_desc()}};
        if (p.max) c.operands.push_back({DNNL_ARG_WORKSPACE, backward.workspace_desc(), backward.workspace_desc()});
        c.operands.push_back({DNNL_ARG_DIFF_SRC, in, backward.diff_src_desc(), true});
      }
      return c;
    });
  }

  OnednnCache<Key> cache_;
};

// oneDNN's max pooling does not propagate a NaN (nan_order.h's rule), so max pooling of
// an input holding one runs the loops.
bool OnednnMaxKeepsNans(const PoolPlan& p, const Tensor& x) {
  return !p.max || ParallelCount(x.data<float>(), x.numel(), [](float v) { return v != v; }) == 0;
}

// pool2d: fp32 on oneDNN (OnednnPool) where it has the plan, else (fp64, adaptive) loops.
// An Out that is X's own variable is computed aside first.
template <class T> class Pool2d {
 public:
  explicit Pool2d(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor x = ctx.Input("X");
    const PoolPlan p = PoolPlanOf(ctx, x.dims());
    if constexpr (std::is_same_v<T, float>) {
      if (!OutputIsInput(ctx, "Out", {"X"}) && OnednnMaxKeepsNans(p, x) &&
          onednn_.Forward(p, x.data<T>(), ctx.AllocateOutput<T>("Out", p.out_dims))) {
        return;
      }
    }
    const T* px = x.data<T>();
    const int64_t row = p.RowStride(), col = p.ColStride();
    WriteOutput<T>(ctx, "Out", {"X"}, p.out_dims, [&](T* out) {
      ForEachWindow<T>(p, [&](int64_t in, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t divisor) {
        if (p.max) {
          out[o] = WindowMax(px + in, Window{y0, y1, x0, x1, row, col});
          return;
        }
        T acc = T(0);
        for (int64_t y = y0; y < y1; ++y) {
          const T* r = px + in + y * row;
          for (int64_t xx = x0; xx < x1; ++xx) acc += r[xx * col];
        }
        out[o] = acc / static_cast<T>(divisor);
      });
    });
  }

 private:
  OnednnPool onednn_;
};

// pool2d's gradient. Max sends each output's gradient to its window's first largest
// element: where Out is given (Paddle's pool2d_grad reads it), the first equal to Out there
// (MaxGradFromOut), which saves finding the window's maximum again, but for fp32 NHWC on
// oneDNN (OnednnPool) where it has the plan; without Out, fp32 on oneDNN, else loops. Avg
// spreads it evenly over the window's divisor, on oneDNN or the loops.
template <class T> class Pool2dGrad {
 public:
  explicit Pool2dGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor x = ctx.Input("X");
    const PoolPlan p = PoolPlanOf(ctx, x.dims());
    const int64_t out_numel = Product(p.out_dims, 0, p.out_dims.size());
    Tensor g = ctx.Input("Out@GRAD");
    if (g.numel() != out_numel) {
      throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(p.out_dims));
    }
    const T* out = nullptr;
    if (p.max && ctx.HasInput("Out")) {
      Tensor o = ctx.Input("Out");
      if (o.numel() != out_numel) {
        throw Error("Out " + DimsString(o.dims()) + " is not X's pooling, " + DimsString(p.out_dims));
      }
      out = o.data<T>();
    }
    const T* px = x.data<T>();
    const T* pg = g.data<T>();
    T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
    if constexpr (std::is_same_v<T, float>) {
      // NHWC, oneDNN's max pooling gradient outruns the row loops even recomputing the
      // forward pass; NCHW, it does not.
      if ((!out || p.nhwc) && OnednnMaxKeepsNans(p, x) && onednn_.Backward(p, px, pg, dx)) return;
    }
    if (out && OffsetsFitInt32(p)) {
      MaxGradFromOut(p, px, out, pg, dx);
      return;
    }
    ParallelFill(dx, x.numel(), T(0));
    const int64_t row = p.RowStride(), col = p.ColStride();
    ForEachWindow<T>(p, [&](int64_t in, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t divisor) {
      if (p.max) {
        const Window w{y0, y1, x0, x1, row, col};
        const T* base = px + in;
        dx[in + FirstEqual(base, w, WindowMax(base, w))] += pg[o];
        return;
      }
      const T share = pg[o] / static_cast<T>(divisor);
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t xx = x0; xx < x1; ++xx) dx[in + y * row + xx * col] += share;
      }
    });
  }

 private:
  OnednnPool onednn_;
};

}  // namespace

void RegisterPool(Registrar& r) {
  const OpSchema pool2d =
      OpSchema("pool2d")
          .Doc(
              "Out = the max or average of each ksize window of X (NCHW or NHWC), windows strides apart over X "
              "padded by paddings ([h, w] or [top, bottom, left, right]) or as padding_algorithm says; adaptive: "
              "ksize is Out's size and the windows split X evenly.")
          .Input("X", "[N, C, H, W] or [N, H, W, C]")
          .Output("Out", "the pooled X")
          .Attr("pooling_type", "max", "max or avg")
          .Attr("ksize", std::vector<int64_t>{1, 1}, "the window (adaptive: Out's size)")
          .Attr("global_pooling", false, "one window over all of H and W")
          .Attr("strides", std::vector<int64_t>{1, 1}, "the windows' step")
          .Attr("paddings", std::vector<int64_t>{0, 0}, "[h, w] or [top, bottom, left, right]")
          .Attr("exclusive", true, "an average counts only the elements inside X, not the padding")
          .Attr("adaptive", false, "windows that split X evenly into ksize")
          .Attr("ceil_mode", false, "a last partial window counts")
          .Attr("data_format", "NCHW", "NCHW or NHWC")
          .Attr("padding_algorithm", "EXPLICIT", "EXPLICIT (paddings), SAME or VALID")
          .KernelDtypeFrom("X")
          .Grad("pool2d_grad", "X,Out,Out@GRAD", "X");
  r.Op(pool2d);
  // Out optional, so that a pool2d_grad written without it (by Rill before it passed Out)
  // still runs.
  OpSchema without_out = pool2d;
  OpSchema grad = without_out.Grad("pool2d_grad", "X,Out@GRAD", "X").MakeGradSchema();
  r.Op(grad.Input("Out", "the forward's Out (max: each window's gradient goes to its first element equal to it)",
                  RILL_SLOT_OPTIONAL));
  RegisterCpuStateful<float, double>(r, "pool2d", [](auto t) { return TypeTag<Pool2d<decltype(t)>>{}; });
  RegisterCpuStateful<float, double>(r, "pool2d_grad", [](auto t) { return TypeTag<Pool2dGrad<decltype(t)>>{}; });
}

}  // namespace rill::math
