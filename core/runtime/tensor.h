// core/runtime/tensor.h — a typed, shaped view over shared host (or device) memory.
//
// Contract: a Tensor is dims + dtype (framework.proto number) + place + LoD over a
// reference-counted buffer. Copying a Tensor shares the buffer (cheap, like Fluid's
// ShareDataWith); DeepCopy duplicates it. Host memory is 64-byte aligned. A tensor is not
// internally synchronized: concurrent writers must be ordered by the program (channels).
#ifndef RILL_CORE_RUNTIME_TENSOR_H_
#define RILL_CORE_RUNTIME_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/runtime/dims.h"
#include "core/runtime/dtype.h"
#include "rill/abi.h"

namespace rill::core {

struct Device;

struct Place {
  int32_t device_type = RILL_CPU;
  int32_t device_id = 0;
  bool operator==(const Place& o) const { return device_type == o.device_type && device_id == o.device_id; }
  std::string ToString() const;
};

using LoD = std::vector<std::vector<uint64_t>>;

// What is wrong with `lod` as the LoD of a tensor of `rows` rows, or "" when nothing is
// (Fluid's CheckLoD): every level has at least two offsets, starts at 0 and never
// decreases; each level ends at the number of entries the next level has (its offsets
// less one), and the last level ends at `rows`. An empty LoD is valid.
std::string LoDProblem(const LoD& lod, int64_t rows);

// A tensor's LoD in one pointer, with a value's copy semantics: most tensors have none (a
// go block's scalars), and a tensor is in every scope variable (Variable), whose size
// decides the size class of every variable's allocation.
class LoDHolder {
 public:
  LoDHolder() = default;
  LoDHolder(const LoDHolder& o) : p_(o.empty() ? nullptr : std::make_unique<LoD>(*o.p_)) {}
  LoDHolder(LoDHolder&& o) noexcept = default;
  LoDHolder& operator=(const LoDHolder& o) {
    if (o.empty()) {
      p_.reset();
    } else if (p_ != nullptr) {
      *p_ = *o.p_;
    } else {
      p_ = std::make_unique<LoD>(*o.p_);
    }
    return *this;
  }
  LoDHolder& operator=(LoDHolder&& o) noexcept = default;

  bool empty() const { return p_ == nullptr || p_->empty(); }
  const LoD& get() const { return p_ != nullptr ? *p_ : kEmpty; }
  LoD& mutable_get() {
    if (p_ == nullptr) p_ = std::make_unique<LoD>();
    return *p_;
  }
  void swap(LoDHolder& o) noexcept { p_.swap(o.p_); }

 private:
  static const LoD kEmpty;  // no guard to check on every read, as a function's static has
  std::unique_ptr<LoD> p_;
};

// One allocation on the CPU (64-byte aligned) or on a plugin-driven device, freed when
// the last tensor sharing it goes away. CPU memory allocated with `staging_for` is that
// device's page-locked host memory when it offers some (staging_memory.h).
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;
  Buffer(size_t bytes, Place place, const Device* staging_for = nullptr);
  // A view of `bytes` of CPU memory at `data`, which another Buffer owns (a slice of one
  // allocation shared by several tensors, Tensor::AllocateTogether): it frees nothing.
  Buffer(void* data, size_t bytes) : data_(data), size_(bytes) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  const Place& place() const { return place_; }
  // The device whose page-locked memory this CPU buffer is, or null.
  const Device* staged_for() const { return staged_for_; }
  // The device that owns this memory, or null for CPU memory.
  const Device* device() const { return device_; }
  // Whether this is a view of memory another Buffer owns.
  bool is_view() const { return block_ == nullptr && device_ == nullptr && staged_for_ == nullptr && data_ != inline_; }

