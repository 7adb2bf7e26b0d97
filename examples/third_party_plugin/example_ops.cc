// A third party's op plugin, written from README.md and docs/PLUGIN_GUIDE.md alone and
// built out of tree against the installed SDK (any C++17 compiler and standard library).
// Its ops carry the plugin's prefix, as docs/PLUGIN_GUIDE.md asks: op names are global, and
// the shipped plugins take Fluid's (math has its own softsign and hard_shrink).
//  - example_softsign:     Out = X / (1 + |X|), elementwise (a plain function kernel);
//  - example_hard_shrink:  Out = X where |X| > threshold, else 0 (an attribute; a negative
//                          threshold is the op's error, which reaches the user naming the op);
//  - example_sign_split:   Positive = max(X, 0), Negative = min(X, 0) (two outputs);
//  - example_running_mean: Out = the mean of every value X has held in this op's runs so
//                          far (a stateful kernel, whose state lives as long as the op
//                          instance).
#include <cmath>
#include <mutex>

#include "rill/sdk.hpp"

namespace {

template <class T> void Softsign(rill::KernelContext& ctx) {
  rill::Tensor x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] / (T(1) + std::abs(in[i]));
}

template <class T> void HardShrink(rill::KernelContext& ctx) {
  const double threshold = ctx.Attr<float>("threshold");
  if (threshold < 0) throw rill::Error("threshold must be at least 0, got " + std::to_string(threshold));
  rill::Tensor x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.AllocateOutput<T>("Out", x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = std::abs(in[i]) > threshold ? in[i] : T(0);
}

template <class T> void SignSplit(rill::KernelContext& ctx) {
  rill::Tensor x = ctx.Input("X");
  const T* in = x.data<T>();
  T* positive = ctx.AllocateOutput<T>("Positive", x.dims());
  T* negative = ctx.AllocateOutput<T>("Negative", x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) {
    positive[i] = in[i] > 0 ? in[i] : T(0);
    negative[i] = in[i] < 0 ? in[i] : T(0);
  }
}

// One instance per op in a program, made when the op first runs; several threads may run
// it at once (go blocks), so its state is guarded.
template <class T> class RunningMean {
 public:
  explicit RunningMean(const rill::OpInfo&) {}
  void Compute(rill::KernelContext& ctx) {
    rill::Tensor x = ctx.Input("X");
    double mean;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t i = 0; i < x.numel(); ++i) sum_ += static_cast<double>(x.data<T>()[i]);
      count_ += x.numel();
      mean = count_ > 0 ? sum_ / static_cast<double>(count_) : 0;
    }
    *ctx.AllocateOutput<double>("Out", {1}) = mean;
  }

 private:
  std::mutex mu_;
  double sum_ = 0;
  int64_t count_ = 0;
};

void Init(rill::Registrar& r) {
  r.Op(rill::OpSchema("example_softsign")
           .Doc("Out = X / (1 + |X|), elementwise.")
           .Input("X", "input tensor")
           .Output("Out", "example_softsign of X, same shape")
           .KernelDtypeFrom("X"));
  r.Kernel("example_softsign", RILL_CPU, RILL_FP32, &Softsign<float>);
  r.Kernel("example_softsign", RILL_CPU, RILL_FP64, &Softsign<double>);

  r.Op(rill::OpSchema("example_hard_shrink")
           .Doc("Out = X where |X| > threshold, else 0, elementwise.")
           .Input("X", "input tensor")
           .Output("Out", "X shrunk, same shape")
           .Attr("threshold", 0.5, "at least 0")
           .KernelDtypeFrom("X"));
  r.Kernel("example_hard_shrink", RILL_CPU, RILL_FP32, &HardShrink<float>);
  r.Kernel("example_hard_shrink", RILL_CPU, RILL_FP64, &HardShrink<double>);

  r.Op(rill::OpSchema("example_sign_split")
           .Doc("Positive = max(X, 0) and Negative = min(X, 0), elementwise.")
           .Input("X", "input tensor")
           .Output("Positive", "X's positive part, same shape")
           .Output("Negative", "X's negative part, same shape")
           .KernelDtypeFrom("X"));
  r.Kernel("example_sign_split", RILL_CPU, RILL_FP32, &SignSplit<float>);

  r.Op(rill::OpSchema("example_running_mean")
           .Doc("Out (fp64 [1]) = the mean of every element X held in this op's runs so far.")
           .Input("X", "the values of this run")
           .Output("Out", "the running mean")
           .KernelDtypeFrom("X"));
  r.StatefulKernel<RunningMean<int64_t>>("example_running_mean", RILL_CPU, RILL_INT64);
  r.StatefulKernel<RunningMean<float>>("example_running_mean", RILL_CPU, RILL_FP32);
}

}  // namespace

RILL_PLUGIN("example_ops", "1.0.0", Init)
