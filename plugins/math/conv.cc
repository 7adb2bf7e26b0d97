// conv2d, depthwise_conv2d, conv2d_transpose and depthwise_conv2d_transpose with Fluid's
// contracts (Filter [M, C / groups, kh, kw]; strides, paddings of 2 or 4 values,
// padding_algorithm EXPLICIT/SAME/VALID, dilations, groups, NCHW or NHWC), and their
// gradients. im2col and Gemm (gemm.h) per image and group.
#include <algorithm>
#include <tuple>
#include <type_traits>

#include "conv_plan.h"
#include "gemm.h"
#include "kernels.h"
#include "onednn_conv.h"
#include "ops.h"
#include "parallel_for.h"

namespace rill::math {
namespace {

// Image `x` (NCHW, one image) group g's columns: col[(ci, ki, kj), (oy, ox)] = the input
// under kernel tap (ki, kj) at output (oy, ox), 0 in the padding.
template <class T> void Im2Col(const ConvPlan& p, const T* x, int64_t g, Matrix<T>& col) {
  col.resize(p.col_rows(), p.oh * p.ow);
  for (int64_t ci = 0; ci < p.cg(); ++ci) {
    const T* plane = x + (g * p.cg() + ci) * p.h * p.w;
    for (int64_t ki = 0; ki < p.kh; ++ki) {
      for (int64_t kj = 0; kj < p.kw; ++kj) {
        T* row = col.data() + ((ci * p.kh + ki) * p.kw + kj) * p.oh * p.ow;
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t y = oy * p.sh - p.top + ki * p.dh;
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const int64_t xx = ox * p.sw - p.left + kj * p.dw;
            row[oy * p.ow + ox] = y >= 0 && y < p.h && xx >= 0 && xx < p.w ? plane[y * p.w + xx] : T(0);
          }
        }
      }
    }
  }
}

// The inverse gather: adds each column entry back onto the input element it came from.
template <class T> void Col2Im(const ConvPlan& p, const Matrix<T>& col, int64_t g, T* dx) {
  for (int64_t ci = 0; ci < p.cg(); ++ci) {
    T* plane = dx + (g * p.cg() + ci) * p.h * p.w;
    for (int64_t ki = 0; ki < p.kh; ++ki) {
      for (int64_t kj = 0; kj < p.kw; ++kj) {
        const T* row = col.data() + ((ci * p.kh + ki) * p.kw + kj) * p.oh * p.ow;
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t y = oy * p.sh - p.top + ki * p.dh;
          if (y < 0 || y >= p.h) continue;
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const int64_t xx = ox * p.sw - p.left + kj * p.dw;
            if (xx >= 0 && xx < p.w) plane[y * p.w + xx] += row[oy * p.ow + ox];
          }
        }
      }
    }
  }
}

// [N, H, W, C] <-> [N, C, H, W] copies, for NHWC tensors (the kernels work in NCHW).
template <class T> std::vector<T> ToNchw(const T* x, int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<T> out(static_cast<size_t>(n * c * h * w));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h * w; ++y)
      for (int64_t ch = 0; ch < c; ++ch) out[(i * c + ch) * h * w + y] = x[(i * h * w + y) * c + ch];
  return out;
}
template <class T> void FromNchw(const std::vector<T>& x, int64_t n, int64_t h, int64_t w, int64_t c, T* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h * w; ++y)
      for (int64_t ch = 0; ch < c; ++ch) out[(i * h * w + y) * c + ch] = x[(i * c + ch) * h * w + y];
}

// Group g's columns of image `x` (NCHW): Im2Col's gather, or, for a 1x1 kernel with
// stride 1 and no padding, the image's own channels of the group (the gather would copy
// them unchanged).
template <class T> const T* Columns(const ConvPlan& p, const T* x, int64_t g, Matrix<T>& col) {
  const bool identity =
      p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.top == 0 && p.left == 0 && p.oh == p.h && p.ow == p.w;
  if (identity) return x + g * p.cg() * p.h * p.w;
  Im2Col(p, x, g, col);
  return col.data();
}

