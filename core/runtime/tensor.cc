#include "core/runtime/tensor.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <cstring>
#include <sstream>

#include "core/abi/status.h"
#include "core/errors.h"
#include "core/runtime/device.h"
#include "core/runtime/dtype.h"
#include "core/runtime/small_objects.h"
#include "core/runtime/staging_memory.h"
#include "rill/checked_size.hpp"

namespace rill::core {

std::string Place::ToString() const {
  if (device_type == RILL_CPU) return "CPU";
  return DeviceName(device_type) + ":" + std::to_string(device_id);
}

// Host memory is never zero bytes, so every allocated tensor has a valid data pointer, and
// a multiple of the alignment, as aligned_alloc needs.
size_t Buffer::HostBytes(size_t bytes) {
  return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// A block that holds `rounded` bytes at a kAlignment boundary, from an allocator that
// aligns to kMallocAlignment only.
size_t Buffer::PaddedBytes(size_t rounded) { return rounded + kAlignment - kMallocAlignment; }

// The first kAlignment boundary in a block of PaddedBytes (or null for null).
void* Buffer::AlignedInside(void* block) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block) + kAlignment - 1) & ~(kAlignment - 1));
}

// A large buffer starts at a huge-page boundary and asks the kernel (transparent huge
// pages, in their `madvise` mode) to back its whole huge pages with huge pages: filling it
// then takes one page fault per 2 MiB instead of one per 4 KiB, which is most of the cost
// of reading a model's parameters into new memory. The tail past the last whole huge page
// keeps small pages, so a buffer holds no more memory than it asks for; the advice is for
// this buffer's pages alone. Where the kernel has no huge pages the advice does nothing.
// (posix_memalign: aligned_alloc wants a size that is a multiple of the alignment.)
void* Buffer::AllocateHuge(size_t rounded) {
  void* block = nullptr;
  if (posix_memalign(&block, kHugePage, rounded) != 0) return nullptr;
  madvise(block, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);
  return block;
}

Buffer::Buffer(size_t bytes, Place place, const Device* staging_for) : data_(nullptr), size_(bytes), place_(place) {
  if (place.device_type != RILL_CPU) {
    device_ = FindDevice(place.device_type);
    if (device_ == nullptr) {
      throw Error("cannot allocate on " + place.ToString() + ": no loaded plugin provides that device",
                  RILL_UNIMPLEMENTED);
    }
    const int32_t count = device_->device_count();
    if (place.device_id < 0 || place.device_id >= count) {
      throw Error("cannot allocate on " + place.ToString() + ": " + std::to_string(count) + " " + device_->name +
                      " device(s) present",
                  RILL_UNAVAILABLE);
    }
    ThrowIfError(device_->allocate(place.device_id, bytes == 0 ? 1 : bytes, &data_),
                 "allocating " + std::to_string(bytes) + " bytes on " + place.ToString() + ": ");
    CountDeviceBuffers(1);
    return;
  }
  if (bytes > static_cast<size_t>(PTRDIFF_MAX)) {  // beyond any allocator; rounding up would wrap
    throw Error("out of memory allocating " + std::to_string(bytes) + " bytes: more than a process can address",
                RILL_RESOURCE_EXHAUSTED);
  }
  const size_t rounded = HostBytes(bytes);
  if (staging_for != nullptr && (data_ = TakeStagingMemory(*staging_for, rounded)) != nullptr) {
    staged_for_ = staging_for;
    return;
  }
  if (rounded <= kAlignment && AlignedInside(inline_) == inline_) {
    data_ = inline_;
    return;
  }
  // Small buffers are aligned by hand inside a plain block: glibc's aligned_alloc bypasses
  // its per-thread cache and splits a larger chunk on every call (a tenth of a program
  // ping-pong's time went there). The smallest blocks come from the small-object caches (a
  // value a go block sends is allocated on one worker and freed on another), the others
  // from malloc, whose per-thread cache serves them.
  const size_t padded = PaddedBytes(rounded);
  block_ = padded <= kMaxSmallBytes ? AllocateSmall(padded)
           : rounded <= kSmallBytes ? std::malloc(padded)
           : rounded < kHugePage    ? std::aligned_alloc(kAlignment, rounded)
                                    : AllocateHuge(rounded);
  data_ = AlignedInside(block_);
  if (block_ == nullptr) {
    throw Error("out of memory allocating " + std::to_string(bytes) + " bytes", RILL_RESOURCE_EXHAUSTED);
  }
}