 private:
  static size_t HostBytes(size_t bytes);
  static size_t PaddedBytes(size_t rounded);
  static void* AlignedInside(void* block);
  static void* AllocateHuge(size_t rounded);
  static constexpr size_t kSmallBytes = 1024;                            // aligned inside a malloc block
  static constexpr size_t kHugePage = size_t{2} << 20;                   // from here on: AllocateHuge
  static constexpr size_t kMallocAlignment = alignof(std::max_align_t);  // malloc gives that

  void* block_ = nullptr;  // what the CPU allocator returned (data_ lies inside it); null when inline
  void* data_;
  size_t size_;
  Place place_;
  const Device* device_ = nullptr;
  const Device* staged_for_ = nullptr;
  // CPU memory of at most kAlignment bytes (a scalar) lives here when it starts at a
  // kAlignment boundary: a small tensor is then one allocation (this Buffer, with its
  // shared count) instead of two. A go block's constants and results are such tensors,
  // made and freed with every block. Tensors make Buffers with allocate_shared from the
  // small-object pages, where the shared count (16 bytes) and the fields above (48) put
  // this at 64 bytes into a 128-byte block, itself 128-byte aligned; elsewhere (malloc, in
  // sanitizer builds) the memory is allocated apart whenever this is not aligned.
  alignas(16) unsigned char inline_[kAlignment];
};

class Tensor {
 public:
  Tensor() = default;

  int32_t dtype() const { return dtype_; }  // -1 until allocated
  bool initialized() const { return dtype_ >= 0; }
  const Dims& dims() const { return dims_; }
  int64_t numel() const { return numel_; }
  // A one-element CPU tensor of shape [1] and no LoD: what the ABI calls a scalar
  // (RillHostApi::var_scalar, RillScalar), and what a kernel's scalar path computes on.
  bool is_scalar() const { return host_scalar_rank() == 1 && lod_.empty(); }
  // The rank of a one-element CPU tensor (every dim 1), whatever its dtype and LoD; -1 for
  // any other.
  int32_t host_scalar_rank() const { return host_scalar_key_ >> 8; }
  // A one-element CPU tensor's dtype and rank in one value, HostScalarKey(dtype, rank);
  // -1 for any other. Kept with the shape: the scalar path asks it of every operand on
  // every step, and one compare then checks both.
  int32_t host_scalar_key() const { return host_scalar_key_; }
  // (-2, which no tensor's key is, for a dtype past 255: no tensor has one.)
  static constexpr int32_t HostScalarKey(int32_t dtype, int32_t rank) {
    return static_cast<uint32_t>(dtype) <= 0xff ? rank << 8 | dtype : -2;
  }
  // A scalar's value as abi.h's RillScalar bits: its element's bytes, the rest zero.
  // REQUIRES: is_scalar(). Every CPU buffer holds at least Buffer::kAlignment bytes, so the
  // 8-byte load stays inside it whatever the element's size.
  uint64_t scalar_bits() const {
    uint64_t bits;
    std::memcpy(&bits, data(), sizeof(bits));
    return bits & ScalarMask(dtype_);
  }
  // Writes a scalar's value in place: its element's bytes of `bits`, leaving the buffer's
  // bytes past them as they were. REQUIRES: is_scalar() of that dtype, its memory owned
  // (OwnData()).
  void set_scalar_bits(uint64_t bits) {
    void* p = data();
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    const uint64_t mask = ScalarMask(dtype_);
    word = (word & ~mask) | (bits & mask);
    std::memcpy(p, &word, sizeof(word));
  }
  size_t nbytes() const;
  const Place& place() const { return place_; }
  void* data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <class T> T* data_as() const { return static_cast<T*>(data()); }

