#include "onednn_conv.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>
#include <unordered_map>

#include "intra_op.h"

namespace rill::math {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The operands' descriptions in Fluid's layouts.
memory::desc ImageDesc(const ConvPlan& p, int64_t c, int64_t h, int64_t w) {
  return memory::desc({p.n, c, h, w}, memory::data_type::f32, p.nhwc ? Tag::nhwc : Tag::nchw);
}
memory::desc FilterDesc(const ConvPlan& p) {
  if (p.groups == 1) return memory::desc({p.m, p.c, p.kh, p.kw}, memory::data_type::f32, Tag::oihw);
  return memory::desc({p.groups, p.mg(), p.cg(), p.kh, p.kw}, memory::data_type::f32, Tag::goihw);
}
// What the primitive is asked for: images in NHWC as they are (oneDNN has kernels for
// it); NCHW images with a multiple of 16 channels in nChw16c, the layout of oneDNN's
// AVX-512 direct kernels (left to oneDNN, it picks NHWC kernels, slower here once the
// reorders are counted); other NCHW images and all filters in the layout it prefers.
// Whatever differs from the caller's layout is reordered to and from.
memory::desc Wanted(const memory::desc& user, bool image, const ConvPlan& p) {
  if (image && p.nhwc) return user;
  if (image && user.dims()[1] % 16 == 0) return memory::desc(user.dims(), memory::data_type::f32, Tag::nChw16c);
  return memory::desc(user.dims(), memory::data_type::f32, Tag::any);
}

// Memory for operands in the primitive's layout, reused from run to run: a buffer fresh
// from the system costs a page fault per page on first touch, which for a convolution's
// activations is as long as the convolution itself. Buffers go back to the pool after
// each run (any thread may take any buffer); at most kKept stay, the largest.
class ScratchPool {
 public:
  struct Buffer {
    size_t bytes = 0;
    void* data = nullptr;
  };
  Buffer Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The smallest free buffer that is large enough.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
      }
      if (best != free_.end()) {
        const Buffer b = *best;
        free_.erase(best);
        return b;
      }
    }
    Buffer b;
    b.bytes = bytes;
    b.data = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (b.data == nullptr) throw std::bad_alloc();
    return b;
  }
  void Give(Buffer b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
    if (free_.size() > kKept) {
      auto smallest = std::min_element(free_.begin(), free_.end(),
                                       [](const Buffer& x, const Buffer& y) { return x.bytes < y.bytes; });
      std::free(smallest->data);
      free_.erase(smallest);
    }
  }

 private:
  static constexpr size_t kAlign = 64;  // a cache line; what oneDNN's own buffers get
  static constexpr size_t kKept = 8;
  std::mutex mu_;
  std::vector<Buffer> free_;
};

ScratchPool& Scratch() {
  static ScratchPool* pool = new ScratchPool;  // never destroyed: ops may run during exit
  return *pool;
}

// A pool buffer held for one run.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  explicit ScratchBuffer(size_t bytes) : b_(Scratch().Take(bytes)) {}
  ~ScratchBuffer() {
    if (b_.data != nullptr) Scratch().Give(b_);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(ScratchBuffer&& o) noexcept {
    std::swap(b_, o.b_);
    return *this;
  }
  void* data() const { return b_.data; }

 private:
  ScratchPool::Buffer b_;
};

}  // namespace

// One primitive and how its three operands get to and from the caller's memory. The
// operands are, in order: Forward (x, w) -> y; BackwardData (dy, w) -> dx;
// BackwardWeights (x, dy) -> dw.
struct OnednnConv::Entry {
  Kind kind;
  ConvPlan plan;
  int threads;
  bool supported = false;
  dnnl::primitive primitive;
  struct Operand {
    int arg;                  // DNNL_ARG_*
    memory::desc user, mine;  // the caller's layout, the primitive's
    dnnl::reorder reorder;    // user -> mine (inputs) or mine -> user (the output); unset if equal
    bool Reordered() const { return user != mine; }
  };
  std::array<Operand, 3> operands;  // two inputs, then the output
};

OnednnConv::OnednnConv() = default;
OnednnConv::~OnednnConv() = default;

