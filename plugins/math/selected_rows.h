// plugins/math/selected_rows.h — SelectedRows values merged or spread out, for the kernels
// that take them (sum, the optimizers), and the value tensor of an output that holds them.
//
// SelectedRows hold rows of a [height, width...] tensor: row numbers (repeats allowed, in
// any order) and one value row of `width` elements per number. A repeated row means the
// sum of its value rows, which both helpers below compute.
#ifndef RILL_PLUGINS_MATH_SELECTED_ROWS_H_
#define RILL_PLUGINS_MATH_SELECTED_ROWS_H_

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels.h"

namespace rill::math {

// Each row once, in ascending order, with its value rows summed.
template <class T> struct MergedRows {
  std::vector<int64_t> rows;
  std::vector<T> values;  // rows.size() rows of `width`
};

template <class T> MergedRows<T> MergeRows(const int64_t* rows, size_t count, const T* values, int64_t width) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });
  MergedRows<T> out;
  for (size_t i : order) {
    if (out.rows.empty() || out.rows.back() != rows[i]) {
      out.rows.push_back(rows[i]);
      out.values.resize(out.values.size() + static_cast<size_t>(width), T(0));
    }
    VecMap<T>(out.values.data() + out.values.size() - static_cast<size_t>(width), width) +=
        ConstVecMap<T>(values + static_cast<int64_t>(i) * width, width);
  }
  return out;
}

// The rows as a dense [height, width] array: zeros where no row is given. Rows must lie in
// [0, height).
template <class T>
std::vector<T> RowsIntoZeros(const int64_t* rows, size_t count, const T* values, int64_t width, int64_t height) {
  std::vector<T> dense(static_cast<size_t>(height * width), T(0));
  for (size_t i = 0; i < count; ++i) {
    VecMap<T>(dense.data() + rows[i] * width, width) += ConstVecMap<T>(values + static_cast<int64_t>(i) * width, width);
  }
  return dense;
}

// The tensor output `slot` is written into: the output's own, or, when the variable
// already holds SelectedRows (Paddle's fill_constant, uniform_random and scale write such a
// variable's value), its value tensor, its rows and height kept.
inline Tensor OutputValue(KernelContext& ctx, SlotRef slot) {
  Variable out = ctx.OutputVar(slot);
  if (!out.IsSelectedRows()) return ctx.Output(slot);
  const Variable::SelectedRows sr = out.selected_rows();
  const std::vector<int64_t> rows(sr.rows, sr.rows + sr.count);
  return out.SetSelectedRows(rows.data(), rows.size(), sr.height);
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SELECTED_ROWS_H_