  // Shapes the tensor, reusing its memory when the byte size is unchanged and nobody else
  // shares it, else allocating. Returns the data pointer. Throws Error for a negative
  // dimension, an unknown dtype or an unavailable place. New CPU memory for a tensor that
  // was on a device, or in its page-locked memory, is again that device's page-locked
  // memory where it has some: a variable that travels between a device and the CPU (a
  // parameter a transport receives, then a GPU kernel reads) is staged both ways.
  void* Allocate(int32_t dtype, const int64_t* dims, size_t ndim, Place place = {}) {
    if (void* same = AlreadyAllocated(dtype, dims, ndim, place)) return same;
    return Allocate(dtype, dims, ndim, place, nullptr);
  }
  void* Allocate(int32_t dtype, const std::vector<int64_t>& dims, Place place = {}) {
    return Allocate(dtype, dims.data(), dims.size(), place);
  }
  // A CPU tensor over memory someone else owns (a numpy array fed from Python): no copy;
  // `keeper` keeps the memory alive and is dropped when the last tensor sharing it goes.
  // REQUIRES: `data` is 64-byte aligned (what the ABI promises kernels) and holds the
  // dtype and shape's bytes, at least Buffer::kAlignment of them (what scalar_bits reads).
  // Like any shared buffer, it is rewritten in place only by whoever holds the only
  // reference: a caller that keeps a copy of the tensor keeps its memory unwritten.
  static Tensor Borrow(int32_t dtype, const std::vector<int64_t>& dims, void* data, std::shared_ptr<void> keeper);
  // Makes this tensor a view of `src`'s memory (no copy): src's dtype and place, shaped
  // `dims`, which must hold src's element count; the LoD stays this tensor's own (Fluid's
  // ShareDataWith). Memory two tensors share is rewritten in place by neither: whichever
  // is allocated next gets new memory (Allocate), so each keeps the values it was given.
  // Throws Error for a src without a value or a shape of another size.
  void ShareWith(const Tensor& src, const int64_t* dims, size_t ndim);
  // CPU tensors of the given dtypes and shapes in one allocation, each in its own
  // 64-byte-aligned slice of it; the allocation is freed when the last of them lets go of
  // its memory. For many tensors made at once and kept together (a model's parameters):
  // one allocation takes huge pages (Buffer) where many small ones would not. Throws as
  // Allocate for a shape whose size does not fit.
  static std::vector<Tensor> AllocateTogether(const std::vector<std::pair<int32_t, std::vector<int64_t>>>& shapes);
  // Allocate(dtype, {1}) on the CPU, for a tensor with no memory and no LoD yet (a
  // variable a move emptied, getting its next scalar): the same result without the general
  // path's checks. Any other tensor takes the general path.
  void* AllocateScalar(int32_t dtype);
  // Called on a tensor about to be overwritten or destroyed: its memory, when it is a small
  // block of host memory nobody else shares, becomes the calling thread's spare, which the
  // thread's next allocation of that many bytes takes instead of making a buffer. A value
  // handed on by a move (a channel receive replacing the receiver's old value) then pays
  // for the copy that made its successor (the next copy send into a variable a move left
  // empty) with no allocation. The tensor keeps its shape but may lose its memory.
  void RecycleBuffer();
  // The tensor's memory when nobody else shares it, else nullptr: where Allocate with the
  // tensor's own dtype, shape and place would write (a loop counter rewritten in place).
  // (A buffer_ with a count always holds a Buffer: each is made by allocate_shared.)
  void* OwnData() const { return buffer_.use_count() == 1 ? buffer_->data() : nullptr; }
  // Whether the tensor's CPU memory is a device's page-locked memory.
  bool page_locked() const { return buffer_ && buffer_->staged_for() != nullptr; }

  const LoD& lod() const { return lod_.get(); }
  bool has_lod() const { return !lod_.empty(); }
  LoD& mutable_lod() { return lod_.mutable_get(); }

  // Exchanges two tensors' descriptions and buffers (no copy, no reference counting): a
  // channel receive swaps the value with its buffer slot this way.
  void swap(Tensor& o) noexcept {
    std::swap(dtype_, o.dtype_);
    std::swap(host_scalar_key_, o.host_scalar_key_);
    dims_.swap(o.dims_);
    std::swap(numel_, o.numel_);
    std::swap(place_, o.place_);
    buffer_.swap(o.buffer_);
    lod_.swap(o.lod_);
  }
  friend void swap(Tensor& a, Tensor& b) noexcept { a.swap(b); }

