// CUDA pool2d and its gradient, fp16/fp32/fp64, with the CPU kernels' windows (pool_plan.h):
// every mode the CPU has (max and avg, exclusive or not, ceil_mode, adaptive, unequal
// paddings, NCHW and NHWC). One thread per output element walks its window, summing fp16
// in float. Pooling reads each input about once per window over it and does little
// arithmetic, so it is bound by memory, which a direct kernel reaches as well as cuDNN's
// would; cuDNN's pooling has no ceil_mode, adaptive windows or unequal paddings. The
// gradient adds each output's share into X@GRAD with atomicAdd, as windows overlap when
// strides are smaller than they are.
#include <cuda/std/limits>

#include <mutex>

#include "../pool_plan.h"
#include "../shape.h"
#include "cuda_check.h"
#include "device_output.h"
#include "half.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

// What the kernels need of a PoolPlan, by value. `windows` (device memory) holds the rows'
// begins and ends ([2 * oh]), then the columns' ([2 * ow]).
struct PoolGeometry {
  bool nhwc, max, divide_by_window;  // divide_by_window: an average's divisor is its clipped window
  int64_t n, c, h, w, oh, ow, full;  // full: the unclipped window's size, the other divisor
  const int64_t* windows;
};

// Output element `o`'s image, channel, window and input offset of its (image, channel).
struct Window {
  int64_t i, ch, y0, y1, x0, x1;
};

__device__ Window WindowOf(const PoolGeometry& g, int64_t o) {
  Window win;
  int64_t oy, ox;
  if (g.nhwc) {
    win.ch = o % g.c;
    ox = o / g.c % g.ow;
    oy = o / g.c / g.ow % g.oh;
    win.i = o / g.c / g.ow / g.oh;
  } else {
    ox = o % g.ow;
    oy = o / g.ow % g.oh;
    win.ch = o / g.ow / g.oh % g.c;
    win.i = o / g.ow / g.oh / g.c;
  }
  win.y0 = g.windows[oy];
  win.y1 = g.windows[g.oh + oy];
  win.x0 = g.windows[2 * g.oh + ox];
  win.x1 = g.windows[2 * g.oh + g.ow + ox];
  return win;
}

__device__ int64_t At(const PoolGeometry& g, const Window& win, int64_t y, int64_t x) {
  return g.nhwc ? ((win.i * g.h + y) * g.w + x) * g.c + win.ch : ((win.i * g.c + win.ch) * g.h + y) * g.w + x;
}

__device__ int64_t Divisor(const PoolGeometry& g, const Window& win) {
  return g.divide_by_window ? (win.y1 - win.y0) * (win.x1 - win.x0) : g.full;
}

template <class T> __global__ void PoolForward(PoolGeometry g, const T* x, T* out, int64_t count) {
  using A = Accumulator<T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < count; o += int64_t{blockDim.x} * gridDim.x) {
    const Window win = WindowOf(g, o);
    A acc = g.max ? -::cuda::std::numeric_limits<A>::infinity() : A(0);
    for (int64_t y = win.y0; y < win.y1; ++y) {
      for (int64_t xx = win.x0; xx < win.x1; ++xx) {
        const A v = ConvertValue<A>(x[At(g, win, y, xx)]);
        acc = g.max ? (acc < v ? v : acc) : acc + v;  // as std::max(acc, v): a NaN v is passed over
      }
    }
    out[o] = ConvertValue<T>(g.max ? acc : acc / static_cast<A>(Divisor(g, win)));
  }
}

// Max: each output's gradient to its window's first largest element; avg: spread evenly
// over the divisor. `dx` starts zeroed.
template <class T> __global__ void PoolBackward(PoolGeometry g, const T* x, const T* dy, T* dx, int64_t count) {
  using A = Accumulator<T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < count; o += int64_t{blockDim.x} * gridDim.x) {
    const Window win = WindowOf(g, o);
    if (g.max) {
      int64_t best = At(g, win, win.y0, win.x0);
      for (int64_t y = win.y0; y < win.y1; ++y) {
        for (int64_t xx = win.x0; xx < win.x1; ++xx) {
          if (ConvertValue<A>(x[At(g, win, y, xx)]) > ConvertValue<A>(x[best])) best = At(g, win, y, xx);
        }
      }
      atomicAdd(dx + best, dy[o]);
      continue;
    }
    const T share = ConvertValue<T>(ConvertValue<A>(dy[o]) / static_cast<A>(Divisor(g, win)));
    for (int64_t y = win.y0; y < win.y1; ++y) {
      for (int64_t xx = win.x0; xx < win.x1; ++xx) atomicAdd(dx + At(g, win, y, xx), share);
    }
  }
}

