// CUDA softmax and cross_entropy, reduce_{sum,mean,max}, and their gradients, fp32/fp64.
// Reductions run one thread per output element (softmax: per row), looping over what it
// reduces: simple, deterministic, and enough for the row sizes of training programs.
#include <cfloat>

#include "../shape.h"
#include "cuda_check.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

// ---- softmax along axis: the tensor is [pre, n, post] ------------------------------------

template <class T> __global__ void SoftmaxKernel(const T* x, T* out, int64_t pre, int64_t n, int64_t post) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < pre * post;
       r += int64_t(blockDim.x) * gridDim.x) {
    const int64_t base = (r / post) * n * post + r % post;
    T max = x[base];
    for (int64_t j = 1; j < n; ++j) max = x[base + j * post] > max ? x[base + j * post] : max;
    T total = 0;
    for (int64_t j = 0; j < n; ++j) total += out[base + j * post] = exp(x[base + j * post] - max);
    for (int64_t j = 0; j < n; ++j) out[base + j * post] /= total;
  }
}

template <class T>
__global__ void SoftmaxGradKernel(const T* out, const T* g, T* dx, int64_t pre, int64_t n, int64_t post) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < pre * post;
       r += int64_t(blockDim.x) * gridDim.x) {
    const int64_t base = (r / post) * n * post + r % post;
    T dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += g[base + j * post] * out[base + j * post];
    for (int64_t j = 0; j < n; ++j) dx[base + j * post] = out[base + j * post] * (g[base + j * post] - dot);
  }
}

struct AxisView {
  int64_t pre, n, post;
};
AxisView ViewAlong(KernelContext& ctx, const std::vector<int64_t>& d) {
  const size_t axis = NormalizeAxis(ctx.Attr<int64_t>("axis"), d.size());
  return {Product(d, 0, axis), d[axis], Product(d, axis + 1, d.size())};
}

template <class T> void Softmax(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  const AxisView v = ViewAlong(ctx, x.dims());
  const T* px = x.data<T>();  // read before Out (possibly X) is reallocated
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, x.dims());
  SoftmaxKernel<T><<<Blocks(v.pre * v.post), kThreads>>>(px, po, v.pre, v.n, v.post);
  CheckLaunch("softmax kernel");
}

template <class T> void SoftmaxGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor out = ctx.Input("Out");
  Tensor g = ctx.Input("Out@GRAD");
  const AxisView v = ViewAlong(ctx, out.dims());
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, out.dims());
  SoftmaxGradKernel<T><<<Blocks(v.pre * v.post), kThreads>>>(out.data<T>(), g.data<T>(), pd, v.pre, v.n, v.post);
  CheckLaunch("softmax gradient kernel");
}

// ---- cross_entropy: X [rows, classes] probabilities; hard int64 or soft labels -----------

template <class T> __device__ T SafeLog(T p) { return log(p > T(DBL_MIN) ? p : T(DBL_MIN)); }
template <> __device__ float SafeLog(float p) { return logf(p > FLT_MIN ? p : FLT_MIN); }

template <class T>
__global__ void CrossEntropyHard(const T* x, const int64_t* label, T* y, int64_t rows, int64_t classes,
                                 int64_t ignore) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t l = label[i];
    y[i] = (l == ignore || l < 0 || l >= classes) ? T(0) : -SafeLog(x[i * classes + l]);
  }
}

template <class T> __global__ void CrossEntropySoft(const T* x, const T* label, T* y, int64_t rows, int64_t classes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows; i += int64_t(blockDim.x) * gridDim.x) {
    T sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum -= label[i * classes + j] * SafeLog(x[i * classes + j]);
    y[i] = sum;
  }
}

template <class T>
__global__ void CrossEntropyGradKernel(const T* x, const int64_t* hard, const T* soft, const T* g, T* dx, int64_t n,
                                       int64_t classes, int64_t ignore) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t row = i / classes, col = i % classes;
    const T p = x[i] > T(0) ? x[i] : T(1e-30);
    if (soft != nullptr) {
      dx[i] = -g[row] * soft[i] / p;
    } else {
      const int64_t l = hard[row];
      dx[i] = (l == col && l != ignore) ? -g[row] / p : T(0);
    }
  }
}

template <class T> void CrossEntropy(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  const bool soft = ctx.Attr<bool>("soft_label");
  const CrossEntropyShape shape = CheckCrossEntropy(x.dims(), label.dims(), soft);
  const int64_t rows = shape.rows, classes = shape.classes;
  Tensor y = ctx.Output("Y");
  T* py = AllocateOnDevice<T>(ctx, y, shape.out_dims);
  if (soft) {
    CrossEntropySoft<T><<<Blocks(rows), kThreads>>>(x.data<T>(), label.data<T>(), py, rows, classes);
  } else {
    CrossEntropyHard<T><<<Blocks(rows), kThreads>>>(x.data<T>(), label.data<int64_t>(), py, rows, classes,
                                                    ctx.Attr<int64_t>("ignore_index"));
  }
  CheckLaunch("cross_entropy kernel");
}

template <class T> void CrossEntropyGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor label = ctx.Input("Label");
  Tensor g = ctx.Input("Y@GRAD");
  const int64_t classes = x.dims().back();
  const bool soft = ctx.Attr<bool>("soft_label");
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, x.dims());
  CrossEntropyGradKernel<T><<<Blocks(x.numel()), kThreads>>>(x.data<T>(), soft ? nullptr : label.data<int64_t>(),
                                                             soft ? label.data<T>() : nullptr, g.data<T>(), pd,
                                                             x.numel(), classes, ctx.Attr<int64_t>("ignore_index"));
  CheckLaunch("cross_entropy gradient kernel");
}

