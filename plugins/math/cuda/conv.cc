// conv2d and depthwise_conv2d, and their gradients, on cuDNN: fp16, fp32 and fp64, NCHW
// and NHWC, with the CPU kernels' geometry (conv_plan.h: strides, dilations, groups,
// paddings of 2 or 4 values, SAME and VALID). cuDNN pads as much after as before: a plan
// that does not (SAME over an even span, or 4 paddings) pads the input itself (pad.h) and
// convolves that unpadded. fp32 and fp64 math is FMA only, never TF32 tensor cores, so
// results match the CPU's to float rounding, as the tests compare them; fp16 (which the
// CPU has no kernel for) accumulates in fp32 on tensor cores.
//
// Fluid's filter is [m, c/groups, kh, kw] in either data_format. cuDNN's convolutions of
// NHWC images take the filter NHWC ([m, kh, kw, c/groups]) as well, as PyTorch's and
// Paddle's cuDNN paths give it: the filter is transposed on the device for each run (and
// its gradient back), a copy the size of the filter.
#include <mutex>
#include <optional>

#include "../conv_plan.h"
#include "../shape.h"
#include "cudnn.h"
#include "device_output.h"
#include "half.h"
#include "ops.h"
#include "pad.h"
#include "scratch.h"

namespace rill::math::cuda {
namespace {

// The most scratch one convolution's algorithm may take; faster ones that need more are
// passed over.
constexpr size_t kWorkspaceLimit = size_t{1} << 30;

// The first of cuDNN's algorithms (best first, by its heuristics) that it can run here
// within kWorkspaceLimit. `get(count, &returned, perf)` is one of the *_v7 queries.
template <class Perf, class Get> Perf PickAlgorithm(Get get, const char* what) {
  Perf perf[16];
  int returned = 0;
  CudnnCheck(get(16, &returned, perf), what);
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kWorkspaceLimit) return perf[i];
  }
  throw Error(std::string(what) + ": cuDNN has no algorithm for this convolution within " +
                  std::to_string(kWorkspaceLimit >> 20) + " MiB of workspace",
              RILL_UNIMPLEMENTED);
}