Buffer::~Buffer() {
  if (device_ != nullptr) {
    device_->free(place_.device_id, data_);
    CountDeviceBuffers(-1);
  } else if (staged_for_ != nullptr) {
    GiveBackStagingMemory(*staged_for_, data_, HostBytes(size_));
  } else if (block_ == nullptr) {
    // inline_: nothing to free
  } else if (const size_t padded = PaddedBytes(HostBytes(size_)); padded <= kMaxSmallBytes) {
    FreeSmall(block_, padded);
  } else {
    std::free(block_);
  }
}

const LoD LoDHolder::kEmpty;

std::string LoDProblem(const LoD& lod, int64_t rows) {
  for (size_t i = 0; i < lod.size(); ++i) {
    const auto& level = lod[i];
    const std::string where = "LoD level " + std::to_string(i);
    if (level.size() < 2) return where + " has " + std::to_string(level.size()) + " offsets (at least 2: 0 and an end)";
    if (level.front() != 0) return where + " starts at " + std::to_string(level.front()) + ", not 0";
    for (size_t j = 1; j < level.size(); ++j) {
      if (level[j] < level[j - 1]) {
        return where + " decreases at offset " + std::to_string(j) + " (" + std::to_string(level[j - 1]) + " then " +
               std::to_string(level[j]) + ")";
      }
    }
    if (i + 1 < lod.size() && lod[i + 1].size() < 2) continue;  // the next level's own problem
    const uint64_t end = i + 1 < lod.size() ? lod[i + 1].size() - 1 : static_cast<uint64_t>(rows);
    if (level.back() != end) {
      return where + " ends at " + std::to_string(level.back()) + ", but " +
             (i + 1 < lod.size() ? "level " + std::to_string(i + 1) + " has " + std::to_string(end) + " sequences"
                                 : "the tensor has " + std::to_string(end) + " rows");
    }
  }
  return "";
}

namespace {
// The calling thread's spare buffer (Tensor::RecycleBuffer): one, so what it keeps alive is
// bounded by a small block a thread.
thread_local std::shared_ptr<Buffer> t_spare;

// The spare when it holds exactly `bytes`, else null.
std::shared_ptr<Buffer> TakeSpare(size_t bytes) {
  if (t_spare != nullptr && t_spare->size() == bytes) return std::move(t_spare);
  return nullptr;
}
}  // namespace

void Tensor::RecycleBuffer() {
  // A view is never a spare: it would keep the whole allocation it is a slice of alive.
  if (buffer_ && buffer_.use_count() == 1 && buffer_->place().device_type == RILL_CPU &&
      buffer_->staged_for() == nullptr && buffer_->size() <= kMaxSmallBytes && !buffer_->is_view()) {
    t_spare = std::move(buffer_);
  }
}

size_t Tensor::nbytes() const { return initialized() ? static_cast<size_t>(numel_) * DataTypeSize(dtype_) : 0; }

void* Tensor::Allocate(int32_t dtype, const int64_t* dims, size_t ndim, Place place, const Device* staging_for) {
  if (void* same = AlreadyAllocated(dtype, dims, ndim, place)) return same;
  if (dims >= dims_.data() && dims < dims_.data() + dims_.size()) {
    const std::vector<int64_t> copy(dims, dims + ndim);  // `dims` is our own shape
    return Allocate(dtype, copy.data(), copy.size(), place, staging_for);
  }
  const ShapeSize size = SizeOfShape(dims, ndim, DataTypeSize(dtype));
  if (!size.ok())
    throw Error("cannot allocate a tensor of " + DataTypeName(dtype) + ": " + size.error, RILL_INVALID_ARGUMENT);
  const int64_t numel = size.numel;
  const size_t bytes = size.bytes;
  const bool reuse = buffer_ && buffer_.use_count() == 1 && buffer_->size() == bytes && buffer_->place() == place;
  if (!reuse) {
    // Buffer stages only CPU memory; for a device place `staging_for` goes unused.
    if (staging_for == nullptr && buffer_) {
      staging_for = buffer_->device() != nullptr ? buffer_->device() : buffer_->staged_for();
    }
    std::shared_ptr<Buffer> spare =
        place.device_type == RILL_CPU && staging_for == nullptr ? TakeSpare(bytes) : nullptr;
    buffer_ = spare != nullptr
                  ? std::move(spare)
                  : std::allocate_shared<Buffer>(SmallObjectAllocator<Buffer>(), bytes, place, staging_for);
  }
  SetShape(dtype, dims, ndim, numel, place);
  return buffer_->data();
}