// A plan's windows on the device, uploaded again only when they change (a prepared op's
// runs reuse them). cudaFree of the old ones waits for the device, so no kernel launched
// with them still reads them. Not for concurrent use: its op takes turns.
class DeviceWindows {
 public:
  DeviceWindows() = default;
  ~DeviceWindows() {
    if (device_ != nullptr) cudaFree(device_);
  }
  DeviceWindows(const DeviceWindows&) = delete;
  DeviceWindows& operator=(const DeviceWindows&) = delete;

  PoolGeometry Geometry(const PoolPlan& p) {
    std::vector<int64_t> host = p.rows.begin;
    host.insert(host.end(), p.rows.end.begin(), p.rows.end.end());
    host.insert(host.end(), p.cols.begin.begin(), p.cols.begin.end());
    host.insert(host.end(), p.cols.end.begin(), p.cols.end.end());
    if (host != host_) {
      if (device_ != nullptr) CudaCheck(cudaFree(device_), "cudaFree");
      device_ = nullptr;
      CudaCheck(cudaMalloc(&device_, sizeof(int64_t) * host.size()), "cudaMalloc");
      CudaCheck(cudaMemcpy(device_, host.data(), sizeof(int64_t) * host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      host_ = std::move(host);
    }
    const auto oh = static_cast<int64_t>(p.rows.begin.size()), ow = static_cast<int64_t>(p.cols.begin.size());
    return PoolGeometry{p.nhwc, p.max, p.exclusive || p.adaptive, p.n,    p.c, p.h, p.w,
                        oh,     ow,    p.rows.full * p.cols.full, device_};
  }

 private:
  std::vector<int64_t> host_;
  int64_t* device_ = nullptr;
};

template <class T> class Pool2d {
 public:
  explicit Pool2d(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    UseDevice(ctx);
    Tensor x = ctx.Input("X");
    const PoolPlan p = PoolPlanOf(ctx, x.dims());
    std::lock_guard<std::mutex> lock(mu_);
    DeviceOutput<T> out(ctx, "Out", 0, p.out_dims, InputVars(ctx, "X"));
    const int64_t count = Product(p.out_dims, 0, 4);
    if (count > 0) {
      PoolForward<T><<<Blocks(count), kThreads>>>(windows_.Geometry(p), x.data<T>(), out.get(), count);
      CheckLaunch("PoolForward");
    }
    out.Finish();
  }

 private:
  // One instance may run on several threads at once (go blocks): runs take turns with
  // windows_, which follows the plan.
  std::mutex mu_;
  DeviceWindows windows_;  // guarded by mu_
};

template <class T> class Pool2dGrad {
 public:
  explicit Pool2dGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    UseDevice(ctx);
    Tensor x = ctx.Input("X");
    Tensor dy = ctx.Input("Out@GRAD");
    const PoolPlan p = PoolPlanOf(ctx, x.dims());
    std::lock_guard<std::mutex> lock(mu_);
    DeviceOutput<T> dx(ctx, "X@GRAD", 0, x.dims(), InputVars(ctx, {"X", "Out@GRAD"}));
    CudaCheck(cudaMemsetAsync(dx.get(), 0, sizeof(T) * static_cast<size_t>(x.numel()), 0), "cudaMemsetAsync");
    const int64_t count = Product(p.out_dims, 0, 4);
    if (count > 0) {
      PoolBackward<T><<<Blocks(count), kThreads>>>(windows_.Geometry(p), x.data<T>(), dy.data<T>(), dx.get(), count);
      CheckLaunch("PoolBackward");
    }
    dx.Finish();
  }

 private:
  // One instance may run on several threads at once (go blocks): runs take turns with
  // windows_, which follows the plan.
  std::mutex mu_;
  DeviceWindows windows_;  // guarded by mu_
};

}  // namespace

void RegisterPool(Registrar& r) {
  RegisterCudaStateful<Pool2d>(r, "pool2d");
  RegisterCudaStateful<Pool2dGrad>(r, "pool2d_grad");
}

}  // namespace rill::math::cuda
