// Padding, with Fluid's contracts, and the gradients: pad (every dim, `paddings` giving
// before and after each, filled with pad_value), pad2d (H and W of NCHW or NHWC:
// [top, bottom, left, right]) and pad3d (D, H and W of NCDHW or NDHWC: [left, right, top,
// bottom, front, back]). pad2d and pad3d also reflect (mirror without repeating the edge),
// replicate the edge ("edge" in pad2d) or, pad3d, wrap around (circular, as
// many times round as the padding takes, as Paddle's). Each element of
// Out comes from one element of X, or is the pad value: its gradient goes there.
#include "index_map.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kCircular };

struct PadPlan {
  std::vector<int64_t> x_dims, before, after, out_dims;
  PadMode mode = PadMode::kConstant;
};

PadMode ModeOf(const std::string& mode, bool circular_allowed) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge" || mode == "replicate") return PadMode::kEdge;
  if (mode == "circular" && circular_allowed) return PadMode::kCircular;
  throw Error("mode '" + mode + "' is none of constant, reflect, " +
              (circular_allowed ? "replicate and circular" : "and edge"));
}

// Checks the paddings against the dims their mode reads from, and sets out_dims.
void Finish(PadPlan& p) {
  p.out_dims = p.x_dims;
  for (size_t k = 0; k < p.x_dims.size(); ++k) {
    const int64_t n = p.x_dims[k], most = std::max(p.before[k], p.after[k]);
    if (p.before[k] < 0 || p.after[k] < 0) {
      throw Error("paddings must not be negative, dim " + std::to_string(k) + " has " + std::to_string(p.before[k]) +
                  ", " + std::to_string(p.after[k]));
    }
    if (most > 0 && p.mode == PadMode::kReflect && most >= n) {
      throw Error("reflect padding of " + std::to_string(most) + " needs a dim longer than that, dim " +
                  std::to_string(k) + " is " + std::to_string(n));
    }
    if (most > 0 && (p.mode == PadMode::kEdge || p.mode == PadMode::kCircular) && n == 0) {
      throw Error(std::string(p.mode == PadMode::kEdge ? "edge" : "circular") + " padding of dim " + std::to_string(k) +
                  " has nothing to repeat: the dim is empty");
    }
    int64_t padded = 0;
    if (!CheckedAdd<int64_t>(n, p.before[k], &padded) || !CheckedAdd<int64_t>(padded, p.after[k], &p.out_dims[k])) {
      throw Error("paddings of dim " + std::to_string(k) + " make it longer than int64 counts",
                  RILL_RESOURCE_EXHAUSTED);
    }
  }
}

// kSpatial: 0 for pad (every dim), 2 for pad2d, 3 for pad3d.
template <int kSpatial> PadPlan PlanOf(KernelContext& ctx, const std::vector<int64_t>& x_dims) {
  PadPlan p;
  p.x_dims = x_dims;
  const size_t rank = x_dims.size();
  p.before.assign(rank, 0);
  p.after.assign(rank, 0);
  if constexpr (kSpatial == 0) {
    const std::vector<int64_t> pads = ctx.Attr<std::vector<int64_t>>("paddings");
    if (pads.size() != 2 * rank) {
      throw Error("paddings " + DimsString(pads) + " must hold two values per dim of X " + DimsString(x_dims));
    }
    for (size_t k = 0; k < rank; ++k) {
      p.before[k] = pads[2 * k];
      p.after[k] = pads[2 * k + 1];
    }
  } else {
    constexpr bool three = kSpatial == 3;
    constexpr size_t spatial = kSpatial;
    if (rank != spatial + 2) {
      throw Error("X " + DimsString(x_dims) + " must have rank " + std::to_string(spatial + 2));
    }
    std::vector<int64_t> pads = ctx.HasInput("Paddings") ? IntsOf(ctx.Input("Paddings"), "Paddings")
                                                         : ctx.Attr<std::vector<int64_t>>("paddings");
    if (pads.size() != 2 * spatial) {
      throw Error("paddings " + DimsString(pads) + " must hold " + std::to_string(2 * spatial) + " values");
    }
    const std::string format = ctx.Attr<std::string>("data_format");
    const bool channels_last = format == (three ? "NDHWC" : "NHWC");
    if (!channels_last && format != (three ? "NCDHW" : "NCHW")) {
      throw Error("data_format '" + format + "' is neither " + (three ? "NCDHW nor NDHWC" : "NCHW nor NHWC"));
    }
    const size_t first = channels_last ? 1 : 2;  // the first spatial dim
    for (size_t s = 0; s < spatial; ++s) {
      // pad2d lists [top, bottom, left, right]: H then W; pad3d [left, right, top, bottom,
      // front, back]: W, H, D, the last dim first.
      const size_t dim = three ? first + spatial - 1 - s : first + s;
      p.before[dim] = pads[2 * s];
      p.after[dim] = pads[2 * s + 1];
    }
    p.mode = ModeOf(ctx.Attr<std::string>("mode"), three);
  }
  Finish(p);
  return p;
}

// The index in a dim of n that output position `o` (before the padding `before`) reads,
// or -1 for the pad value.
int64_t Source(int64_t o, int64_t before, int64_t n, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kReflect: return i < 0 ? -i : 2 * (n - 1) - i;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kCircular: return ((i % n) + n) % n;
  }
  return -1;
}

// Calls run(out_index, x_index or -1, length) for each run of Out (index_map.h), Out's rows
// split across the passes' team for a pass moving `bytes` when `parallel`.
template <class F> void ForEachOutRun(const PadPlan& p, bool parallel, double bytes, F run) {
  const auto source = [&p](size_t k, int64_t i) { return Source(i, p.before[k], p.x_dims[k], p.mode); };
  if (!parallel) return ForEachMappedRun(p.out_dims, p.x_dims, source, run);
  ParallelForEachMappedRun(p.out_dims, p.x_dims, source, bytes, run);
}

