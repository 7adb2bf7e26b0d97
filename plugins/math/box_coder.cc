// box_coder: boxes encoded as offsets from prior boxes, or decoded back, with Paddle's
// contract (paddle/fluid/operators/detection/box_coder_op.h).
//
// A box (x1, y1, x2, y2) has width x2 - x1 and height y2 - y1 (+1 each unless
// box_normalized) and centre (x1 + w/2, y1 + h/2) for a prior, the midpoint for a target.
// Each prior j has 4 variances: row j of PriorBoxVar, else the `variance` attribute, else 1s
// (PriorBoxVar and `variance` together are an error).
//
// encode_center_size: TargetBox [N, 4] against PriorBox [M, 4] gives OutputBox [N, M, 4],
//   row (i, j) = ((tcx - pcx) / pw, (tcy - pcy) / ph, log|tw / pw|, log|th / ph|), each
//   divided by prior j's variance.
// decode_center_size: TargetBox [N, M, 4] of such offsets gives the boxes, OutputBox of the
//   same shape: centre (v0 * t0 * pw + pcx, v1 * t1 * ph + pcy), size (exp(v2 * t2) * pw,
//   exp(v3 * t3) * ph), written as corners (x2, y2 less 1 unless box_normalized). The
//   prior of (i, j) is prior j when axis is 0 (M = PriorBox's rows), prior i when axis is 1.
// OutputBox keeps TargetBox's LoD (PriorBox's when decoding along axis 1).
#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

// A prior's width, height and centre.
template <class T> struct Prior {
  T w, h, cx, cy;
  Prior(const T* p, T one) : w(p[2] - p[0] + one), h(p[3] - p[1] + one), cx(p[0] + w / 2), cy(p[1] + h / 2) {}
};

template <class T> void BoxCoder(KernelContext& ctx) {
  Tensor prior = ctx.Input("PriorBox");
  Tensor target = ctx.Input("TargetBox");
  const std::string code_type = ctx.Attr<std::string>("code_type");
  const bool encode = code_type == "encode_center_size";
  if (!encode && code_type != "decode_center_size") {
    throw Error("code_type must be encode_center_size or decode_center_size, got '" + code_type + "'");
  }
  const int64_t axis = ctx.Attr<int64_t>("axis");
  const T one = ctx.Attr<bool>("box_normalized") ? T(0) : T(1);
  const std::vector<float> variance = ctx.Attr<std::vector<float>>("variance");
  const std::vector<int64_t> pd = prior.dims(), td = target.dims();
  if (pd.size() != 2 || pd[1] != 4) throw Error("PriorBox must be [M, 4], got " + DimsString(pd));
  const T* var = nullptr;
  if (ctx.HasInput("PriorBoxVar")) {
    Tensor v = ctx.Input("PriorBoxVar");
    if (v.dims() != pd)
      throw Error("PriorBoxVar must be shaped like PriorBox " + DimsString(pd) + ", got " + DimsString(v.dims()));
    if (!variance.empty()) throw Error("PriorBoxVar and the variance attribute cannot both be given");
    var = v.data<T>();
  }
  if (!variance.empty() && variance.size() != 4) {
    throw Error("variance must hold 4 values, got " + std::to_string(variance.size()));
  }
  // Prior j's variance k.
  auto variance_of = [&](int64_t j, int k) -> T {
    if (var) return var[j * 4 + k];
    return variance.empty() ? T(1) : static_cast<T>(variance[static_cast<size_t>(k)]);
  };
  const T* p = prior.data<T>();
  const T* t = target.data<T>();
  const int64_t m = pd[0];

  if (encode) {
    if (td.size() != 2 || td[1] != 4) throw Error("TargetBox must be [N, 4] to encode, got " + DimsString(td));
    T* out = ctx.AllocateOutput<T>("OutputBox", {td[0], m, 4});
    for (int64_t i = 0; i < td[0]; ++i) {
      const T* b = t + i * 4;
      const T tw = b[2] - b[0] + one, th = b[3] - b[1] + one;
      const T tcx = (b[2] + b[0]) / 2, tcy = (b[3] + b[1]) / 2;
      for (int64_t j = 0; j < m; ++j) {
        const Prior<T> pr(p + j * 4, one);
        T* o = out + (i * m + j) * 4;
        o[0] = (tcx - pr.cx) / pr.w / variance_of(j, 0);
        o[1] = (tcy - pr.cy) / pr.h / variance_of(j, 1);
        o[2] = std::log(std::fabs(tw / pr.w)) / variance_of(j, 2);
        o[3] = std::log(std::fabs(th / pr.h)) / variance_of(j, 3);
      }
    }
    ctx.Output("OutputBox").set_lod(target.lod());
    return;
  }

  if (td.size() != 3 || td[2] != 4) throw Error("TargetBox must be [N, M, 4] to decode, got " + DimsString(td));
  if (axis != 0 && axis != 1) throw Error("axis must be 0 or 1, got " + std::to_string(axis));
  if (td[axis == 0 ? 1 : 0] != m) {
    throw Error("TargetBox " + DimsString(td) + " must have PriorBox's " + std::to_string(m) + " rows in dim " +
                std::to_string(axis == 0 ? 1 : 0) + " (axis " + std::to_string(axis) + ")");
  }
  T* out = ctx.AllocateOutput<T>("OutputBox", td);
  for (int64_t i = 0; i < td[0]; ++i) {
    for (int64_t j = 0; j < td[1]; ++j) {
      const int64_t k = axis == 0 ? j : i;
      const Prior<T> pr(p + k * 4, one);
      const T* b = t + (i * td[1] + j) * 4;
      const T cx = variance_of(k, 0) * b[0] * pr.w + pr.cx;
      const T cy = variance_of(k, 1) * b[1] * pr.h + pr.cy;
      const T w = std::exp(variance_of(k, 2) * b[2]) * pr.w;
      const T h = std::exp(variance_of(k, 3) * b[3]) * pr.h;
      T* o = out + (i * td[1] + j) * 4;
      o[0] = cx - w / 2;
      o[1] = cy - h / 2;
      o[2] = cx + w / 2 - one;
      o[3] = cy + h / 2 - one;
    }
  }
  ctx.Output("OutputBox").set_lod(axis == 1 ? prior.lod() : target.lod());
}

}  // namespace

void RegisterBoxCoder(Registrar& r) {
  r.Op(OpSchema("box_coder")
           .Doc("Boxes encoded as offsets from prior boxes, or decoded back (code_type), as Paddle defines it (see "
                "box_coder.cc).")
           .Input("PriorBox", "[M, 4] prior boxes (x1, y1, x2, y2)")
           .Input("PriorBoxVar", "[M, 4] each prior's variances", RILL_SLOT_OPTIONAL)
           .Input("TargetBox", "[N, 4] boxes to encode, or [N, M, 4] offsets to decode")
           .Output("OutputBox", "[N, M, 4] offsets (encode) or boxes (decode)")
           .Attr("code_type", "encode_center_size", "encode_center_size or decode_center_size")
           .Attr("box_normalized", true, "coordinates are fractions; otherwise pixels, sizes counting the last one")
           .Attr("axis", int64_t{0}, "decoding: prior j for column j (0) or prior i for row i (1)")
           .Attr("variance", std::vector<float>{}, "4 variances for every prior, when there is no PriorBoxVar")
           .KernelDtypeFrom("PriorBox"));
  RegisterCpu<float, double>(r, "box_coder", [](auto t) { return &BoxCoder<decltype(t)>; });
}

}  // namespace rill::math