// ---- reduce_{sum,mean,max} over `dim` -----------------------------------------------------

// Up to this many dims: the shape travels to the device by value.
constexpr int kMaxRank = 8;
struct Shape {
  int rank;
  int64_t dims[kMaxRank];
  bool reduced[kMaxRank];
};

enum Reduction { kSum = 0, kMean = 1, kMax = 2 };

Shape ReduceShape(KernelContext& ctx, const std::vector<int64_t>& d, std::vector<int64_t>* out_dims,
                  int64_t* out_numel) {
  if (d.size() > kMaxRank) throw Error("CUDA reductions handle rank up to 8, got " + std::to_string(d.size()));
  Shape s{static_cast<int>(d.size()), {}, {}};
  const bool all = ctx.Attr<bool>("reduce_all");
  for (size_t i = 0; i < d.size(); ++i) {
    s.dims[i] = d[i];
    s.reduced[i] = all;
  }
  if (!all) {
    for (int64_t k : ctx.Attr<std::vector<int64_t>>("dim")) s.reduced[NormalizeAxis(k, d.size(), "dim")] = true;
  }
  *out_numel = 1;
  std::vector<int64_t> kept;
  for (size_t i = 0; i < d.size(); ++i) {
    if (!s.reduced[i]) {
      kept.push_back(d[i]);
      *out_numel *= d[i];
    }
  }
  if (ctx.Attr<bool>("keep_dim")) {
    out_dims->clear();
    for (size_t i = 0; i < d.size(); ++i) out_dims->push_back(s.reduced[i] ? 1 : d[i]);
  } else {
    *out_dims = kept.empty() ? std::vector<int64_t>{1} : kept;
  }
  return s;
}

// The offset in the reduced output of input element i.
__device__ int64_t OutOffset(const Shape& s, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t idx = i % s.dims[d];
    i /= s.dims[d];
    if (!s.reduced[d]) {
      off += idx * stride;
      stride *= s.dims[d];
    }
  }
  return off;
}

// One thread per output element o, scanning the input (a strided walk would be faster; the
// scan keeps this simple and deterministic).
template <class T, int R> __global__ void ReduceKernel(const T* x, T* out, Shape s, int64_t numel, int64_t out_numel) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < out_numel;
       o += int64_t(blockDim.x) * gridDim.x) {
    T acc = R == kMax ? T(-DBL_MAX) : T(0);
    int64_t count = 0;
    for (int64_t i = 0; i < numel; ++i) {
      if (OutOffset(s, i) != o) continue;
      acc = R == kMax ? (x[i] > acc ? x[i] : acc) : acc + x[i];
      ++count;
    }
    out[o] = R == kMean && count > 0 ? acc / T(count) : acc;
  }
}

template <class T, int R>
__global__ void ReduceGradKernel(const T* x, const T* out, const T* g, T* dx, Shape s, int64_t numel, T scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < numel; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t o = OutOffset(s, i);
    dx[i] = (R == kMax && x[i] != out[o]) ? T(0) : g[o] * scale;
  }
}

template <class T, int R> void Reduce(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  std::vector<int64_t> out_dims;
  int64_t out_numel = 0;
  const Shape s = ReduceShape(ctx, x.dims(), &out_dims, &out_numel);
  const T* px = x.data<T>();
  Tensor out = ctx.Output("Out");
  T* po = AllocateOnDevice<T>(ctx, out, out_dims);
  ReduceKernel<T, R><<<Blocks(out_numel), kThreads>>>(px, po, s, x.numel(), out_numel);
  CheckLaunch("reduce kernel");
}

template <class T, int R> void ReduceGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor out = ctx.Input("Out");
  Tensor g = ctx.Input("Out@GRAD");
  std::vector<int64_t> out_dims;
  int64_t out_numel = 0;
  const Shape s = ReduceShape(ctx, x.dims(), &out_dims, &out_numel);
  const T scale = R == kMean ? T(out_numel) / T(x.numel()) : T(1);
  Tensor dx = ctx.Output("X@GRAD");
  T* pd = AllocateOnDevice<T>(ctx, dx, x.dims());
  ReduceGradKernel<T, R>
      <<<Blocks(x.numel()), kThreads>>>(x.data<T>(), out.data<T>(), g.data<T>(), pd, s, x.numel(), scale);
  CheckLaunch("reduce gradient kernel");
}

template <int R> void RegisterReduceOne(Registrar& r, const std::string& type) {
  RegisterCudaFloat(r, type.c_str(), [](auto t) { return &Reduce<decltype(t), R>; });
  RegisterCudaFloat(r, (type + "_grad").c_str(), [](auto t) { return &ReduceGrad<decltype(t), R>; });
}

}  // namespace

void RegisterSoftmaxReduce(Registrar& r) {
  RegisterCudaFloat(r, "softmax", [](auto t) { return &Softmax<decltype(t)>; });
  RegisterCudaFloat(r, "softmax_grad", [](auto t) { return &SoftmaxGrad<decltype(t)>; });
  RegisterCudaFloat(r, "cross_entropy", [](auto t) { return &CrossEntropy<decltype(t)>; });
  RegisterCudaFloat(r, "cross_entropy_grad", [](auto t) { return &CrossEntropyGrad<decltype(t)>; });
  RegisterReduceOne<kSum>(r, "reduce_sum");
  RegisterReduceOne<kMean>(r, "reduce_mean");
  RegisterReduceOne<kMax>(r, "reduce_max");
}

}  // namespace rill::math::cuda