// Output plane `out` [oh, ow] of a group with one input and one output channel (a
// depthwise convolution's): the sum over the kernel's taps of input plane `plane` [h, w]
// shifted by the tap, times its weight, added row by row over the outputs whose input lies
// inside the image. It is what Im2Col and a one-row Gemm compute, without the columns: the
// padding contributes nothing, so it is skipped rather than gathered as zeros.
template <class T> void ShiftedPlaneSum(const ConvPlan& p, const T* plane, const T* w, T* out) {
  // The outputs ox whose input column ox * sw + shift lies in [0, p.w).
  const auto first = [&](int64_t shift) { return shift >= 0 ? int64_t{0} : (-shift + p.sw - 1) / p.sw; };
  const auto end = [&](int64_t shift) {
    return p.w - shift <= 0 ? int64_t{0} : std::min(p.ow, (p.w - shift + p.sw - 1) / p.sw);
  };
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    T* row = out + oy * p.ow;
    std::fill(row, row + p.ow, T(0));
    for (int64_t ki = 0; ki < p.kh; ++ki) {
      const int64_t y = oy * p.sh - p.top + ki * p.dh;
      if (y < 0 || y >= p.h) continue;
      const T* in = plane + y * p.w;
      for (int64_t kj = 0; kj < p.kw; ++kj) {
        const T weight = w[ki * p.kw + kj];
        const int64_t shift = kj * p.dw - p.left;
        const int64_t stop = end(shift);
        if (p.sw == 1) {
          for (int64_t ox = first(shift); ox < stop; ++ox) row[ox] += weight * in[ox + shift];
        } else {
          for (int64_t ox = first(shift); ox < stop; ++ox) row[ox] += weight * in[ox * p.sw + shift];
        }
      }
    }
  }
}

// The bytes of plan p's input and output images, what a pass over them moves (parallel_for.h).
template <class T> double MovedBytes(const ConvPlan& p) {
  return static_cast<double>(sizeof(T)) * static_cast<double>(p.n * (p.c * p.h * p.w + p.m * p.oh * p.ow));
}

// The three products of a convolution in plan p's terms (NCHW, per image and group):
// Forward y = W col(x); BackwardData dx = col2im(W^T dy); BackwardFilter dW = dy col(x)^T.
// conv2d is Forward, its gradient the other two; conv2d_transpose is BackwardData, its
// gradient Forward and BackwardFilter. Each (image, group) writes its own part of the
// result, so they split across the passes' team (parallel_for.h) with the same result.
template <class T> std::vector<T> Forward(const ConvPlan& p, const T* x, const T* w) {
  std::vector<T> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
  ParallelFor(p.n * p.groups, MovedBytes<T>(p), [&](int64_t, int64_t begin, int64_t end) {
    Matrix<T> col;
    for (int64_t ig = begin; ig < end; ++ig) {
      const int64_t i = ig / p.groups, g = ig % p.groups;
      const T* image = x + i * p.c * p.h * p.w;
      T* out = y.data() + (i * p.m + g * p.mg()) * p.oh * p.ow;
      if (p.cg() == 1 && p.mg() == 1) {
        ShiftedPlaneSum(p, image + g * p.h * p.w, w + g * p.kh * p.kw, out);
        continue;
      }
      Gemm<T>(false, false, p.mg(), p.oh * p.ow, p.col_rows(), T(1), w + g * p.mg() * p.col_rows(),
              Columns(p, image, g, col), T(0), out);
    }
  });
  return y;
}

template <class T> std::vector<T> BackwardData(const ConvPlan& p, const T* dy, const T* w) {
  std::vector<T> dx(static_cast<size_t>(p.n * p.c * p.h * p.w), T(0));
  ParallelFor(p.n * p.groups, MovedBytes<T>(p), [&](int64_t, int64_t begin, int64_t end) {
    Matrix<T> dcol(p.col_rows(), p.oh * p.ow);
    for (int64_t ig = begin; ig < end; ++ig) {
      const int64_t i = ig / p.groups, g = ig % p.groups;
      Gemm<T>(true, false, p.col_rows(), p.oh * p.ow, p.mg(), T(1), w + g * p.mg() * p.col_rows(),
              dy + (i * p.m + g * p.mg()) * p.oh * p.ow, T(0), dcol.data());
      Col2Im(p, dcol, g, dx.data() + i * p.c * p.h * p.w);
    }
  });
  return dx;
}

// Writes dW [M, C / groups * kh * kw] into `dw`: per group, the images' products added in
// image order.
template <class T> void BackwardFilter(const ConvPlan& p, const T* x, const T* dy, T* dw) {
  ParallelFor(p.groups, MovedBytes<T>(p), [&](int64_t, int64_t begin, int64_t end) {
    Matrix<T> col;
    for (int64_t g = begin; g < end; ++g) {
      for (int64_t i = 0; i < p.n; ++i) {
        Gemm<T>(false, true, p.mg(), p.col_rows(), p.oh * p.ow, T(1), dy + (i * p.m + g * p.mg()) * p.oh * p.ow,
                Columns(p, x + i * p.c * p.h * p.w, g, col), i == 0 ? T(0) : T(1), dw + g * p.mg() * p.col_rows());
      }
    }
  });
  if (p.n == 0) std::fill(dw, dw + p.m * p.col_rows(), T(0));
}