template <class T, int kSpatial> void Pad(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const PadPlan p = PlanOf<kSpatial>(ctx, x.dims());
  const T value = static_cast<T>(ctx.Attr<float>(kSpatial == 3 ? "value" : "pad_value"));
  const T* px = x.data<T>();
  WriteOutput<T>(ctx, "Out", {"X"}, p.out_dims, [&](T* out) {
    // Out is allocated: its element count fits in int64.
    const double bytes = 2.0 * sizeof(T) * static_cast<double>(Product(p.out_dims, 0, p.out_dims.size()));
    ForEachOutRun(p, true, bytes, [&](int64_t o, int64_t from, int64_t n) {
      if (from < 0) std::fill(out + o, out + o + n, value);
      else std::copy(px + from, px + from + n, out + o);
    });
  });
}

template <class T, int kSpatial> void PadGrad(KernelContext& ctx) {
  const std::vector<int64_t> x_dims = ctx.Input("X").dims();
  Tensor g = ctx.Input("Out@GRAD");
  const PadPlan p = PlanOf<kSpatial>(ctx, x_dims);
  if (g.dims() != p.out_dims) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out " + DimsString(p.out_dims));
  }
  const T* pg = g.data<T>();
  T* dx = ctx.AllocateOutput<T>("X@GRAD", x_dims);
  const double bytes = 2.0 * sizeof(T) * static_cast<double>(g.numel());
  if (p.mode == PadMode::kConstant) {
    // No padding is negative (Finish), so Out reads each element of X exactly once: X@GRAD
    // is Out@GRAD's runs copied back, each element written once, rows split on the team.
    ForEachOutRun(p, true, bytes, [&](int64_t o, int64_t from, int64_t n) {
      if (from >= 0) std::copy(pg + o, pg + o + n, dx + from);
    });
    return;
  }
  // The other modes read edge elements from several rows, which are summed in order on one
  // thread.
  ParallelFill(dx, Product(x_dims, 0, x_dims.size()), T(0));
  ForEachOutRun(p, false, bytes, [&](int64_t o, int64_t from, int64_t n) {
    if (from >= 0) VecMap<T>(dx + from, n) += ConstVecMap<T>(pg + o, n);
  });
}

}  // namespace

void RegisterPad(Registrar& r) {
  const OpSchema pad =
      OpSchema("pad")
          .Doc("Out = X with paddings[2k] values before and paddings[2k + 1] after along each dim k, all pad_value.")
          .Input("X", "the tensor")
          .Output("Out", "the padded tensor")
          .Attr("paddings", std::vector<int64_t>{}, "before and after each dim")
          .Attr("pad_value", 0.0, "the value padded in")
          .KernelDtypeFrom("X")
          .Grad("pad_grad", "X,Out@GRAD", "X");
  const OpSchema pad2d =
      OpSchema("pad2d")
          .Doc(
              "Out = X padded along H and W: [top, bottom, left, right], by pad_value (constant), mirrored (reflect) "
              "or the edge repeated (edge).")
          .Input("X", "[N, C, H, W] or [N, H, W, C]")
          .Input("Paddings", "paddings, 1-D int32 of 4; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the padded tensor")
          .Attr("paddings", std::vector<int64_t>{0, 0, 0, 0}, "[top, bottom, left, right]")
          .Attr("mode", "constant", "constant, reflect or edge")
          .Attr("pad_value", 0.0, "the value of constant padding")
          .Attr("data_format", "NCHW", "NCHW or NHWC")
          .KernelDtypeFrom("X")
          .Grad("pad2d_grad", "X,Paddings,Out@GRAD", "X");
  const OpSchema pad3d =
      OpSchema("pad3d")
          .Doc(
              "Out = X padded along D, H and W: [left, right, top, bottom, front, back], by value (constant), mirrored "
              "(reflect), the edge repeated (replicate) or wrapped around (circular).")
          .Input("X", "[N, C, D, H, W] or [N, D, H, W, C]")
          .Input("Paddings", "paddings, 1-D int32 of 6; replaces the attribute", RILL_SLOT_OPTIONAL)
          .Output("Out", "the padded tensor")
          .Attr("paddings", std::vector<int64_t>{0, 0, 0, 0, 0, 0}, "[left, right, top, bottom, front, back]")
          .Attr("mode", "constant", "constant, reflect, replicate or circular")
          .Attr("value", 0.0, "the value of constant padding")
          .Attr("data_format", "NCDHW", "NCDHW or NDHWC")
          .KernelDtypeFrom("X")
          .Grad("pad3d_grad", "X,Paddings,Out@GRAD", "X");
  for (const OpSchema* s : {&pad, &pad2d, &pad3d}) {
    r.Op(*s);
    r.Op(s->MakeGradSchema());
  }
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "pad", [](auto t) { return &Pad<decltype(t), 0>; });
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "pad2d", [](auto t) { return &Pad<decltype(t), 2>; });
  RegisterCpu<RILL_MATH_NUMERIC_TYPES>(r, "pad3d", [](auto t) { return &Pad<decltype(t), 3>; });
  RegisterCpu<float, double>(r, "pad_grad", [](auto t) { return &PadGrad<decltype(t), 0>; });
  RegisterCpu<float, double>(r, "pad2d_grad", [](auto t) { return &PadGrad<decltype(t), 2>; });
  RegisterCpu<float, double>(r, "pad3d_grad", [](auto t) { return &PadGrad<decltype(t), 3>; });
}

}  // namespace rill::math
