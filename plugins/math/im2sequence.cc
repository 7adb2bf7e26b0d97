// im2sequence (and its gradient): each image's patches as a sequence of rows, with
// Paddle's contract (paddle/fluid/operators/im2sequence_op.*).
//
// X is [N, C, H, W]. A kernels = [kh, kw] window slides by strides = [sh, sw] over each
// image padded by paddings = [up, left, down, right] (zeros); each position becomes one
// row of C * kh * kw values (channel-major, then window row, then column), positions in
// row-major order. Image n gives oh * ow rows, oh = (H + up + down - kh) / sh + 1 (ow
// likewise), and Out [sum of those, C * kh * kw] has one LoD sequence per image. With Y
// ([N, 2] real heights and widths, X's dtype) and more than one image, as Paddle, image n's
// oh and ow come from its real size divided (rounding up) by out_stride instead of H and W,
// windows reaching past the stored image reading zeros. The gradient adds each row's
// gradient back onto the pixels its window read.
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

struct Patches {
  int64_t n, c, h, w, kh, kw, sh, sw, up, left;
  std::vector<int64_t> oh, ow;   // each image's window positions down and across
  std::vector<uint64_t> offset;  // image n's first row in Out; offset[N] = Out's rows
  int64_t RowWidth() const { return c * kh * kw; }
};

int64_t Positions(int64_t size, int64_t k, int64_t before, int64_t after, int64_t stride, const char* what) {
  const int64_t out = (size + before + after - k) / stride + 1;
  if (size + before + after < k || out < 1) {
    throw Error(std::string(what) + " " + std::to_string(size) + " padded by " + std::to_string(before) + " + " +
                std::to_string(after) + " is smaller than the kernel's " + std::to_string(k));
  }
  return out;
}

template <class T> Patches PatchesOf(KernelContext& ctx, const std::vector<int64_t>& x) {
  if (x.size() != 4) throw Error("X " + DimsString(x) + " must be [N, C, H, W]");
  const std::vector<int64_t> k = ctx.Attr<std::vector<int64_t>>("kernels");
  const std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  const std::vector<int64_t> p = ctx.Attr<std::vector<int64_t>>("paddings");
  if (k.size() != 2 || k[0] < 1 || k[1] < 1) throw Error("kernels must be [kh, kw], both at least 1");
  if (s.size() != 2 || s[0] < 1 || s[1] < 1) throw Error("strides must be [sh, sw], both at least 1");
  if (p.size() != 4 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0) {
    throw Error("paddings must be [up, left, down, right], none negative");
  }
  Patches q{x[0], x[1], x[2], x[3], k[0], k[1], s[0], s[1], p[0], p[1], {}, {}, {0}};
  const bool real = ctx.HasInput("Y") && q.n > 1;
  std::vector<int64_t> out_stride;
  const T* y = nullptr;
  if (real) {
    Tensor sizes = ctx.Input("Y");
    if (sizes.numel() != 2 * q.n) throw Error("Y " + DimsString(sizes.dims()) + " must be [N, 2]: each image's size");
    y = sizes.data<T>();
    out_stride = ctx.Attr<std::vector<int64_t>>("out_stride");
    if (out_stride.size() != 2 || out_stride[0] < 1 || out_stride[1] < 1) {
      throw Error("out_stride must be [h, w], both at least 1");
    }
  }
  for (int64_t i = 0; i < q.n; ++i) {
    int64_t h = q.h, w = q.w;
    if (real) {
      const auto up = [](int64_t v, int64_t d) { return v / d + (v % d != 0); };
      h = up(static_cast<int64_t>(y[2 * i]), out_stride[0]);
      w = up(static_cast<int64_t>(y[2 * i + 1]), out_stride[1]);
    }
    q.oh.push_back(Positions(h, q.kh, p[0], p[2], q.sh, "height"));
    q.ow.push_back(Positions(w, q.kw, p[1], p[3], q.sw, "width"));
    q.offset.push_back(q.offset.back() + static_cast<uint64_t>(q.oh.back() * q.ow.back()));
  }
  return q;
}