// A tensor of `p`'s layout as NCHW (a copy), and back into `out`.
template <class T> std::vector<T> Nchw(const ConvPlan& p, const Tensor& t, int64_t c, int64_t h, int64_t w) {
  return p.nhwc ? ToNchw(t.data<T>(), p.n, h, w, c) : std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
template <class T>
void WriteLayout(const ConvPlan& p, const std::vector<T>& nchw, int64_t c, int64_t h, int64_t w, T* out) {
  if (p.nhwc) FromNchw(nchw, p.n, h, w, c, out);
  else std::copy(nchw.begin(), nchw.end(), out);
}

// conv2d and its gradient. fp32 runs oneDNN's primitives (onednn_conv.h) where oneDNN has
// one for the plan; otherwise, and for fp64, im2col and Gemm. When Output is Input or
// Filter, the result is computed aside first (the im2col path) so nothing read is
// overwritten.
template <class T> class Conv2d {
 public:
  explicit Conv2d(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    const ConvPlan p = ConvPlanOf(ctx, in.dims(), filter.dims());
    const bool aliased = OutputIsInput(ctx, "Output", {"Input", "Filter"});
    if constexpr (std::is_same_v<T, float>) {
      if (!aliased &&
          onednn_.Forward(p, in.data<T>(), filter.data<T>(), ctx.AllocateOutput<T>("Output", p.OutDims()))) {
        return;
      }
    }
    const std::vector<T> y = Forward(p, Nchw<T>(p, in, p.c, p.h, p.w).data(), filter.data<T>());
    WriteLayout(p, y, p.m, p.oh, p.ow, ctx.AllocateOutput<T>("Output", p.OutDims()));
  }

 private:
  OnednnConv onednn_;
};

template <class T> class Conv2dGrad {
 public:
  explicit Conv2dGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    Tensor dy = ctx.Input("Output@GRAD");
    const ConvPlan p = ConvPlanOf(ctx, in.dims(), filter.dims());
    if (ctx.HasOutput("Filter@GRAD")) {
      T* dw = ctx.AllocateOutput<T>("Filter@GRAD", filter.dims());
      bool done = false;
      if constexpr (std::is_same_v<T, float>) done = onednn_.BackwardWeights(p, in.data<T>(), dy.data<T>(), dw);
      if (!done) {
        BackwardFilter(p, Nchw<T>(p, in, p.c, p.h, p.w).data(), Nchw<T>(p, dy, p.m, p.oh, p.ow).data(), dw);
      }
    }
    if (ctx.HasOutput("Input@GRAD")) {
      T* dx = ctx.AllocateOutput<T>("Input@GRAD", in.dims());
      bool done = false;
      if constexpr (std::is_same_v<T, float>) done = onednn_.BackwardData(p, dy.data<T>(), filter.data<T>(), dx);
      if (!done) {
        WriteLayout(p, BackwardData(p, Nchw<T>(p, dy, p.m, p.oh, p.ow).data(), filter.data<T>()), p.c, p.h, p.w, dx);
      }
    }
  }

 private:
  OnednnConv onednn_;
};