// One convolution as cuDNN runs it: the descriptors of a plan, and the algorithm of each
// direction, picked on its first use. Made again only when the plan changes, so the runs
// of a prepared op reuse them.
template <class T> class CudnnConvolution {
 public:
  void Prepare(const ConvPlan& p) {
    if (prepared_ && p == plan_) return;
    plan_ = p;
    pad_ = ImagePadding{p.nhwc, p.n, p.c, p.h, p.w, p.top, p.bottom, p.left, p.right};
    padded_ = p.top != p.bottom || p.left != p.right;
    const Cudnn& api = LoadCudnn();
    constexpr cudnnDataType_t type = CudnnType<T>();
    DescribeTensor(x_, type, p.nhwc, p.n, p.c, padded_ ? pad_.hp() : p.h, padded_ ? pad_.wp() : p.w);
    DescribeTensor(y_, type, p.nhwc, p.n, p.m, p.oh, p.ow);
    CudnnCheck(api.cudnnSetFilter4dDescriptor(w_.get(), type, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                              static_cast<int>(p.m), static_cast<int>(p.cg()), static_cast<int>(p.kh),
                                              static_cast<int>(p.kw)),
               "cudnnSetFilter4dDescriptor");
    // With one input channel a group, or a 1x1 kernel, the two layouts are the same bytes.
    transposed_ = p.nhwc && p.cg() > 1 && p.kh * p.kw > 1;
    if (transposed_) {
      DescribeTensor(fluid_filter_, type, false, p.m, p.cg(), p.kh, p.kw);
      DescribeTensor(cudnn_filter_, type, true, p.m, p.cg(), p.kh, p.kw);
    }
    CudnnCheck(api.cudnnSetConvolution2dDescriptor(
                   conv_.get(), padded_ ? 0 : static_cast<int>(p.top), padded_ ? 0 : static_cast<int>(p.left),
                   static_cast<int>(p.sh), static_cast<int>(p.sw), static_cast<int>(p.dh), static_cast<int>(p.dw),
                   CUDNN_CROSS_CORRELATION, CudnnComputeType<T>()),
               "cudnnSetConvolution2dDescriptor");
    CudnnCheck(api.cudnnSetConvolutionGroupCount(conv_.get(), static_cast<int>(p.groups)),
               "cudnnSetConvolutionGroupCount");
    CudnnCheck(api.cudnnSetConvolutionMathType(conv_.get(), sizeof(T) == 2 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
               "cudnnSetConvolutionMathType");
    forward_.reset();
    backward_data_.reset();
    backward_filter_.reset();
    prepared_ = true;
  }

  // y = x (*) w.
  void Forward(cudnnHandle_t h, const T* x, const T* w, T* y) {
    const Cudnn& api = LoadCudnn();
    if (!forward_) {
      const auto perf = PickAlgorithm<cudnnConvolutionFwdAlgoPerf_t>(
          [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* out) {
            return api.cudnnGetConvolutionForwardAlgorithm_v7(h, x_.get(), w_.get(), conv_.get(), y_.get(), n, got,
                                                              out);
          },
          "conv2d: choosing the forward algorithm");
      size_t bytes = 0;
      CudnnCheck(
          api.cudnnGetConvolutionForwardWorkspaceSize(h, x_.get(), w_.get(), conv_.get(), y_.get(), perf.algo, &bytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
      forward_ = Algorithm<cudnnConvolutionFwdAlgo_t>{perf.algo, bytes};
    }
    ScratchBuffer<T> padded(PaddedCount());
    if (padded_) PadImage(pad_, x, padded.get());
    ScratchBuffer<T> filter(FilterCount());
    if (transposed_) TransformFilter(h, fluid_filter_, w, cudnn_filter_, filter.get());
    ScratchBuffer<char> workspace(static_cast<int64_t>(forward_->workspace));
    const CudnnScalar<T> one = 1, zero = 0;
    CudnnCheck(api.cudnnConvolutionForward(h, &one, x_.get(), padded_ ? padded.get() : x, w_.get(),
                                           transposed_ ? filter.get() : w, conv_.get(), forward_->algo, workspace.get(),
                                           forward_->workspace, &zero, y_.get(), y),
               "cudnnConvolutionForward");
  }

  // dx = the gradient of Forward's y with respect to x, given dy.
  void BackwardData(cudnnHandle_t h, const T* w, const T* dy, T* dx) {
    const Cudnn& api = LoadCudnn();
    if (!backward_data_) {
      const auto perf = PickAlgorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
          [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* out) {
            return api.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_.get(), y_.get(), conv_.get(), x_.get(), n, got,
                                                                   out);
          },
          "conv2d_grad: choosing the input gradient's algorithm");
      size_t bytes = 0;
      CudnnCheck(api.cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_.get(), y_.get(), conv_.get(), x_.get(),
                                                                  perf.algo, &bytes),
                 "cudnnGetConvolutionBackwardDataWorkspaceSize");
      backward_data_ = Algorithm<cudnnConvolutionBwdDataAlgo_t>{perf.algo, bytes};
    }
    ScratchBuffer<T> padded(PaddedCount());
    ScratchBuffer<T> filter(FilterCount());
    if (transposed_) TransformFilter(h, fluid_filter_, w, cudnn_filter_, filter.get());
    ScratchBuffer<char> workspace(static_cast<int64_t>(backward_data_->workspace));
    const CudnnScalar<T> one = 1, zero = 0;
    CudnnCheck(api.cudnnConvolutionBackwardData(
                   h, &one, w_.get(), transposed_ ? filter.get() : w, y_.get(), dy, conv_.get(), backward_data_->algo,
                   workspace.get(), backward_data_->workspace, &zero, x_.get(), padded_ ? padded.get() : dx),
               "cudnnConvolutionBackwardData");
    if (padded_) CropImage(pad_, padded.get(), dx);
  }

  // dw = the gradient of Forward's y with respect to w, given x and dy.
  void BackwardFilter(cudnnHandle_t h, const T* x, const T* dy, T* dw) {
    const Cudnn& api = LoadCudnn();
    if (!backward_filter_) {
      const auto perf = PickAlgorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
          [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* out) {
            return api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_.get(), y_.get(), conv_.get(), w_.get(), n,
                                                                     got, out);
          },
          "conv2d_grad: choosing the filter gradient's algorithm");
      size_t bytes = 0;
      CudnnCheck(api.cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_.get(), y_.get(), conv_.get(), w_.get(),
                                                                    perf.algo, &bytes),
                 "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      backward_filter_ = Algorithm<cudnnConvolutionBwdFilterAlgo_t>{perf.algo, bytes};
    }
    ScratchBuffer<T> padded(PaddedCount());
    if (padded_) PadImage(pad_, x, padded.get());
    ScratchBuffer<T> filter(FilterCount());
    ScratchBuffer<char> workspace(static_cast<int64_t>(backward_filter_->workspace));
    const CudnnScalar<T> one = 1, zero = 0;
    CudnnCheck(api.cudnnConvolutionBackwardFilter(
                   h, &one, x_.get(), padded_ ? padded.get() : x, y_.get(), dy, conv_.get(), backward_filter_->algo,
                   workspace.get(), backward_filter_->workspace, &zero, w_.get(), transposed_ ? filter.get() : dw),
               "cudnnConvolutionBackwardFilter");
    if (transposed_) TransformFilter(h, cudnn_filter_, filter.get(), fluid_filter_, dw);
  }

 private:
  // The elements of the input PadImage pads (0 where cuDNN pads it).
  int64_t PaddedCount() const { return padded_ ? pad_.n * pad_.c * pad_.hp() * pad_.wp() : 0; }
  // The elements of the filter in cuDNN's layout (0 where it is Fluid's).
  int64_t FilterCount() const { return transposed_ ? plan_.m * plan_.cg() * plan_.kh * plan_.kw : 0; }

  // to = from, between the filter's two layouts.
  static void TransformFilter(cudnnHandle_t h, const TensorDescriptor& from_desc, const T* from,
                              const TensorDescriptor& to_desc, T* to) {
    const CudnnScalar<T> one = 1, zero = 0;
    CudnnCheck(LoadCudnn().cudnnTransformTensor(h, &one, from_desc.get(), from, &zero, to_desc.get(), to),
               "conv2d: cudnnTransformTensor of the filter");
  }

  template <class Algo> struct Algorithm {
    Algo algo;
    size_t workspace;
  };

  bool prepared_ = false;
  ConvPlan plan_;
  ImagePadding pad_;
  bool padded_ = false;      // the input is padded by PadImage, not by cuDNN
  bool transposed_ = false;  // w_ is NHWC and Fluid's filter is not the same bytes
  TensorDescriptor x_, y_;
  TensorDescriptor fluid_filter_, cudnn_filter_;  // the filter as a tensor, NCHW and NHWC (if transposed_)
  FilterDescriptor w_;
  ConvolutionDescriptor conv_;
  std::optional<Algorithm<cudnnConvolutionFwdAlgo_t>> forward_;
  std::optional<Algorithm<cudnnConvolutionBwdDataAlgo_t>> backward_data_;
  std::optional<Algorithm<cudnnConvolutionBwdFilterAlgo_t>> backward_filter_;
};

