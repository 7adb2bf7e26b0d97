// rill/checked_size.hpp — sizes computed from untrusted numbers without wrapping around.
//
// Contract: every size Rill computes from numbers it did not choose itself (a program's
// shape attribute, an .npy or tensor-file header, a wire message, a feed) goes through
// these, so a size that does not fit is an error instead of a small wrapped number that
// is then allocated, copied or trusted. Header-only and exception-free: the core and
// plugins (any compiler) use the same code and raise their own error type.
//
//   rill::ShapeSize s = rill::SizeOfShape(dims, ndim, elem_size);
//   if (!s.ok()) throw MyError("tensor " + name + ": " + s.error);
//   Allocate(s.bytes);
#ifndef RILL_CHECKED_SIZE_HPP_
#define RILL_CHECKED_SIZE_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

namespace rill {

// *out = a * b (a + b); false, leaving *out unspecified, when the exact result does not fit.
template <typename T> inline bool CheckedMul(T a, T b, T* out) { return !__builtin_mul_overflow(a, b, out); }
template <typename T> inline bool CheckedAdd(T a, T b, T* out) { return !__builtin_add_overflow(a, b, out); }

// The shape "[2, 3]" as error messages print it.
inline std::string ShapeString(const int64_t* dims, size_t ndim) {
  std::string s = "[";
  for (size_t i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// A dense tensor's element count and byte size. `error` is empty exactly when both fit:
// every dimension is >= 0, the count fits int64 and the byte size fits size_t. A shape
// with a 0 dimension is empty (0 elements, 0 bytes) whatever its other dimensions.
struct ShapeSize {
  int64_t numel = 1;
  size_t bytes = 0;
  std::string error;  // names the shape and what is wrong with it
  bool ok() const { return error.empty(); }
};

inline ShapeSize SizeOfShape(const int64_t* dims, size_t ndim, size_t elem_size) {
  ShapeSize s;
  for (size_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      s.error = "shape " + ShapeString(dims, ndim) + " has a negative dimension";
      return s;
    }
    if (dims[i] == 0) s.numel = 0;  // empty whatever the other dimensions are, as numpy's
  }
  if (s.numel == 0) return s;
  for (size_t i = 0; i < ndim; ++i) {
    if (!CheckedMul<int64_t>(s.numel, dims[i], &s.numel)) {
      s.error = "shape " + ShapeString(dims, ndim) + " has more elements than int64 can count";
      return s;
    }
  }
  if (!CheckedMul<size_t>(static_cast<size_t>(s.numel), elem_size, &s.bytes)) {
    s.error = "shape " + ShapeString(dims, ndim) + " of " + std::to_string(elem_size) +
              "-byte elements is more bytes than memory can address";
  }
  return s;
}

}  // namespace rill

#endif  // RILL_CHECKED_SIZE_HPP_