std::vector<Tensor> Tensor::AllocateTogether(const std::vector<std::pair<int32_t, std::vector<int64_t>>>& shapes) {
  // The whole allocation and a view per tensor, in one object: each tensor's buffer_
  // shares its ownership (shared_ptr's aliasing form) while pointing at its own view.
  struct Together {
    explicit Together(size_t bytes) : whole(bytes, Place{}) {}
    Buffer whole;
    std::deque<Buffer> views;  // a deque: Buffers do not move
  };
  std::vector<ShapeSize> sizes;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const auto& [dtype, dims] : shapes) {
    const ShapeSize size = SizeOfShape(dims.data(), dims.size(), DataTypeSize(dtype));
    if (!size.ok())
      throw Error("cannot allocate a tensor of " + DataTypeName(dtype) + ": " + size.error, RILL_INVALID_ARGUMENT);
    offsets.push_back(total);
    sizes.push_back(size);
    const size_t rounded = (size.bytes + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment;
    if (rounded < size.bytes || !CheckedAdd(total, rounded, &total)) {
      throw Error("out of memory: tensors together more bytes than memory can address", RILL_RESOURCE_EXHAUSTED);
    }
  }
  auto together = std::make_shared<Together>(total);
  std::vector<Tensor> out(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    Buffer& view =
        together->views.emplace_back(static_cast<char*>(together->whole.data()) + offsets[k], sizes[k].bytes);
    out[k].buffer_ = std::shared_ptr<Buffer>(together, &view);
    out[k].SetShape(shapes[k].first, shapes[k].second.data(), shapes[k].second.size(), sizes[k].numel, Place{});
  }
  return out;
}

Tensor Tensor::Borrow(int32_t dtype, const std::vector<int64_t>& dims, void* data, std::shared_ptr<void> keeper) {
  const ShapeSize size = SizeOfShape(dims.data(), dims.size(), DataTypeSize(dtype));
  if (!size.ok())
    throw Error("cannot make a tensor of " + DataTypeName(dtype) + ": " + size.error, RILL_INVALID_ARGUMENT);
  if (reinterpret_cast<uintptr_t>(data) % Buffer::kAlignment != 0 || size.bytes < Buffer::kAlignment) {
    throw Error("cannot borrow memory that is not 64-byte aligned or holds fewer than 64 bytes", RILL_INVALID_ARGUMENT);
  }
  struct Borrowed {  // the view and what keeps its memory alive, in one object
    Borrowed(void* data, size_t bytes, std::shared_ptr<void> keeper) : view(data, bytes), keeper(std::move(keeper)) {}
    Buffer view;
    std::shared_ptr<void> keeper;
  };
  auto borrowed = std::make_shared<Borrowed>(data, size.bytes, std::move(keeper));
  Tensor t;
  t.buffer_ = std::shared_ptr<Buffer>(borrowed, &borrowed->view);
  t.SetShape(dtype, dims.data(), dims.size(), size.numel, Place{});
  return t;
}

void Tensor::ShareWith(const Tensor& src, const int64_t* dims, size_t ndim) {
  if (!src.initialized()) throw Error("cannot share the memory of a tensor that holds no value", RILL_INVALID_ARGUMENT);
  const std::vector<int64_t> shape(dims, dims + ndim);  // `dims` may be either tensor's own shape
  const ShapeSize size = SizeOfShape(shape.data(), shape.size(), DataTypeSize(src.dtype_));
  if (!size.ok()) throw Error("cannot view a tensor: " + size.error, RILL_INVALID_ARGUMENT);
  if (size.numel != src.numel_) {
    throw Error("cannot view a tensor of " + std::to_string(src.numel_) + " elements as shape " +
                    ShapeString(shape.data(), shape.size()) + " of " + std::to_string(size.numel),
                RILL_INVALID_ARGUMENT);
  }
  buffer_ = src.buffer_;
  SetShape(src.dtype_, shape.data(), shape.size(), size.numel, src.place_);
}

void* Tensor::AllocateScalar(int32_t dtype) {
  static constexpr int64_t kOne = 1;
  const size_t bytes = DataTypeSize(dtype);
  if (buffer_ || !lod_.empty() || bytes == 0) return Allocate(dtype, &kOne, 1);
  std::shared_ptr<Buffer> spare = TakeSpare(bytes);
  buffer_ = spare != nullptr ? std::move(spare)
                             : std::allocate_shared<Buffer>(SmallObjectAllocator<Buffer>(), bytes, Place{}, nullptr);
  SetShape(dtype, &kOne, 1, 1, Place{});
  return buffer_->data();
}

