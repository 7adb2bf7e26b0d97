#include "onednn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <unordered_map>

namespace rill::math {
namespace {

// The pool behind OnednnScratch: buffers go back to it after each call (any thread may
// take any buffer); at most kKept stay, the largest.
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

ScratchPool& Pool() {
  static ScratchPool* pool = new ScratchPool;  // never destroyed: ops may run during exit
  return *pool;
}

}  // namespace

OnednnScratch::OnednnScratch(size_t bytes) {
  const ScratchPool::Buffer b = Pool().Take(bytes);
  bytes_ = b.bytes;
  data_ = b.data;
}

OnednnScratch::~OnednnScratch() {
  if (data_ != nullptr) Pool().Give({bytes_, data_});
}

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

const dnnl::primitive_attr& UserScratchpad() {
  static const dnnl::primitive_attr attr = [] {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
  }();
  return attr;
}

namespace {

// The scratchpad `p` takes from its caller. A primitive made without UserScratchpad() is
// refused: it would share oneDNN's own.
dnnl::memory::desc ScratchpadOf(const dnnl::primitive& p) {
  const_dnnl_primitive_attr_t attr = nullptr;
  dnnl_scratchpad_mode_t mode = dnnl_scratchpad_mode_library;
  if (dnnl_primitive_desc_get_attr(p.get_primitive_desc(), &attr) != dnnl_success ||
      dnnl_primitive_attr_get_scratchpad_mode(attr, &mode) != dnnl_success || mode != dnnl_scratchpad_mode_user) {
    throw std::logic_error("a oneDNN primitive of the math plugin was made without UserScratchpad()");
  }
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(p.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  return md != nullptr ? dnnl::memory::desc(*md) : dnnl::memory::desc();
}

}  // namespace

bool OnednnCall::IsReference() const {
  const char* name = nullptr;
  if (dnnl_primitive_desc_query(primitive.get_primitive_desc(), dnnl_query_impl_info_str, 0, &name) != dnnl_success) {
    return false;
  }
  return name != nullptr && std::strncmp(name, "ref", 3) == 0;
}

void OnednnCall::Prepare() {
  const dnnl::engine& engine = CpuEngine();
  scratchpad = ScratchpadOf(primitive);
  scratchpad_bytes = scratchpad.get_size();
  for (Operand& o : operands) {
    if (!o.Reordered()) continue;
    o.reorder = o.output
                    ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, o.mine, engine, o.user, UserScratchpad()))
                    : dnnl::reorder(dnnl::reorder::primitive_desc(engine, o.user, engine, o.mine, UserScratchpad()));
    o.reorder_scratchpad = ScratchpadOf(o.reorder);
    scratchpad_bytes = std::max(scratchpad_bytes, o.reorder_scratchpad.get_size());
  }
}

void OnednnCall::Run(const std::vector<void*>& memory) const {
  const dnnl::engine& engine = CpuEngine();
  dnnl::stream stream(engine);
  std::vector<dnnl::memory> callers, mine;
  std::vector<OnednnScratch> scratch(operands.size());
  OnednnScratch pad;
  if (scratchpad_bytes > 0) pad = OnednnScratch(scratchpad_bytes);
  // Arguments `args` with the scratchpad `desc` describes added, if it needs one.
  const auto with_scratchpad = [&](std::unordered_map<int, dnnl::memory> args, const dnnl::memory::desc& desc) {
    if (desc.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(desc, engine, pad.data()));
    return args;
  };
  const auto reorder = [&](const Operand& o, const dnnl::memory& from, const dnnl::memory& to) {
    o.reorder.execute(stream, with_scratchpad({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, o.reorder_scratchpad));
  };
  std::unordered_map<int, dnnl::memory> args;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    callers.emplace_back(o.user, engine, memory[i]);
    if (o.Reordered()) scratch[i] = OnednnScratch(o.mine.get_size());
    mine.push_back(o.Reordered() ? dnnl::memory(o.mine, engine, scratch[i].data()) : callers[i]);
    if (o.Reordered() && !o.output) reorder(o, callers[i], mine[i]);
    args.emplace(o.arg, mine[i]);
  }
  primitive.execute(stream, with_scratchpad(std::move(args), scratchpad));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].Reordered() && operands[i].output) reorder(operands[i], mine[i], callers[i]);
  }
  stream.wait();
}

}  // namespace rill::math
