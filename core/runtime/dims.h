// core/runtime/dims.h — a tensor's shape, held inline up to kInline dimensions.
//
// Contract: a sequence of int64 dimensions with vector-like reads (size, data, [],
// iteration, ==). Shapes of up to kInline dimensions live inside the object, so making a
// tensor of such a shape allocates only its buffer: a go block's one-element values, a
// copy sent into a variable a move left empty, each paid a malloc and a free for a
// std::vector of one element before (TensorFlow's TensorShape and PyTorch's sizes keep
// their dimensions inline for the same reason). Longer shapes go to the heap.
#ifndef RILL_CORE_RUNTIME_DIMS_H_
#define RILL_CORE_RUNTIME_DIMS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rill::core {

class Dims {
 public:
  static constexpr size_t kInline = 4;

  Dims() = default;
  Dims(const Dims& o) { assign(o.begin(), o.end()); }
  Dims(Dims&& o) noexcept { Take(o); }
  Dims& operator=(const Dims& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  Dims& operator=(Dims&& o) noexcept {
    if (this != &o) {
      delete[] heap_;
      heap_ = nullptr;
      Take(o);
    }
    return *this;
  }
  ~Dims() { delete[] heap_; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return heap_ != nullptr ? heap_ : inline_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t operator[](size_t i) const { return data()[i]; }

  // Makes the shape [first, last); `first` may not point into this object. Heap memory
  // already held is reused when it is large enough.
  void assign(const int64_t* first, const int64_t* last) {
    const size_t n = static_cast<size_t>(last - first);
    if (n > kInline && n > heap_capacity_) {
      delete[] heap_;
      heap_ = new int64_t[n];
      heap_capacity_ = static_cast<uint32_t>(n);
    }
    if (heap_ != nullptr) {
      std::copy(first, last, heap_);
    } else {
      for (size_t k = 0; k < n; ++k) inline_[k] = first[k];  // a few words: no call to memmove
    }
    size_ = static_cast<uint32_t>(n);
  }

  void swap(Dims& o) noexcept {
    Dims t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  std::vector<int64_t> ToVector() const { return {begin(), end()}; }
  friend bool operator==(const Dims& a, const Dims& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator!=(const Dims& a, const Dims& b) { return !(a == b); }

 private:
  // Takes `o`'s dimensions; this holds no heap memory on entry. Leaves `o` empty.
  void Take(Dims& o) noexcept {
    size_ = o.size_;
    heap_ = o.heap_;
    heap_capacity_ = o.heap_capacity_;
    if (heap_ == nullptr) std::copy(o.inline_, o.inline_ + kInline, inline_);  // fixed size: no call
    o.heap_ = nullptr;
    o.heap_capacity_ = 0;
    o.size_ = 0;
  }

  // 32-bit counts: a Dims is in every tensor, and so in every scope variable (Variable).
  int64_t* heap_ = nullptr;  // null: the dimensions are in inline_
  uint32_t heap_capacity_ = 0;
  uint32_t size_ = 0;
  int64_t inline_[kInline] = {};
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_DIMS_H_
