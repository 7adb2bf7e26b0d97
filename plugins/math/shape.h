// plugins/math/shape.h — shape arithmetic shared by the CPU and CUDA kernels (no Eigen,
// so nvcc-compiled files can use it).
#ifndef RILL_PLUGINS_MATH_SHAPE_H_
#define RILL_PLUGINS_MATH_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rill/sdk.hpp"

namespace rill::math {

inline std::string DimsString(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Product of dims[begin, end).
inline int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

// Normalizes a possibly negative axis for a tensor of rank `rank`; throws if out of range.
inline size_t NormalizeAxis(int64_t axis, size_t rank, const char* what = "axis") {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw Error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// cross_entropy's shape contract, for the CPU and CUDA kernels alike: X [..., D] holds
// probabilities, Label holds one class per row (hard) or is shaped like X (soft), and Y
// is [..., 1].
struct CrossEntropyShape {
  int64_t rows = 0, classes = 0;
  std::vector<int64_t> out_dims;
};

inline CrossEntropyShape CheckCrossEntropy(const std::vector<int64_t>& x, const std::vector<int64_t>& label,
                                           bool soft_label) {
  if (x.size() < 2) throw Error("X must be [N, D] probabilities, got " + DimsString(x));
  CrossEntropyShape s;
  s.classes = x.back();
  s.rows = Product(x, 0, x.size() - 1);
  s.out_dims.assign(x.begin(), x.end() - 1);
  s.out_dims.push_back(1);
  if (soft_label && label != x) {
    throw Error("soft Label must be shaped like X " + DimsString(x) + ", got " + DimsString(label));
  }
  if (!soft_label && Product(label, 0, label.size()) != s.rows) {
    throw Error("Label must hold one class index per row of X (" + std::to_string(s.rows) + "), got " +
                DimsString(label));
  }
  return s;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SHAPE_H_
