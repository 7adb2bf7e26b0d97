// conv2d and depthwise_conv2d with Fluid's contract (Filter [M, C / groups, kh, kw];
// strides, paddings of 2 or 4 values, padding_algorithm EXPLICIT/SAME/VALID, dilations,
// groups, NCHW or NHWC), and their gradients. im2col and Eigen's GEMM per image and group,
// fp32 and fp64: the baseline a library kernel is checked against, and the fp64 path.
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

struct ConvPlan {
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0;  // Input
  int64_t m = 0, kh = 0, kw = 0;       // Filter: m output channels of c / groups inputs
  int64_t groups = 1, sh = 1, sw = 1, dh = 1, dw = 1, top = 0, left = 0;
  int64_t oh = 0, ow = 0;
  int64_t cg() const { return c / groups; }
  int64_t mg() const { return m / groups; }
  int64_t col_rows() const { return cg() * kh * kw; }
  std::vector<int64_t> OutDims() const { return nhwc ? std::vector<int64_t>{n, oh, ow, m} : std::vector<int64_t>{n, m, oh, ow}; }
};

ConvPlan Plan(KernelContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& filter) {
  ConvPlan p;
  const std::string format = ctx.Attr<std::string>("data_format");
  if (format != "NCHW" && format != "NHWC" && format != "AnyLayout") throw Error("data_format '" + format + "' is neither NCHW nor NHWC");
  if (in.size() != 4 || filter.size() != 4) {
    throw Error("Input " + DimsString(in) + " and Filter " + DimsString(filter) + " must be 4-D (conv2d)");
  }
  p.nhwc = format == "NHWC";
  p.n = in[0];
  p.c = p.nhwc ? in[3] : in[1];
  p.h = p.nhwc ? in[1] : in[2];
  p.w = p.nhwc ? in[2] : in[3];
  p.m = filter[0];
  p.kh = filter[2];
  p.kw = filter[3];
  p.groups = ctx.Attr<int64_t>("groups");
  if (p.groups < 1 || p.c % p.groups != 0 || p.m % p.groups != 0) {
    throw Error("groups " + std::to_string(p.groups) + " must divide Input's " + std::to_string(p.c) + " channels and Filter's " +
                std::to_string(p.m) + " outputs");
  }
  if (filter[1] != p.cg()) {
    throw Error("Filter " + DimsString(filter) + " must have " + std::to_string(p.cg()) + " input channels (Input's " +
                std::to_string(p.c) + " / groups " + std::to_string(p.groups) + ")");
  }
  const std::vector<int64_t> s = ctx.Attr<std::vector<int64_t>>("strides");
  const std::vector<int64_t> d = ctx.Attr<std::vector<int64_t>>("dilations");
  std::vector<int64_t> pad = ctx.Attr<std::vector<int64_t>>("paddings");
  if (s.size() != 2 || d.size() != 2 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1) {
    throw Error("strides " + DimsString(s) + " and dilations " + DimsString(d) + " must be two positive values each");
  }
  if (pad.size() == 2) pad = {pad[0], pad[0], pad[1], pad[1]};
  if (pad.size() != 4) throw Error("paddings " + DimsString(pad) + " must have 2 or 4 values");
  p.sh = s[0];
  p.sw = s[1];
  p.dh = d[0];
  p.dw = d[1];
  const int64_t in_hw[2] = {p.h, p.w}, k[2] = {p.kh, p.kw}, st[2] = {p.sh, p.sw}, dil[2] = {p.dh, p.dw};
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  if (algorithm == "VALID") {
    pad = {0, 0, 0, 0};
  } else if (algorithm == "SAME") {
    for (int a = 0; a < 2; ++a) {
      const int64_t out = (in_hw[a] + st[a] - 1) / st[a];
      const int64_t total = std::max<int64_t>((out - 1) * st[a] + dil[a] * (k[a] - 1) + 1 - in_hw[a], 0);
      pad[2 * a] = total / 2;
      pad[2 * a + 1] = total - total / 2;
    }
  } else if (algorithm != "EXPLICIT") {
    throw Error("padding_algorithm '" + algorithm + "' is not EXPLICIT, SAME or VALID");
  }
  p.top = pad[0];
  p.left = pad[2];
  int64_t out[2];
  for (int a = 0; a < 2; ++a) {
    const int64_t span = in_hw[a] + pad[2 * a] + pad[2 * a + 1] - (dil[a] * (k[a] - 1) + 1);
    if (span < 0) {
      throw Error("the " + std::string(a ? "width" : "height") + " " + std::to_string(in_hw[a]) + " padded by " +
                  std::to_string(pad[2 * a] + pad[2 * a + 1]) + " is smaller than the dilated kernel " +
                  std::to_string(dil[a] * (k[a] - 1) + 1));
    }
    out[a] = span / st[a] + 1;
  }
  p.oh = out[0];
  p.ow = out[1];
  return p;
}

// Image `x` (NCHW, one image) group g's columns: col[(ci, ki, kj), (oy, ox)] = the input
// under kernel tap (ki, kj) at output (oy, ox), 0 in the padding.
template <class T>
void Im2Col(const ConvPlan& p, const T* x, int64_t g, Matrix<T>& col) {
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
template <class T>
void Col2Im(const ConvPlan& p, const Matrix<T>& col, int64_t g, T* dx) {
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
template <class T>
std::vector<T> ToNchw(const T* x, int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<T> out(static_cast<size_t>(n * c * h * w));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h * w; ++y)
      for (int64_t ch = 0; ch < c; ++ch) out[(i * c + ch) * h * w + y] = x[(i * h * w + y) * c + ch];
  return out;
}
template <class T>
void FromNchw(const std::vector<T>& x, int64_t n, int64_t h, int64_t w, int64_t c, T* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h * w; ++y)
      for (int64_t ch = 0; ch < c; ++ch) out[(i * h * w + y) * c + ch] = x[(i * c + ch) * h * w + y];
}

