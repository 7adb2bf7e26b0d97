// plugins/math/shape.h — shape arithmetic shared by the CPU and CUDA kernels (no Eigen,
// so nvcc-compiled files can use it).
#ifndef RILL_PLUGINS_MATH_SHAPE_H_
#define RILL_PLUGINS_MATH_SHAPE_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill/checked_size.hpp"
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

// The elements of a tensor of `dims` taken from a program (attributes, index inputs), of
// `elem_size` bytes each: throws Error naming `what` when a dim is negative or the count or
// bytes do not fit, instead of multiplying past int64.
inline int64_t CheckedCount(const std::vector<int64_t>& dims, size_t elem_size, const char* what) {
  const ShapeSize s = SizeOfShape(dims.data(), dims.size(), elem_size);
  if (!s.ok()) throw Error(std::string(what) + ": " + s.error, RILL_RESOURCE_EXHAUSTED);
  return s.numel;
}

// a * b for sizes from a program; throws Error naming `what` when it does not fit int64.
inline int64_t CheckedProduct(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  if (!CheckedMul<int64_t>(a, b, &out)) {
    throw Error(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) + " does not fit int64",
                RILL_RESOURCE_EXHAUSTED);
  }
  return out;
}

// Normalizes a possibly negative axis for a tensor of rank `rank`; throws if out of range.
inline size_t NormalizeAxis(int64_t axis, size_t rank, const char* what = "axis") {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw Error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// concat's shape contract: every input has the same rank and the same dims outside `axis`
// (normalized); Out joins them along it.
inline std::vector<int64_t> ConcatDims(const std::vector<std::vector<int64_t>>& xs, size_t axis) {
  std::vector<int64_t> out = xs.at(0);
  for (size_t i = 1; i < xs.size(); ++i) {
    const std::vector<int64_t>& d = xs[i];
    if (d.size() != out.size()) {
      throw Error("X[" + std::to_string(i) + "] has rank " + std::to_string(d.size()) + ", X[0] has " +
                  std::to_string(out.size()));
    }
    for (size_t k = 0; k < d.size(); ++k) {
      if (k != axis && d[k] != out[k]) {
        throw Error("X[" + std::to_string(i) + "] " + DimsString(d) + " differs from X[0] " + DimsString(xs[0]) +
                    " outside axis " + std::to_string(axis));
      }
    }
    out[axis] += d[axis];
  }
  return out;
}

// split's shape contract: the sizes along `axis` (normalized) of the `outputs` pieces of a
// tensor of dims `d`: `sections` if given, else `num` (or, when 0, `outputs`) equal pieces.
inline std::vector<int64_t> SplitSections(const std::vector<int64_t>& d, size_t axis, std::vector<int64_t> sections,
                                          int64_t num, size_t outputs) {
  if (sections.empty()) {
    const int64_t parts = num > 0 ? num : static_cast<int64_t>(outputs);
    if (parts == 0 || d[axis] % parts != 0) {
      throw Error("cannot split dimension " + std::to_string(axis) + " of size " + std::to_string(d[axis]) + " into " +
                  std::to_string(parts) + " equal parts");
    }
    sections.assign(static_cast<size_t>(parts), d[axis] / parts);
  }
  // One section of -1 takes what the others leave, as Paddle's split does.
  int64_t total = 0, unknown = -1;
  for (size_t k = 0; k < sections.size(); ++k) {
    if (sections[k] == -1 && unknown < 0) unknown = static_cast<int64_t>(k);
    else total += sections[k];
  }
  if (unknown >= 0 && total <= d[axis]) {
    sections[static_cast<size_t>(unknown)] = d[axis] - total;
    total = d[axis];
  }
  if (sections.size() != outputs || total != d[axis]) {
    throw Error("sections " + DimsString(sections) + " must list one size per output (" + std::to_string(outputs) +
                ") and add up to " + std::to_string(d[axis]));
  }
  return sections;
}

// cross_entropy's shape contract, for the CPU and CUDA kernels alike: X [..., D] holds
// probabilities, Label holds one class per row (hard) or is shaped like X (soft), and Y
// is [..., 1] (or [...] for a hard Label of rank one less than X's, as Paddle shapes it).
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
  // Y is [..., 1], or without that 1 when a hard Label is (Paddle's shape: Y is Label's).
  if (soft_label || label.size() == x.size()) s.out_dims.push_back(1);
  if (soft_label && label != x) {
    throw Error("soft Label must be shaped like X " + DimsString(x) + ", got " + DimsString(label));
  }
  if (!soft_label && Product(label, 0, label.size()) != s.rows) {
    throw Error("Label must hold one class index per row of X (" + std::to_string(s.rows) + "), got " +
                DimsString(label));
  }
  return s;
}

