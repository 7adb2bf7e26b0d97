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
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels.h"
#include "parallel_for.h"

namespace rill::math {

// The input rows grouped by row number: group g is row rows[g] (ascending, each once), and
// order[starts[g]] .. order[starts[g + 1] - 1] are the positions of its value rows in the
// input, in input order (a stable sort's), so that a sum over a group adds in a fixed order.
struct RowGroups {
  std::vector<int64_t> rows;
  std::vector<size_t> starts;  // rows.size() + 1 offsets into order
  std::vector<size_t> order;
};

// rows[0, count) grouped, in time linear in count (a radix sort on the span of the row
// numbers), whatever the row numbers are.
RowGroups GroupRows(const int64_t* rows, size_t count);

// out[g * width, (g + 1) * width) = 0 + the value rows of group g added in order, the groups
// split across the passes' team (each group's sum is one thread's, so the bits do not
// depend on the budget).
template <class T> void SumGroups(const RowGroups& groups, const T* values, int64_t width, T* out) {
  const int64_t n = static_cast<int64_t>(groups.rows.size());
  const double bytes = static_cast<double>(sizeof(T)) * static_cast<double>(width) *
                       static_cast<double>(groups.order.size() + groups.rows.size());
  ParallelFor(n, bytes, [&groups, values, width, out](int64_t, int64_t begin, int64_t end) {
    const size_t* order = groups.order.data();
    const size_t* starts = groups.starts.data();
    for (int64_t g = begin; g < end; ++g) {
      VecMap<T> sum(out + g * width, width);
      sum.setZero();
      for (size_t j = starts[g]; j < starts[g + 1]; ++j) {
        sum += ConstVecMap<T>(values + static_cast<int64_t>(order[j]) * width, width);
      }
    }
  });
}

// Each row once, in ascending order, with its value rows summed (SumGroups).
template <class T> struct MergedRows {
  std::vector<int64_t> rows;
  std::vector<T> values;  // rows.size() rows of `width`
};

template <class T> MergedRows<T> MergeRows(const int64_t* rows, size_t count, const T* values, int64_t width) {
  RowGroups groups = GroupRows(rows, count);
  MergedRows<T> out;
  out.values.resize(groups.rows.size() * static_cast<size_t>(width));
  SumGroups(groups, values, width, out.values.data());
  out.rows = std::move(groups.rows);
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
