// iou_similarity: the IoU of every pair of boxes of two lists, with Paddle's contract
// (paddle/fluid/operators/detection/iou_similarity_op.h).
//
// X [N, 4] and Y [M, 4] hold boxes (x1, y1, x2, y2); Out [N, M] is the IoU of X's box i and
// Y's box j: intersection / (area_i + area_j - intersection + 1e-10), widths counting the
// last pixel (+1) unless box_normalized, an empty intersection 0. Unlike the NMS ops'
// overlap, a box's area is taken as it comes (Paddle's kernel does not clamp it). Out
// keeps X's LoD.
#include <algorithm>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

template <class T> void IouSimilarity(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const std::vector<int64_t> xd = x.dims(), yd = y.dims();
  if (xd.size() != 2 || xd[1] != 4) throw Error("X must be [N, 4] boxes, got " + DimsString(xd));
  if (yd.size() != 2 || yd[1] != 4) throw Error("Y must be [M, 4] boxes, got " + DimsString(yd));
  const T one = ctx.Attr<bool>("box_normalized") ? T(0) : T(1);
  const T eps = static_cast<T>(1e-10);
  const int64_t n = xd[0], m = yd[0];
  const T* a = x.data<T>();
  const T* b = y.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", {n, m});
  ParallelFor(n, static_cast<double>(n * m) * sizeof(T), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* p = a + i * 4;
      const T area_p = (p[3] - p[1] + one) * (p[2] - p[0] + one);
      for (int64_t j = 0; j < m; ++j) {
        const T* q = b + j * 4;
        const T area_q = (q[3] - q[1] + one) * (q[2] - q[0] + one);
        const T ih = std::max(std::min(p[3], q[3]) - std::max(p[1], q[1]) + one, T(0));
        const T iw = std::max(std::min(p[2], q[2]) - std::max(p[0], q[0]) + one, T(0));
        const T inter = iw * ih;
        out[i * m + j] = inter / (area_p + area_q - inter + eps);
      }
    }
  });
  ctx.Output("Out").set_lod(x.lod());
}

}  // namespace

void RegisterIouSimilarity(Registrar& r) {
  r.Op(OpSchema("iou_similarity")
           .Doc("Out[i, j] = the IoU of box i of X and box j of Y, as Paddle defines it (see iou_similarity.cc).")
           .Input("X", "[N, 4] boxes (x1, y1, x2, y2)")
           .Input("Y", "[M, 4] boxes")
           .Output("Out", "[N, M] IoUs, with X's LoD")
           .Attr("box_normalized", true, "coordinates are fractions; otherwise pixels, sizes counting the last one")
           .KernelDtypeFrom("X"));
  RegisterCpu<float, double>(r, "iou_similarity", [](auto t) { return &IouSimilarity<decltype(t)>; });
}

}  // namespace rill::math
