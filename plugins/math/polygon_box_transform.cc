// polygon_box_transform: a text detector's per-pixel offsets to polygon corners turned into
// the corners' coordinates, with Paddle's contract
// (paddle/fluid/operators/detection/polygon_box_transform_op.cc).
//
// Input is [N, G, H, W], G even: channels alternate x and y offsets. Output, shaped alike:
//   Output[n, g, h, w] = 4 * w - Input[n, g, h, w]   for even g (x)
//                        4 * h - Input[n, g, h, w]   for odd g (y)
// (the 4 is the map's stride in the image, fixed as in Paddle). No gradient, as in Paddle.
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

template <class T>
void PolygonBoxTransform(KernelContext& ctx) {
  Tensor in = ctx.Input("Input");
  const std::vector<int64_t> d = in.dims();
  if (d.size() != 4 || d[1] % 2 != 0) {
    throw Error("Input must be [N, G, H, W] with G even (x and y offsets), got " + DimsString(d));
  }
  const T* p = in.data<T>();
  T* out = ctx.AllocateOutput<T>("Output", d);
  for (int64_t plane = 0; plane < d[0] * d[1]; ++plane) {
    const bool x = plane % 2 == 0;
    for (int64_t h = 0; h < d[2]; ++h) {
      for (int64_t w = 0; w < d[3]; ++w) {
        const int64_t at = (plane * d[2] + h) * d[3] + w;
        out[at] = static_cast<T>(4 * (x ? w : h)) - p[at];
      }
    }
  }
}

}  // namespace

void RegisterPolygonBoxTransform(Registrar& r) {
  r.Op(OpSchema("polygon_box_transform")
           .Doc("Output = 4 * (the pixel's w for even channels, h for odd ones) - Input: offsets to polygon corners "
                "made coordinates.")
           .Input("Input", "[N, G, H, W], G even: x and y offsets in turn")
           .Output("Output", "shaped like Input")
           .KernelDtypeFrom("Input"));
  RegisterCpu<float, double>(r, "polygon_box_transform", [](auto t) { return &PolygonBoxTransform<decltype(t)>; });
}

}  // namespace rill::math