Tensor Tensor::DeepCopy() const { return CopyTo(place_); }

Tensor Tensor::CopyTo(Place place) const {
  Tensor out;
  CopyInto(out, place);
  return out;
}

void Tensor::CopyInto(Tensor& out, Place place) const {
  if (&out == this) return;
  if (!initialized()) {
    out = Tensor();
    return;
  }
  // Off a device onto the CPU: into the device's page-locked memory (the copy runs at
  // full speed, and a transport then sends from it).
  out.Allocate(dtype_, dims_.data(), dims_.size(), place, place.device_type == RILL_CPU ? buffer_->device() : nullptr);
  if (!lod_.empty() || !out.lod_.empty()) out.lod_ = lod_;
  const size_t bytes = out.nbytes();
  if (bytes == 0) return;
  if (place_.device_type == RILL_CPU && place.device_type == RILL_CPU) {
    CopyHostBytes(out.data(), data(), bytes);
    return;
  }
  // Between the CPU and a device, or within one device: the device copies.
  const bool to_device = place.device_type != RILL_CPU;
  const bool from_device = place_.device_type != RILL_CPU;
  if (to_device && from_device && !(place == place_)) {
    CopyTo(Place{}).CopyInto(out, place);  // between two devices: through the host
    return;
  }
  const Place& dev = to_device ? place : place_;
  const int32_t kind = to_device && from_device ? RILL_COPY_DEVICE_TO_DEVICE
                       : to_device              ? RILL_COPY_HOST_TO_DEVICE
                                                : RILL_COPY_DEVICE_TO_HOST;
  const Device* device = FindDevice(dev.device_type);
  ThrowIfError(
      device->copy(dev.device_id, out.data(), data(), nbytes(), kind),
      "copying " + std::to_string(nbytes()) + " bytes from " + place_.ToString() + " to " + place.ToString() + ": ");
}

namespace {
template <class T> void AppendValues(std::ostringstream& os, const void* data, size_t n, const char* sep) {
  const T* p = static_cast<const T*>(data);
  for (size_t i = 0; i < n; ++i) {
    if (i) os << sep;
    if constexpr (std::is_same_v<T, bool>) {
      os << (p[i] ? "true" : "false");
    } else if constexpr (sizeof(T) == 1) {
      os << static_cast<int>(p[i]);
    } else {
      os << p[i];
    }
  }
}

void AppendAny(std::ostringstream& os, int32_t dtype, const void* data, size_t n, const char* sep) {
  switch (dtype) {
    case RILL_BOOL: AppendValues<bool>(os, data, n, sep); break;
    case RILL_INT16: AppendValues<int16_t>(os, data, n, sep); break;
    case RILL_INT32: AppendValues<int32_t>(os, data, n, sep); break;
    case RILL_INT64: AppendValues<int64_t>(os, data, n, sep); break;
    case RILL_FP32: AppendValues<float>(os, data, n, sep); break;
    case RILL_FP64: AppendValues<double>(os, data, n, sep); break;
    case RILL_SIZE_T: AppendValues<uint64_t>(os, data, n, sep); break;
    case RILL_UINT8: AppendValues<uint8_t>(os, data, n, sep); break;
    case RILL_INT8: AppendValues<int8_t>(os, data, n, sep); break;
    default: os << "<" << n << " values of " << DataTypeName(dtype) << ">"; break;
  }
}
}  // namespace

std::string Tensor::ValuesToString(size_t max_values, const char* sep) const {
  std::ostringstream os;
  os.precision(7);
  if (!initialized()) return "";
  if (place_.device_type != RILL_CPU) return CopyTo(Place{}).ValuesToString(max_values, sep);
  const size_t n = std::min<size_t>(static_cast<size_t>(numel_), max_values);
  AppendAny(os, dtype_, data(), n, sep);
  if (n < static_cast<size_t>(numel_)) os << sep << "...";
  return os.str();
}

std::string Tensor::Describe(size_t max_values) const {
  if (!initialized()) return "tensor (empty)";
  std::ostringstream os;
  os << DataTypeName(dtype_) << "[";
  for (size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << "]";
  if (place_.device_type != RILL_CPU) os << " on " << place_.ToString();
  os << " {" << ValuesToString(max_values, ", ") << "}";
  return os.str();
}

}  // namespace rill::core