std::shared_ptr<const OnednnConv::Entry> OnednnConv::Find(Kind kind, const ConvPlan& p, int threads) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i]->kind == kind && entries_[i]->threads == threads && entries_[i]->plan == p) {
        std::rotate(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(i),
                    entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return entries_.front();
      }
    }
  }
  // Made outside the lock (creation takes a while); two threads may both make one, and
  // both are equally good.
  auto e = std::make_shared<Entry>();
  e->kind = kind;
  e->plan = p;
  e->threads = threads;
  const memory::desc x = ImageDesc(p, p.c, p.h, p.w), y = ImageDesc(p, p.m, p.oh, p.ow), w = FilterDesc(p);
  const memory::dims strides{p.sh, p.sw}, dilates{p.dh - 1, p.dw - 1};
  const memory::dims pad_l{p.top, p.left}, pad_r{p.bottom, p.right};
  const dnnl::engine& engine = CpuEngine();
  try {
    const dnnl::convolution_forward::desc forward(
        kind == Kind::kForward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
        dnnl::algorithm::convolution_direct, Wanted(x, true, p), Wanted(w, false, p), memory::desc(),
        Wanted(y, true, p), strides, dilates, pad_l, pad_r);
    const dnnl::convolution_forward::primitive_desc forward_pd(forward, engine);
    if (kind == Kind::kForward) {
      e->primitive = dnnl::convolution_forward(forward_pd);
      e->operands = {{{DNNL_ARG_SRC, x, forward_pd.src_desc(), {}},
                      {DNNL_ARG_WEIGHTS, w, forward_pd.weights_desc(), {}},
                      {DNNL_ARG_DST, y, forward_pd.dst_desc(), {}}}};
    } else if (kind == Kind::kBackwardData) {
      const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, Wanted(x, true, p),
                                                    Wanted(w, false, p), Wanted(y, true, p), strides, dilates, pad_l,
                                                    pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, engine, forward_pd);
      e->primitive = dnnl::convolution_backward_data(pd);
      e->operands = {{{DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc(), {}},
                      {DNNL_ARG_WEIGHTS, w, pd.weights_desc(), {}},
                      {DNNL_ARG_DIFF_SRC, x, pd.diff_src_desc(), {}}}};
    } else {
      const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, Wanted(x, true, p),
                                                       Wanted(w, false, p), Wanted(y, true, p), strides, dilates,
                                                       pad_l, pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, engine, forward_pd);
      e->primitive = dnnl::convolution_backward_weights(pd);
      e->operands = {{{DNNL_ARG_SRC, x, pd.src_desc(), {}},
                      {DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc(), {}},
                      {DNNL_ARG_DIFF_WEIGHTS, w, pd.diff_weights_desc(), {}}}};
    }
    for (size_t i = 0; i < e->operands.size(); ++i) {
      Entry::Operand& o = e->operands[i];
      if (!o.Reordered()) continue;
      o.reorder = i < 2 ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, o.user, engine, o.mine))
                        : dnnl::reorder(dnnl::reorder::primitive_desc(engine, o.mine, engine, o.user));
    }
    e->supported = true;
  } catch (const dnnl::error&) {
    e->supported = false;  // no implementation for this plan here: remembered, not retried
  }
  std::lock_guard<std::mutex> lock(mu_);
  entries_.insert(entries_.begin(), e);
  if (entries_.size() > kMaxEntries) entries_.pop_back();
  return e;
}

bool OnednnConv::Run(Kind kind, const ConvPlan& p, const float* in0, const float* in1, float* out) {
  if (p.n == 0 || p.c == 0 || p.m == 0 || p.oh == 0 || p.ow == 0) return false;
  const double flops = 2.0 * static_cast<double>(p.n * p.m * p.oh * p.ow) * static_cast<double>(p.col_rows());
  bool ran = false;
  RunIntraOp(flops, [&] {
    // The thread count this runs with, which the primitive is made for.
    const std::shared_ptr<const Entry> e = Find(kind, p, omp_get_max_threads());
    if (!e->supported) return;
    const dnnl::engine& engine = CpuEngine();
    dnnl::stream stream(engine);
    const std::array<void*, 3> user{const_cast<float*>(in0), const_cast<float*>(in1), out};
    std::array<memory, 3> mine;
    std::array<ScratchBuffer, 3> scratch;
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < 3; ++i) {
      const Entry::Operand& o = e->operands[i];
      memory caller(o.user, engine, user[i]);
      if (o.Reordered()) scratch[i] = ScratchBuffer(o.mine.get_size());
      mine[i] = o.Reordered() ? memory(o.mine, engine, scratch[i].data()) : caller;
      if (o.Reordered() && i < 2) o.reorder.execute(stream, caller, mine[i]);
      args.emplace(o.arg, mine[i]);
    }
    e->primitive.execute(stream, args);
    const Entry::Operand& o = e->operands[2];
    if (o.Reordered()) {
      memory caller(o.user, engine, out);
      o.reorder.execute(stream, mine[2], caller);
    }
    stream.wait();
    ran = true;
  });
  return ran;
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
