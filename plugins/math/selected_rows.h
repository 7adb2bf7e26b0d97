// plugins/math/selected_rows.h — SelectedRows values merged or spread out, for the kernels
// that take them (sum, the optimizers), the value tensor of an output that holds them, and
// the gradient of a table only some of whose rows get one.
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

// The gradient of a [height, width] table (a weight whose rows a kernel reads by id: nce's
// sampled classes, hsigmoid's path nodes) that only the rows `touched` receive: a dense
// tensor, zeros elsewhere; or, sparse (Paddle's is_sparse), SelectedRows of each touched row
// once, ascending, so an optimizer updates those rows alone. Row(id) is where id's gradient
// is added up; ids must be among `touched`.
template <class T> class TableGradient {
 public:
  TableGradient(Variable out, std::vector<int64_t> touched, int64_t height, int64_t width, bool sparse)
      : width_(width), sparse_(sparse) {
    int64_t rows = height;
    if (sparse_) {
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      rows_ = std::move(touched);
      rows = static_cast<int64_t>(rows_.size());
    }
    Tensor value = sparse_ ? out.SetSelectedRows(rows_.data(), rows_.size(), height) : out.tensor();
    data_ = value.Allocate<T>({rows, width});
    std::fill(data_, data_ + rows * width, T(0));
  }
  T* Row(int64_t id) {
    if (!sparse_) return data_ + id * width_;
    return data_ + (std::lower_bound(rows_.begin(), rows_.end(), id) - rows_.begin()) * width_;
  }

 private:
  const int64_t width_;
  const bool sparse_;
  std::vector<int64_t> rows_;
  T* data_ = nullptr;
};

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SELECTED_ROWS_H_