// Calls visit(out_index, pixel_index) for every value of Out that a pixel of X fills
// (windows' padding, which reads zeros, is skipped).
template <class Visit> void ForEachPatchValue(const Patches& q, Visit visit) {
  const int64_t width = q.RowWidth();
  for (int64_t i = 0; i < q.n; ++i) {
    const int64_t image = i * q.c * q.h * q.w;
    for (int64_t oy = 0; oy < q.oh[i]; ++oy) {
      for (int64_t ox = 0; ox < q.ow[i]; ++ox) {
        const int64_t row = (static_cast<int64_t>(q.offset[i]) + oy * q.ow[i] + ox) * width;
        for (int64_t c = 0; c < q.c; ++c) {
          for (int64_t ky = 0; ky < q.kh; ++ky) {
            const int64_t py = oy * q.sh + ky - q.up;
            if (py < 0 || py >= q.h) continue;
            for (int64_t kx = 0; kx < q.kw; ++kx) {
              const int64_t px = ox * q.sw + kx - q.left;
              if (px < 0 || px >= q.w) continue;
              visit(row + (c * q.kh + ky) * q.kw + kx, image + (c * q.h + py) * q.w + px);
            }
          }
        }
      }
    }
  }
}

template <class T> void Im2Sequence(KernelContext& ctx) {
  Tensor x = ctx.Input("X");
  const Patches q = PatchesOf<T>(ctx, x.dims());
  const T* in = x.data<T>();
  const int64_t rows = static_cast<int64_t>(q.offset.back());
  WriteOutput<T>(ctx, "Out", {"X"}, {rows, q.RowWidth()}, [&](T* out) {
    VecMap<T>(out, rows * q.RowWidth()).setZero();
    ForEachPatchValue(q, [&](int64_t o, int64_t p) { out[o] = in[p]; });
  });
  ctx.Output("Out").set_lod({q.offset});
}

template <class T> void Im2SequenceGrad(KernelContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  Tensor x = ctx.Input("X"), g = ctx.Input("Out@GRAD");
  const Patches q = PatchesOf<T>(ctx, x.dims());
  if (g.numel() != static_cast<int64_t>(q.offset.back()) * q.RowWidth()) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out [" + std::to_string(q.offset.back()) +
                ", " + std::to_string(q.RowWidth()) + "]");
  }
  const T* dout = g.data<T>();
  WriteOutput<T>(ctx, "X@GRAD", {"Out@GRAD"}, x.dims(), [&](T* dx) {
    VecMap<T>(dx, x.numel()).setZero();
    ForEachPatchValue(q, [&](int64_t o, int64_t p) { dx[p] += dout[o]; });
  });
}

}  // namespace

void RegisterIm2Sequence(Registrar& r) {
  const OpSchema im2seq =
      OpSchema("im2sequence")
          .Doc(
              "Out = each image's kernels-sized windows (strided, zero-padded) as rows of C * kh * kw values, one "
              "LoD sequence an image. As Paddle's, including Y's real image sizes for a batch of more than one.")
          .Input("X", "[N, C, H, W]")
          .Input("Y", "[N, 2]: each image's real height and width, X's dtype", RILL_SLOT_OPTIONAL)
          .Output("Out", "[windows, C * kh * kw], a LoD tensor of one sequence an image")
          .Attr("kernels", std::vector<int64_t>{1, 1}, "the window, [kh, kw]")
          .Attr("strides", std::vector<int64_t>{1, 1}, "its step, [sh, sw]")
          .Attr("paddings", std::vector<int64_t>{0, 0, 0, 0}, "[up, left, down, right]")
          .Attr("out_stride", std::vector<int64_t>{1, 1}, "with Y: the real sizes are divided by this (rounding up)")
          .KernelDtypeFrom("X")
          .Grad("im2sequence_grad", "X,Y,Out@GRAD", "X");
  r.Op(im2seq);
  r.Op(im2seq.MakeGradSchema());
  RegisterCpu<float, double>(r, "im2sequence", [](auto t) { return &Im2Sequence<decltype(t)>; });
  RegisterCpu<float, double>(r, "im2sequence_grad", [](auto t) { return &Im2SequenceGrad<decltype(t)>; });
}

}  // namespace rill::math