// The values of an int32 or int64 CPU tensor as int64: a shape, ids, bounds or a seed given
// as a tensor. `what` names it in the error for another dtype.
inline std::vector<int64_t> IntsOf(Tensor t, const char* what) {
  std::vector<int64_t> v;
  VisitDataType<int32_t, int64_t>(t.dtype(), what, [&](auto type) {
    const auto* p = t.data<decltype(type)>();
    v = std::vector<int64_t>(p, p + t.numel());
  });
  return v;
}

// The value of a one-element CPU tensor of any numeric dtype, as a double: a scale, a
// bound or a fill value given as a tensor. `what` names it in an error.
inline double ScalarOf(Tensor t, const char* what) {
  if (t.numel() != 1) throw Error(std::string(what) + " must hold one value, got " + DimsString(t.dims()));
  double v = 0;
  VisitDataType<float, double, int32_t, int64_t>(
      t.dtype(), what, [&](auto type) { v = static_cast<double>(*t.data<decltype(type)>()); });
  return v;
}

// Paddle 2.x ops take some attributes as tensors instead (ShapeTensor, AxesTensor, ...),
// the tensor winning when given. IntsFromInputs: the ints of the 1-D input `tensor`, else
// of the input `list` (one 1-element tensor each), else the attribute `attr`; a null name
// is a way the op does not have. ScalarFromInput: the value of the one-element input
// `tensor` when given, else attribute `attr` read as A (its declared type: a FLOAT
// attribute reads as float, as Paddle's kernels read it, whatever T is).
inline std::vector<int64_t> IntsFromInputs(KernelContext& ctx, const char* tensor, const char* list, const char* attr) {
  if (tensor != nullptr && ctx.HasInput(tensor)) return IntsOf(ctx.Input(tensor), tensor);
  if (list != nullptr && ctx.HasInput(list)) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < ctx.op().InputCount(list); ++i) {
      const std::vector<int64_t> one = IntsOf(ctx.Input(list, i), list);
      v.insert(v.end(), one.begin(), one.end());
    }
    return v;
  }
  return ctx.Attr<std::vector<int64_t>>(attr);
}
// The *_batch_size_like ops' Out shape: attribute `shape` with its dim output_dim_idx
// replaced by Input's dim input_dim_idx (the batch size).
inline std::vector<int64_t> BatchSizeLikeShape(KernelContext& ctx) {
  std::vector<int64_t> shape = ctx.Attr<std::vector<int64_t>>("shape");
  const std::vector<int64_t> in = ctx.Input("Input").dims();
  const size_t from = NormalizeAxis(ctx.Attr<int64_t>("input_dim_idx"), in.size(), "input_dim_idx");
  const size_t to = NormalizeAxis(ctx.Attr<int64_t>("output_dim_idx"), shape.size(), "output_dim_idx");
  shape[to] = in[from];
  return shape;
}
template <class T, class A = T> T ScalarFromInput(KernelContext& ctx, const char* tensor, const char* attr) {
  if (ctx.HasInput(tensor)) return static_cast<T>(ScalarOf(ctx.Input(tensor), tensor));
  return static_cast<T>(ctx.Attr<A>(attr));
}

// Whether a 2-D layout attribute (`attr`: data_format, data_layout) says NHWC; NCHW and
// AnyLayout read as NCHW, anything else is an error naming it.
inline bool IsNhwc(const std::string& layout, const char* attr) {
  if (layout != "NCHW" && layout != "NHWC" && layout != "AnyLayout") {
    throw Error(std::string(attr) + " '" + layout + "' is neither NCHW nor NHWC");
  }
  return layout == "NHWC";
}

// Paddings given as [h, w] or [top, bottom, left, right], as [top, bottom, left, right].
inline std::vector<int64_t> FourPaddings(std::vector<int64_t> pad) {
  if (pad.size() == 2) pad = {pad[0], pad[0], pad[1], pad[1]};
  if (pad.size() != 4) throw Error("paddings " + DimsString(pad) + " must have 2 or 4 values");
  return pad;
}

// padding_algorithm SAME along a dim of `in` for a (dilated) kernel spanning `k` and stride
// `s` (>= 1): the padding before and after that makes the output ceil(in / s) long, the
// odd one after.
inline std::pair<int64_t, int64_t> SamePadding(int64_t in, int64_t k, int64_t s) {
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
  return {total / 2, total - total / 2};
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SHAPE_H_