  Tensor DeepCopy() const;
  // A copy of this tensor on `place` (a deep copy even when it is already there).
  Tensor CopyTo(Place place) const;
  // The same, into `out`, reusing its memory when Allocate can (same size, not shared).
  void CopyInto(Tensor& out, Place place) const;
  // "fp32[2, 3] {1, 2, 3, 4, 5, 6}", at most `max_values` values (device tensors are
  // copied to the CPU to be shown).
  std::string Describe(size_t max_values = 16) const;
  // The values only, separated by `sep`; " ..." marks values left out.
  std::string ValuesToString(size_t max_values = SIZE_MAX, const char* sep = " ") const;

 private:
  // The low bytes of a uint64_t that an element of `dtype` (a tensor's, so an element
  // type of 1 to 8 bytes) fills.
  static uint64_t ScalarMask(int32_t dtype) {
    const size_t bytes = DataTypeSize(dtype);
    return bytes >= sizeof(uint64_t) ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
  }
  // `staging_for`: the device whose page-locked memory new CPU memory should be; null
  // means the one the current buffer belongs to or is staged for.
  void* Allocate(int32_t dtype, const int64_t* dims, size_t ndim, Place place, const Device* staging_for);
  // Allocate's usual case, inline: a kernel or loop step rewriting its output run after
  // run finds it of the same dtype, shape and place, its memory not shared. The data
  // pointer then; nullptr otherwise.
  void* AlreadyAllocated(int32_t dtype, const int64_t* dims, size_t ndim, Place place) const {
    if (dtype != dtype_ || !(place == place_) || !buffer_ || buffer_.use_count() != 1 || ndim != dims_.size()) {
      return nullptr;
    }
    for (size_t i = 0; i < ndim; ++i) {
      if (dims[i] != dims_[i]) return nullptr;
    }
    return buffer_->data();
  }

  // Sets the shape fields together (Allocate's and AllocateScalar's only writer).
  void SetShape(int32_t dtype, const int64_t* dims, size_t ndim, int64_t numel, Place place) {
    dtype_ = dtype;
    dims_.assign(dims, dims + ndim);
    numel_ = numel;
    place_ = place;
    const bool host_scalar = numel == 1 && place.device_type == RILL_CPU && ndim <= INT8_MAX;
    host_scalar_key_ = host_scalar ? HostScalarKey(dtype, static_cast<int32_t>(ndim)) : -1;
  }

  int32_t dtype_ = -1;
  int32_t host_scalar_key_ = -1;  // see host_scalar_key(); where dtype_'s padding was
  Dims dims_;
  int64_t numel_ = 0;
  Place place_;
  std::shared_ptr<Buffer> buffer_;
  LoDHolder lod_;
};

// memcpy, with a scalar's bytes copied inline: a channel's copy send of one value spent
// as long in the call into libc as in the rest of the copy.
inline void CopyHostBytes(void* dst, const void* src, size_t n) {
  switch (n) {
    case 8: std::memcpy(dst, src, 8); return;
    case 4: std::memcpy(dst, src, 4); return;
    case 2: std::memcpy(dst, src, 2); return;
    case 1: std::memcpy(dst, src, 1); return;
    default: std::memcpy(dst, src, n);
  }
}

// Fluid's SelectedRows: a sparse set of rows of a [height, ...] tensor.
struct SelectedRows {
  std::vector<int64_t> rows;
  int64_t height = 0;
  Tensor value;
};

// Fluid's LoDTensorArray: a list of LoD tensors, each its own shape (a loop's per-step
// values). An entry never written is an empty tensor (not initialized).
using TensorArray = std::vector<Tensor>;

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_TENSOR_H_