// conv2d_transpose as the convolution whose input gradient it is: that convolution's
// input is this op's Output ([N, M, oh', ow'], M = Filter.dims[1] * groups) and its output
// this op's Input; Filter [C, M / groups, kh, kw] is that convolution's filter as it is.
// Output's size: (in - 1) * stride - paddings + dilation * (k - 1) + 1, plus what
// output_size or output_padding adds (less than a stride); SAME pads as a convolution of
// Input with that stride would, with dilation 1 (Paddle's rule).
ConvPlan TransposePlan(KernelContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& filter) {
  const std::string format = ctx.Attr<std::string>("data_format");
  const bool nhwc = format == "NHWC";
  if (in.size() != 4 || filter.size() != 4) {
    throw Error("Input " + DimsString(in) + " and Filter " + DimsString(filter) + " must be 4-D (conv2d_transpose)");
  }
  const int64_t groups = ctx.Attr<int64_t>("groups");
  if (groups < 1) throw Error("groups " + std::to_string(groups) + " must be at least 1");
  const int64_t c = nhwc ? in[3] : in[1];
  if (filter[0] != c)
    throw Error("Filter " + DimsString(filter) + " must have Input's " + std::to_string(c) + " channels first");
  const std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  std::vector<int64_t> d = ctx.Attr<std::vector<int64_t>>("dilations");
  std::vector<int64_t> pad = FourPaddings(ctx.Attr<std::vector<int64_t>>("paddings"));
  if (s.size() != 2 || d.size() != 2) {
    throw Error("strides " + DimsString(s) + " and dilations " + DimsString(d) + " must have 2 values each");
  }
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  if (algorithm == "SAME") d = {1, 1};  // Paddle's SAME resets the dilations
  const std::vector<int64_t> output_size = ctx.Attr<std::vector<int64_t>>("output_size");
  const std::vector<int64_t> output_padding = ctx.Attr<std::vector<int64_t>>("output_padding");
  const int64_t in_hw[2] = {nhwc ? in[1] : in[2], nhwc ? in[2] : in[3]};
  int64_t out_hw[2];
  for (int a = 0; a < 2; ++a) {
    const int64_t k = d[a] * (filter[2 + a] - 1) + 1;
    // SAME pads as a convolution of Input with this stride would (Paddle's rule).
    if (algorithm == "SAME") std::tie(pad[2 * a], pad[2 * a + 1]) = SamePadding(in_hw[a], k, s[a]);
    if (algorithm == "VALID") pad[2 * a] = pad[2 * a + 1] = 0;
    out_hw[a] = (in_hw[a] - 1) * s[a] - pad[2 * a] - pad[2 * a + 1] + k;
    const int64_t extra = !output_size.empty()      ? output_size.at(a) - out_hw[a]
                          : !output_padding.empty() ? output_padding.at(a)
                                                    : 0;
    if (extra < 0 || extra >= std::max<int64_t>(s[a], d[a])) {
      throw Error("output_size/output_padding asks for " + std::to_string(out_hw[a] + extra) + " along dim " +
                  std::to_string(a) + "; the strides allow " + std::to_string(out_hw[a]) + " to " +
                  std::to_string(out_hw[a] + std::max(s[a], d[a]) - 1));
    }
    out_hw[a] += extra;
    // The convolution's far padding, so that it has exactly Input's size: what
    // output_padding adds beyond a stride (possible when dilation > stride) makes it
    // negative, which shortens the convolution's last window; every kernel here computes
    // windows from the near padding only.
    pad[2 * a + 1] = (in_hw[a] - 1) * s[a] + k - out_hw[a] - pad[2 * a];
  }
  const int64_t m = filter[1] * groups;
  const std::vector<int64_t> conv_in = nhwc ? std::vector<int64_t>{in[0], out_hw[0], out_hw[1], m}
                                            : std::vector<int64_t>{in[0], m, out_hw[0], out_hw[1]};
  ConvPlan p = ConvPlanFrom(format, conv_in, filter, groups, s, d, pad);
  if (p.oh != in_hw[0] || p.ow != in_hw[1]) throw Error("conv2d_transpose: inconsistent output size");
  return p;
}

// conv2d_transpose is the convolution of TransposePlan run backwards, so its kernels are
// that convolution's: Output = BackwardData(Input); Input@GRAD = Forward(Output@GRAD);
// Filter@GRAD = BackwardFilter(Output@GRAD, Input). fp32 on oneDNN, as conv2d.
template <class T> class Conv2dTranspose {
 public:
  explicit Conv2dTranspose(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    const ConvPlan p = TransposePlan(ctx, in.dims(), filter.dims());
    const std::vector<int64_t> dims =
        p.nhwc ? std::vector<int64_t>{p.n, p.h, p.w, p.c} : std::vector<int64_t>{p.n, p.c, p.h, p.w};
    const bool aliased = OutputIsInput(ctx, "Output", {"Input", "Filter"});
    if constexpr (std::is_same_v<T, float>) {
      if (!aliased && onednn_.BackwardData(p, in.data<T>(), filter.data<T>(), ctx.AllocateOutput<T>("Output", dims))) {
        return;
      }
    }
    const std::vector<T> y = BackwardData(p, Nchw<T>(p, in, p.m, p.oh, p.ow).data(), filter.data<T>());
    WriteLayout(p, y, p.c, p.h, p.w, ctx.AllocateOutput<T>("Output", dims));
  }

 private:
  OnednnConv onednn_;
};

