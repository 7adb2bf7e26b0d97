// plugins/math/index_map.h — walking a tensor whose every element comes from one element
// of another of the same rank (or from none): slice, crop, padding, flip and roll.
//
// The mapping is given per dim: along dim k, Out's position i reads X's position
// source(k, i), or none when that is negative. The walks below read `source` once per
// position of each dim (into tables), not once per element, and visit Out's rows in
// row-major order, or (ParallelForEachMappedRun) ranges of them on the passes' team.
#ifndef RILL_PLUGINS_MATH_INDEX_MAP_H_
#define RILL_PLUGINS_MATH_INDEX_MAP_H_

#include <cstdint>
#include <vector>

#include "parallel_for.h"
#include "shape.h"

namespace rill::math {

// Out's runs along its innermost dim that read consecutive elements of X, planned once
// (tables per dim) and walked over any range of Out's rows, so that a pass can split its
// rows across the passes' team (each row's runs write only that row of Out).
class MappedRuns {
 public:
  // Out and X have the same rank, X's dims x_dims; source(k, i) as above.
  template <class Source>
  MappedRuns(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source)
      : dims_(out_dims), rank_(out_dims.size()), numel_(Product(out_dims, 0, out_dims.size())) {
    if (numel_ == 0 || rank_ == 0) return;
    std::vector<int64_t> strides(rank_, 1);  // X's
    for (size_t k = rank_; k-- > 1;) strides[k - 1] = strides[k] * x_dims[k];
    offset_.resize(rank_ - 1);
    for (size_t k = 0; k + 1 < rank_; ++k) {
      offset_[k].resize(static_cast<size_t>(out_dims[k]));
      for (int64_t i = 0; i < out_dims[k]; ++i) {
        const int64_t s = source(k, i);
        offset_[k][static_cast<size_t>(i)] = s < 0 ? -1 : s * strides[k];
      }
    }
    const int64_t width = out_dims.back();
    for (int64_t i = 0; i < width; ++i) {
      const int64_t s = source(rank_ - 1, i);
      const bool extends =
          !spans_.empty() &&
          (s < 0 ? spans_.back().from < 0 : spans_.back().from >= 0 && s == spans_.back().from + spans_.back().length);
      if (extends) {
        ++spans_.back().length;
      } else {
        spans_.push_back(Span{i, 1, s});
      }
    }
  }

  // Out's rows: runs along its innermost dim (a scalar Out is one row of one element).
  int64_t rows() const {
    if (numel_ == 0) return 0;
    return rank_ == 0 ? 1 : numel_ / dims_.back();
  }

  // Calls run(out_index, x_index, length) for each run of rows [begin, end), in order.
  template <class Run> void Walk(int64_t begin, int64_t end, Run run) const {
    if (begin >= end) return;
    if (rank_ == 0) return run(int64_t{0}, int64_t{0}, int64_t{1});
    const int64_t width = dims_.back();
    // The outer dims by odometer from row `begin`, the X offset of the current row kept as a
    // sum per level: base[k] is the X offset of dims < k (-1: none).
    std::vector<int64_t> idx(rank_ - 1, 0), base(rank_, 0);
    for (size_t k = rank_ - 1, r = static_cast<size_t>(begin); k-- > 0;) {
      idx[k] = static_cast<int64_t>(r % static_cast<size_t>(dims_[k]));
      r /= static_cast<size_t>(dims_[k]);
    }
    const auto set_base = [&](size_t from_level) {  // base[j + 1] for j >= from_level, from idx
      for (size_t j = from_level; j + 1 < rank_; ++j) {
        const int64_t off = offset_[j][static_cast<size_t>(idx[j])];
        base[j + 1] = base[j] < 0 || off < 0 ? -1 : base[j] + off;
      }
    };
    set_base(0);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row * width, b = base[rank_ - 1];
      for (const Span& s : spans_) run(o + s.begin, b < 0 || s.from < 0 ? int64_t{-1} : b + s.from, s.length);
      for (size_t k = rank_ - 1; k-- > 0;) {
        if (++idx[k] < dims_[k]) {
          set_base(k);
          break;
        }
        idx[k] = 0;
      }
    }
  }

 private:
  struct Span {  // a run of the innermost dim: first position, length, first X index or -1
    int64_t begin, length, from;
  };
  std::vector<int64_t> dims_;
  size_t rank_;
  int64_t numel_;
  std::vector<std::vector<int64_t>> offset_;  // per outer dim and position: X offset, -1 for none
  std::vector<Span> spans_;
};

// Calls run(out_index, x_index, length) for each run of Out's elements along its innermost
// dim that read consecutive elements of X (x_index .. x_index + length - 1), or none of X
// (x_index -1): a slice's rows are one run each, a padded row three. Out and X have the
// same rank, X's dims x_dims.
template <class Source, class Run>
void ForEachMappedRun(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source,
                      Run run) {
  const MappedRuns runs(out_dims, x_dims, source);
  runs.Walk(0, runs.rows(), run);
}

// The same with Out's rows split across the passes' team (parallel_for.h), for a pass
// moving `bytes`: run is called concurrently for different rows, and must write nothing
// another row's runs write.
template <class Source, class Run>
void ParallelForEachMappedRun(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source,
                              double bytes, Run run) {
  const MappedRuns runs(out_dims, x_dims, source);
  ParallelFor(runs.rows(), bytes, [&](int64_t, int64_t begin, int64_t end) { runs.Walk(begin, end, run); });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INDEX_MAP_H_