template <class T>
std::vector<T> InputNchw(const ConvPlan& p, const Tensor& t) {
  return p.nhwc ? ToNchw(t.data<T>(), p.n, p.h, p.w, p.c) : std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

template <class T>
void Conv2d(KernelContext& ctx) {
  Tensor in = ctx.Input("Input");
  Tensor filter = ctx.Input("Filter");
  const ConvPlan p = Plan(ctx, in.dims(), filter.dims());
  const std::vector<T> x = InputNchw<T>(p, in);
  std::vector<T> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
  Matrix<T> col;
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t g = 0; g < p.groups; ++g) {
      Im2Col(p, x.data() + i * p.c * p.h * p.w, g, col);
      MatrixMap<T>(y.data() + (i * p.m + g * p.mg()) * p.oh * p.ow, p.mg(), p.oh * p.ow).noalias() =
          ConstMatrixMap<T>(filter.data<T>() + g * p.mg() * p.col_rows(), p.mg(), p.col_rows()) * col;
    }
  }
  T* out = ctx.AllocateOutput<T>("Output", p.OutDims());
  if (p.nhwc) FromNchw(y, p.n, p.oh, p.ow, p.m, out);
  else std::copy(y.begin(), y.end(), out);
}

// Per image and group, with G = Output@GRAD's slice: Filter@GRAD += G col^T and the
// columns' gradient W^T G, gathered back onto Input@GRAD.
template <class T>
void Conv2dGrad(KernelContext& ctx) {
  Tensor in = ctx.Input("Input");
  Tensor filter = ctx.Input("Filter");
  const ConvPlan p = Plan(ctx, in.dims(), filter.dims());
  const std::vector<T> x = InputNchw<T>(p, in);
  Tensor gt = ctx.Input("Output@GRAD");
  const std::vector<T> dy = p.nhwc ? ToNchw(gt.data<T>(), p.n, p.oh, p.ow, p.m)
                                   : std::vector<T>(gt.data<T>(), gt.data<T>() + gt.numel());
  const bool want_x = ctx.HasOutput("Input@GRAD"), want_w = ctx.HasOutput("Filter@GRAD");
  std::vector<T> dx(want_x ? x.size() : 0, T(0));
  Matrix<T> dw = Matrix<T>::Zero(p.m, p.col_rows());
  Matrix<T> col;
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t g = 0; g < p.groups; ++g) {
      const ConstMatrixMap<T> gy(dy.data() + (i * p.m + g * p.mg()) * p.oh * p.ow, p.mg(), p.oh * p.ow);
      if (want_w) {
        Im2Col(p, x.data() + i * p.c * p.h * p.w, g, col);
        dw.middleRows(g * p.mg(), p.mg()).noalias() += gy * col.transpose();
      }
      if (want_x) {
        const Matrix<T> dcol =
            ConstMatrixMap<T>(filter.data<T>() + g * p.mg() * p.col_rows(), p.mg(), p.col_rows()).transpose() * gy;
        Col2Im(p, dcol, g, dx.data() + i * p.c * p.h * p.w);
      }
    }
  }
  if (want_w) MatrixMap<T>(ctx.AllocateOutput<T>("Filter@GRAD", filter.dims()), p.m, p.col_rows()) = dw;
  if (want_x) {
    T* out = ctx.AllocateOutput<T>("Input@GRAD", in.dims());
    if (p.nhwc) FromNchw(dx, p.n, p.h, p.w, p.c, out);
    else std::copy(dx.begin(), dx.end(), out);
  }
}

void Add(Registrar& r, const char* type, const char* doc) {
  const std::string grad = std::string(type) + "_grad";
  const OpSchema schema = OpSchema(type)
      .Doc(doc)
      .Input("Input", "[N, C, H, W] (NCHW) or [N, H, W, C] (NHWC)")
      .Input("Filter", "[M, C / groups, kh, kw]")
      .Output("Output", "[N, M, oh, ow] or [N, oh, ow, M]")
      .Attr("strides", std::vector<int64_t>{1, 1}, "the step, [h, w]")
      .Attr("paddings", std::vector<int64_t>{0, 0}, "[h, w] or [top, bottom, left, right]")
      .Attr("padding_algorithm", "EXPLICIT", "EXPLICIT (paddings), SAME or VALID")
      .Attr("groups", int64_t{1}, "channel groups: each output channel sees C / groups inputs")
      .Attr("dilations", std::vector<int64_t>{1, 1}, "the kernel taps' spacing, [h, w]")
      .Attr("data_format", "NCHW", "NCHW or NHWC")
      .KernelDtypeFrom("Input")
      .Grad(grad, "Input,Filter,Output@GRAD", "Input,Filter");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<float, double>(r, type, [](auto t) { return &Conv2d<decltype(t)>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &Conv2dGrad<decltype(t)>; });
}

}  // namespace

void RegisterConv(Registrar& r) {
  Add(r, "conv2d", "Output = the 2-D convolution (cross-correlation) of Input with Filter.");
  Add(r, "depthwise_conv2d", "conv2d with groups equal to Input's channels (each channel convolved on its own).");
}

}  // namespace rill::math