template <class T> class Conv2dTransposeGrad {
 public:
  explicit Conv2dTransposeGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    Tensor dy = ctx.Input("Output@GRAD");
    const ConvPlan p = TransposePlan(ctx, in.dims(), filter.dims());
    if (ctx.HasOutput("Input@GRAD")) {
      T* dx = ctx.AllocateOutput<T>("Input@GRAD", in.dims());
      bool done = false;
      if constexpr (std::is_same_v<T, float>) done = onednn_.Forward(p, dy.data<T>(), filter.data<T>(), dx);
      if (!done)
        WriteLayout(p, Forward(p, Nchw<T>(p, dy, p.c, p.h, p.w).data(), filter.data<T>()), p.m, p.oh, p.ow, dx);
    }
    if (ctx.HasOutput("Filter@GRAD")) {
      T* dw = ctx.AllocateOutput<T>("Filter@GRAD", filter.dims());
      bool done = false;
      if constexpr (std::is_same_v<T, float>) done = onednn_.BackwardWeights(p, dy.data<T>(), in.data<T>(), dw);
      if (!done) BackwardFilter(p, Nchw<T>(p, dy, p.c, p.h, p.w).data(), Nchw<T>(p, in, p.m, p.oh, p.ow).data(), dw);
    }
  }

 private:
  OnednnConv onednn_;
};

// A convolution's schema and its kernels, Kernel<T> and GradKernel<T>, for fp32 and fp64:
// conv2d's, or, `transposed`, conv2d_transpose's (its Filter [C, M / groups, kh, kw], and
// output_size and output_padding).
template <template <class> class Kernel, template <class> class GradKernel>
void AddConvolution(Registrar& r, const char* type, const char* doc, bool transposed) {
  const std::string grad = std::string(type) + "_grad";
  OpSchema schema = OpSchema(type);
  schema.Doc(doc)
      .Input("Input", "[N, C, H, W] (NCHW) or [N, H, W, C] (NHWC)")
      .Input("Filter", transposed ? "[C, M / groups, kh, kw]" : "[M, C / groups, kh, kw]")
      .Output("Output", "[N, M, oh, ow] or [N, oh, ow, M]")
      .Attr("strides", std::vector<int64_t>{1, 1}, "the step, [h, w]")
      .Attr("paddings", std::vector<int64_t>{0, 0}, "[h, w] or [top, bottom, left, right]")
      .Attr("padding_algorithm", "EXPLICIT", "EXPLICIT (paddings), SAME or VALID");
  if (transposed) {
    schema.Attr("output_size", std::vector<int64_t>{}, "Output's [h, w], within a stride of the computed size")
        .Attr("output_padding", std::vector<int64_t>{}, "added to Output's [h, w] (less than the stride)");
  }
  schema
      .Attr("groups", int64_t{1},
            transposed ? "channel groups" : "channel groups: each output channel sees C / groups inputs")
      .Attr("dilations", std::vector<int64_t>{1, 1}, "the kernel taps' spacing, [h, w]")
      .Attr("data_format", "NCHW", "NCHW or NHWC")
      .KernelDtypeFrom("Input")
      .Grad(grad, "Input,Filter,Output@GRAD", "Input,Filter");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpuStateful<float, double>(r, type, [](auto t) { return TypeTag<Kernel<decltype(t)>>{}; });
  RegisterCpuStateful<float, double>(r, grad.c_str(), [](auto t) { return TypeTag<GradKernel<decltype(t)>>{}; });
}

}  // namespace

void RegisterConv(Registrar& r) {
  AddConvolution<Conv2d, Conv2dGrad>(r, "conv2d",
                                     "Output = the 2-D convolution (cross-correlation) of Input with Filter.", false);
  AddConvolution<Conv2d, Conv2dGrad>(
      r, "depthwise_conv2d", "conv2d with groups equal to Input's channels (each channel convolved on its own).",
      false);
  AddConvolution<Conv2dTranspose, Conv2dTransposeGrad>(
      r, "conv2d_transpose",
      "Output = the transposed 2-D convolution of Input with Filter (the gradient of conv2d with respect to its "
      "input): Output's size (in - 1) * stride - paddings + dilation * (k - 1) + 1, plus output_padding or up to "
      "output_size; SAME pads as a convolution of Input would, with dilation 1.",
      true);
  AddConvolution<Conv2dTranspose, Conv2dTransposeGrad>(
      r, "depthwise_conv2d_transpose",
      "conv2d_transpose with groups equal to Input's channels (each channel transposed on its own).", true);
}

}  // namespace rill::math
