// plugins/math/index_map.h — walking a tensor whose every element comes from one element
// of another of the same rank (or from none): slice, crop, the expand family's gradient,
// padding, flip and roll.
//
// The mapping is given per dim: along dim k, Out's position i reads X's position
// source(k, i), or none when that is negative. Both walks below read `source` once per
// position of each dim (into tables), not once per element, and visit Out in row-major
// order.
#ifndef RILL_PLUGINS_MATH_INDEX_MAP_H_
#define RILL_PLUGINS_MATH_INDEX_MAP_H_

#include <cstdint>
#include <vector>

#include "shape.h"

namespace rill::math {

// Calls run(out_index, x_index, length) for each run of Out's elements along its innermost
// dim that read consecutive elements of X (x_index .. x_index + length - 1), or none of X
// (x_index -1): a slice's rows are one run each, a padded row three. Out and X have the
// same rank, X's dims x_dims.
template <class Source, class Run>
void ForEachMappedRun(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source,
                      Run run) {
  const size_t rank = out_dims.size();
  const int64_t n = Product(out_dims, 0, rank);
  if (n == 0) return;
  if (rank == 0) return run(int64_t{0}, int64_t{0}, int64_t{1});
  std::vector<int64_t> strides(rank, 1);  // X's
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * x_dims[k];
  // Each outer dim's X offset per position (-1: none).
  std::vector<std::vector<int64_t>> offset(rank - 1);
  for (size_t k = 0; k + 1 < rank; ++k) {
    offset[k].resize(static_cast<size_t>(out_dims[k]));
    for (int64_t i = 0; i < out_dims[k]; ++i) {
      const int64_t s = source(k, i);
      offset[k][static_cast<size_t>(i)] = s < 0 ? -1 : s * strides[k];
    }
  }
  // The innermost dim as runs: {first position, length, first X index or -1}.
  struct Span {
    int64_t begin, length, from;
  };
  std::vector<Span> spans;
  const int64_t width = out_dims.back();
  for (int64_t i = 0; i < width; ++i) {
    const int64_t s = source(rank - 1, i);
    const bool extends = !spans.empty() && (s < 0 ? spans.back().from < 0
                                                  : spans.back().from >= 0 && s == spans.back().from + spans.back().length);
    if (extends) {
      ++spans.back().length;
    } else {
      spans.push_back(Span{i, 1, s});
    }
  }
  // The outer dims by odometer, the X offset of the current row kept as a sum per level.
  std::vector<int64_t> idx(rank - 1, 0), base(rank, 0);  // base[k]: X offset of dims < k (-1: none)
  const auto set_base = [&](size_t from_level) {  // base[j + 1] for j >= from_level, from idx
    for (size_t j = from_level; j + 1 < rank; ++j) {
      const int64_t off = offset[j][static_cast<size_t>(idx[j])];
      base[j + 1] = base[j] < 0 || off < 0 ? -1 : base[j] + off;
    }
  };
  set_base(0);
  for (int64_t o = 0; o < n; o += width) {
    const int64_t b = base[rank - 1];
    for (const Span& s : spans) run(o + s.begin, b < 0 || s.from < 0 ? int64_t{-1} : b + s.from, s.length);
    for (size_t k = rank - 1; k-- > 0;) {
      if (++idx[k] < out_dims[k]) {
        set_base(k);
        break;
      }
      idx[k] = 0;
    }
  }
}

// Calls fn(out_index, x_index) for each element of Out, in row-major order, x_index -1
// for an element that reads none of X.
template <class Source, class F>
void ForEachMapped(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source, F fn) {
  ForEachMappedRun(out_dims, x_dims, source, [&fn](int64_t o, int64_t from, int64_t length) {
    for (int64_t k = 0; k < length; ++k) fn(o + k, from < 0 ? int64_t{-1} : from + k);
  });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INDEX_MAP_H_
