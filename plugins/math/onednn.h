// plugins/math/onednn.h — what the math plugin's oneDNN kernels share: a primitive with
// its operands' layouts (OnednnCall), run on the caller's memory with reorders where the
// layouts differ, and each op's cache of the calls it made (OnednnCache), so a prepared op
// running again with the same shapes creates nothing.
//
// Calls run where intra_op.h puts them; a primitive is made for the thread count it runs
// with (omp_get_max_threads() there), which is part of every cache key.
//
// Every primitive here, reorders included, is made with UserScratchpad(): each execution
// gets scratchpad memory of its own from OnednnCall::Run. oneDNN's default scratchpad is
// shared by the primitives of the thread that made them, so a primitive run on another
// thread, or on two at once (go blocks running one op), would compute into memory another
// run is using. With the caller's scratchpad one call may run on any threads at once.
#ifndef RILL_PLUGINS_MATH_ONEDNN_H_
#define RILL_PLUGINS_MATH_ONEDNN_H_

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace rill::math {

const dnnl::engine& CpuEngine();
// The attributes every primitive here is made with: the scratchpad comes from the caller.
const dnnl::primitive_attr& UserScratchpad();

// Memory held for one call, from the pool OnednnCall::Run takes its reorder buffers from:
// a buffer fresh from the system costs a page fault per page on first touch, as long as
// the primitive itself for an activation, so buffers are reused from run to run. For a
// kernel's own scratch too (an output of a primitive it does not keep). Not zeroed.
class OnednnScratch {
 public:
  OnednnScratch() = default;
  explicit OnednnScratch(size_t bytes);
  ~OnednnScratch();
  OnednnScratch(const OnednnScratch&) = delete;
  OnednnScratch& operator=(OnednnScratch&& o) noexcept {
    std::swap(bytes_, o.bytes_);
    std::swap(data_, o.data_);
    return *this;
  }
  template <class T = void> T* data() const { return static_cast<T*>(data_); }

 private:
  size_t bytes_ = 0;
  void* data_ = nullptr;
};

// One primitive, and how each operand gets from or to the caller's memory.
struct OnednnCall {
  struct Operand {
    Operand(int arg, dnnl::memory::desc user, dnnl::memory::desc mine, bool output = false)
        : arg(arg), user(std::move(user)), mine(std::move(mine)), output(output) {}
    int arg;                        // DNNL_ARG_*
    dnnl::memory::desc user, mine;  // the caller's layout, the primitive's
    bool output;
    dnnl::reorder reorder;  // user -> mine (an input) or mine -> user (an output); unset if equal
    dnnl::memory::desc reorder_scratchpad;
    bool Reordered() const { return user != mine; }
  };
  // false: oneDNN has no implementation here but its reference one (the caller computes it
  // itself).
  bool supported = false;
  dnnl::primitive primitive;  // made with UserScratchpad()
  std::vector<Operand> operands;
  dnnl::memory::desc scratchpad;  // the primitive's
  size_t scratchpad_bytes = 0;    // the most any of the call's primitives needs

  // Makes the reorders and sizes the scratchpad, once the primitive and operands are set.
  void Prepare();
  // Whether oneDNN implements the primitive with its reference code ("ref:" in its
  // implementation's name): plain loops that check the optimized ones, slower than the
  // math plugin's own (a depthwise transposed convolution's weight gradient: 13x
  // PyTorch's time). Such a call counts as unsupported.
  bool IsReference() const;
  // Runs the primitive with operand i at memory[i], in the caller's layout; reordered
  // operands go through scratch memory kept for reuse (fresh pages would cost a page
  // fault each, as long as the primitive itself for an activation), as does the
  // scratchpad, which the reorders and the primitive use in turn.
  void Run(const std::vector<void*>& memory) const;
};

// The calls one op made, by key (whatever decides the primitive: shapes, attributes, the
// thread count), the most recently used first. Safe from several threads at once.
template <class Key> class OnednnCache {
 public:
  // The call for `key`, made by `make()` on first use (a dnnl::error from it, or a reference
  // implementation: unsupported).
  template <class Make> std::shared_ptr<const OnednnCall> Find(const Key& key, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first == key) {
          std::rotate(entries_.begin(), it, it + 1);
          return entries_.front().second;
        }
      }
    }
    // Made outside the lock (creation takes a while); two threads may both make one.
    auto call = std::make_shared<OnednnCall>();
    try {
      *call = make();
      call->Prepare();
      call->supported = !call->IsReference();
    } catch (const dnnl::error&) {
      call = std::make_shared<OnednnCall>();  // remembered as unsupported, not retried
    }
    std::lock_guard<std::mutex> lock(mu_);
    entries_.insert(entries_.begin(), {key, call});
    if (entries_.size() > kMaxEntries) entries_.pop_back();
    return call;
  }

 private:
  static constexpr size_t kMaxEntries = 8;  // shapes one op sees: a few batch sizes at most
  std::mutex mu_;                           // guards entries_
  std::vector<std::pair<Key, std::shared_ptr<const OnednnCall>>> entries_;
};

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_ONEDNN_H_
