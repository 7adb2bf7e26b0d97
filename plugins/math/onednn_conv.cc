#include "onednn_conv.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "intra_op.h"

namespace rill::math {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// The operands' descriptions in Fluid's layouts.
memory::desc ImageDesc(const ConvPlan& p, int64_t c, int64_t h, int64_t w) {
  return memory::desc({p.n, c, h, w}, memory::data_type::f32, p.nhwc ? Tag::nhwc : Tag::nchw);
}
memory::desc FilterDesc(const ConvPlan& p) {
  if (p.groups == 1) return memory::desc({p.m, p.c, p.kh, p.kw}, memory::data_type::f32, Tag::oihw);
  return memory::desc({p.groups, p.mg(), p.cg(), p.kh, p.kw}, memory::data_type::f32, Tag::goihw);
}
// The channel block of oneDNN's direct convolution kernels on this CPU, as oneDNN itself
// dispatches (its effective ISA, which ONEDNN_MAX_CPU_ISA may lower): 16 floats, a vector
// register, with AVX-512; 8 with AVX2; 0 (none) below. The ISA values are bit sets, each
// containing the ones it extends.
int64_t DirectKernelBlock() {
  static const int64_t block = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto has = [isa](dnnl::cpu_isa other) {
      const auto bits = static_cast<unsigned>(other);
      return (isa & bits) == bits;
    };
    return has(dnnl::cpu_isa::avx512_core) ? int64_t{16} : has(dnnl::cpu_isa::avx2) ? int64_t{8} : int64_t{0};
  }();
  return block;
}

// What the primitive is asked for: images in NHWC as they are (oneDNN has kernels for
// it); NCHW images whose channels are a multiple of the direct kernels' block in that
// blocked layout (nChw16c, nChw8c), which those kernels take (left to oneDNN, it picks NHWC
// kernels, slower once the reorders are counted; and a block the CPU's kernels do not
// take leaves only oneDNN's reference code); other NCHW images and all filters in the
// layout it prefers. Whatever differs from the caller's layout is reordered to and from.
memory::desc Wanted(const memory::desc& user, bool image, const ConvPlan& p) {
  if (image && p.nhwc) return user;
  const int64_t block = DirectKernelBlock();
  if (image && block != 0 && user.dims()[1] % block == 0) {
    return memory::desc(user.dims(), memory::data_type::f32, block == 16 ? Tag::nChw16c : Tag::nChw8c);
  }
  return memory::desc(user.dims(), memory::data_type::f32, Tag::any);
}

// The primitive for `kind` of plan p. The operands are, in order: Forward (x, w) -> y;
// BackwardData (dy, w) -> dx; BackwardWeights (x, dy) -> dw.
OnednnCall MakeCall(OnednnConv::Kind kind, const ConvPlan& p) {
  using Kind = OnednnConv::Kind;
  const memory::desc x = ImageDesc(p, p.c, p.h, p.w), y = ImageDesc(p, p.m, p.oh, p.ow), w = FilterDesc(p);
  const memory::dims strides{p.sh, p.sw}, dilates{p.dh - 1, p.dw - 1};
  const memory::dims pad_l{p.top, p.left}, pad_r{p.bottom, p.right};
  const dnnl::engine& engine = CpuEngine();
  const dnnl::convolution_forward::desc forward(
      kind == Kind::kForward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, Wanted(x, true, p), Wanted(w, false, p), memory::desc(), Wanted(y, true, p),
      strides, dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc forward_pd(forward, UserScratchpad(), engine);
  OnednnCall call;
  if (kind == Kind::kForward) {
    call.primitive = dnnl::convolution_forward(forward_pd);
    call.operands = {{DNNL_ARG_SRC, x, forward_pd.src_desc()},
                     {DNNL_ARG_WEIGHTS, w, forward_pd.weights_desc()},
                     {DNNL_ARG_DST, y, forward_pd.dst_desc(), true}};
  } else if (kind == Kind::kBackwardData) {
    const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, Wanted(x, true, p),
                                                  Wanted(w, false, p), Wanted(y, true, p), strides, dilates, pad_l,
                                                  pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(d, UserScratchpad(), engine, forward_pd);
    call.primitive = dnnl::convolution_backward_data(pd);
    call.operands = {{DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc()},
                     {DNNL_ARG_WEIGHTS, w, pd.weights_desc()},
                     {DNNL_ARG_DIFF_SRC, x, pd.diff_src_desc(), true}};
  } else {
    const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, Wanted(x, true, p),
                                                     Wanted(w, false, p), Wanted(y, true, p), strides, dilates, pad_l,
                                                     pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(d, UserScratchpad(), engine, forward_pd);
    call.primitive = dnnl::convolution_backward_weights(pd);
    call.operands = {{DNNL_ARG_SRC, x, pd.src_desc()},
                     {DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc()},
                     {DNNL_ARG_DIFF_WEIGHTS, w, pd.diff_weights_desc(), true}};
  }
  return call;
}

}  // namespace

bool OnednnConv::Run(Kind kind, const ConvPlan& p, const float* in0, const float* in1, float* out) {
  if (p.n == 0 || p.c == 0 || p.m == 0 || p.oh == 0 || p.ow == 0) return false;
  const double flops = 2.0 * static_cast<double>(p.n * p.m * p.oh * p.ow) * static_cast<double>(p.col_rows());
  const double bytes =
      sizeof(float) * static_cast<double>(p.n * p.c * p.h * p.w + p.m * p.col_rows() + p.n * p.m * p.oh * p.ow);
  return RunIntraOp(flops, bytes, [&] {
    // Made for the thread count it runs with.
    const Key key{kind, p, omp_get_max_threads()};
    const std::shared_ptr<const OnednnCall> call = cache_.Find(key, [&] { return MakeCall(kind, p); });
    if (!call->supported) return false;
    call->Run({const_cast<float*>(in0), const_cast<float*>(in1), out});
    return true;
  });
}

bool OnednnConv::Forward(const ConvPlan& p, const float* x, const float* w, float* y) {
  return Run(Kind::kForward, p, x, w, y);
}
bool OnednnConv::BackwardData(const ConvPlan& p, const float* dy, const float* w, float* dx) {
  return Run(Kind::kBackwardData, p, dy, w, dx);
}
bool OnednnConv::BackwardWeights(const ConvPlan& p, const float* x, const float* dy, float* dw) {
  return Run(Kind::kBackwardWeights, p, x, dy, dw);
}

}  // namespace rill::math
