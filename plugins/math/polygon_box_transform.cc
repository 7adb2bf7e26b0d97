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

template <class T> void PolygonBoxTransform(KernelContext& ctx) {
  Tensor in = ctx.Input("Input");
  const std::vector<int64_t> d = in.dims();
  if (d.size() != 4 || d[1] % 2 != 0) {
    throw Error("Input must be [N, G, H, W] with G even (x and y offsets), got " + DimsString(d));
  }
  const T* p = in.data<T>();
  // Rows of W pixels on the passes' team: an x plane's row subtracts from 4 * w (one
  // vector of W values, made once), a y plane's from the constant 4 * h.
  std::vector<T> xs(static_cast<size_t>(d[3]));
  for (int64_t w = 0; w < d[3]; ++w) xs[static_cast<size_t>(w)] = static_cast<T>(4 * w);
  WriteOutput<T>(ctx, "Output", {"Input"}, d, [&](T* out) {
    ParallelFor(d[0] * d[1] * d[2], 2.0 * sizeof(T) * static_cast<double>(in.numel()),
                [&](int64_t, int64_t first, int64_t last) {
                  for (int64_t row = first; row < last; ++row) {
                    const int64_t h = row % d[2];
                    const bool x = (row / d[2]) % 2 == 0;
                    const ConstVecMap<T> from(p + row * d[3], d[3]);
                    VecMap<T> to(out + row * d[3], d[3]);
                    if (x) to = ConstVecMap<T>(xs.data(), d[3]) - from;
                    else to = static_cast<T>(4 * h) - from;
                  }
                });
  });
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
