// A third party's loop counter, built as any plugin is (against the SDK only): the peer of
// math's `increment` in rill_bench_executor, to show that a plugin's own small op runs as
// fast as the shipped one. The same contract as `increment` (Out = X + step, one element),
// under a name of its own; written here, not shared with the math plugin.
#include "rill/sdk.hpp"

namespace {

template <class T> class Counter {
 public:
  explicit Counter(const rill::OpInfo& op)
      : step_(static_cast<T>(op.Attr<float>("step"))), x_(op.InputSlot("X")), out_(op.OutputSlot("Out")) {}

  void Compute(rill::KernelContext& ctx) {
    rill::Tensor x = ctx.Input(x_);
    if (x.numel() != 1) throw rill::Error("X must have exactly one element");
    const T value = *x.data<T>() + step_;
    *ctx.AllocateOutput<T>(out_, x.dims_data(), x.ndim()) = value;
  }
  bool Scalar(const RillScalar* in, RillScalar* out) const {
    T x;
    if (!rill::ReadScalar(in[0], &x)) return false;
    rill::WriteScalar<T>(out[0], static_cast<T>(x + step_));
    return true;
  }

 private:
  const T step_;
  const rill::Slot x_, out_;
};

void Init(rill::Registrar& r) {
  r.Op(rill::OpSchema("third_party_counter")
           .Doc("Out = X + step for a one-element X.")
           .Input("X")
           .Output("Out")
           .Attr("step", 1.0)
           .KernelDtypeFrom("X"));
  r.StatefulKernel<Counter<float>>("third_party_counter", RILL_CPU, RILL_FP32);
  r.StatefulKernel<Counter<int64_t>>("third_party_counter", RILL_CPU, RILL_INT64);
}

}  // namespace

RILL_PLUGIN("third_party_counter", "1.0.0", Init)