template <class T> class Conv2d {
 public:
  explicit Conv2d(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    UseDevice(ctx);
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    const ConvPlan p = ConvPlanOf(ctx, in.dims(), filter.dims());
    std::lock_guard<std::mutex> lock(mu_);
    DeviceOutput<T> out(ctx, "Output", 0, p.OutDims(), InputVars(ctx, {"Input", "Filter"}));
    const int64_t count = Product(p.OutDims(), 0, 4);
    if (count > 0 && p.c == 0) {  // sums of nothing (cuDNN refuses empty tensors)
      CudaCheck(cudaMemsetAsync(out.get(), 0, sizeof(T) * static_cast<size_t>(count), 0), "cudaMemsetAsync");
    } else if (count > 0) {
      conv_.Prepare(p);
      conv_.Forward(CudnnHandle(ctx.device_id()), in.data<T>(), filter.data<T>(), out.get());
    }
    out.Finish();
  }

 private:
  // One instance may run on several threads at once (go blocks): runs take turns with
  // conv_, whose descriptors and algorithms follow the plan. Their device work is ordered
  // on the one legacy stream anyway.
  std::mutex mu_;
  CudnnConvolution<T> conv_;  // guarded by mu_
};

template <class T> class Conv2dGrad {
 public:
  explicit Conv2dGrad(const OpInfo&) {}
  void Compute(KernelContext& ctx) {
    UseDevice(ctx);
    Tensor in = ctx.Input("Input");
    Tensor filter = ctx.Input("Filter");
    Tensor dy = ctx.Input("Output@GRAD");
    const ConvPlan p = ConvPlanOf(ctx, in.dims(), filter.dims());
    std::lock_guard<std::mutex> lock(mu_);
    // A side with no elements leaves gradients of zero (cuDNN refuses empty tensors).
    const bool empty = p.n == 0 || p.c == 0 || p.m == 0 || p.oh == 0 || p.ow == 0;
    if (!empty) conv_.Prepare(p);
    const std::vector<RillVariable*> inputs = InputVars(ctx, {"Input", "Filter", "Output@GRAD"});
    cudnnHandle_t h = empty ? nullptr : CudnnHandle(ctx.device_id());
    const auto zero = [](T* p, const std::vector<int64_t>& dims) {
      CudaCheck(cudaMemsetAsync(p, 0, sizeof(T) * static_cast<size_t>(Product(dims, 0, dims.size())), 0),
                "cudaMemsetAsync");
    };
    if (ctx.HasOutput("Input@GRAD")) {
      DeviceOutput<T> dx(ctx, "Input@GRAD", 0, in.dims(), inputs);
      empty ? zero(dx.get(), in.dims()) : conv_.BackwardData(h, filter.data<T>(), dy.data<T>(), dx.get());
      dx.Finish();
    }
    if (ctx.HasOutput("Filter@GRAD")) {
      DeviceOutput<T> dw(ctx, "Filter@GRAD", 0, filter.dims(), inputs);
      empty ? zero(dw.get(), filter.dims()) : conv_.BackwardFilter(h, in.data<T>(), dy.data<T>(), dw.get());
      dw.Finish();
    }
  }

 private:
  // One instance may run on several threads at once (go blocks): runs take turns with
  // conv_, whose descriptors and algorithms follow the plan. Their device work is ordered
  // on the one legacy stream anyway.
  std::mutex mu_;
  CudnnConvolution<T> conv_;  // guarded by mu_
};

}  // namespace

void RegisterConv(Registrar& r) {
  for (const char* op : {"conv2d", "depthwise_conv2d"}) {
    RegisterCudaStateful<Conv2d>(r, op);
    RegisterCudaStateful<Conv2dGrad>(r, (std::string(op) + "_grad").c_str());
  }
}

}  // namespace rill::math::cuda
