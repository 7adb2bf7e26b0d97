// plugins/math/index_map.h — walking a tensor whose every element comes from one element
// of another of the same rank (or from none): slice, the expand family, padding, flip and
// roll.
#ifndef RILL_PLUGINS_MATH_INDEX_MAP_H_
#define RILL_PLUGINS_MATH_INDEX_MAP_H_

#include <cstdint>
#include <vector>

#include "shape.h"

namespace rill::math {

// Calls fn(out_index, x_index) for each element of a tensor of out_dims, in row-major
// order, where x_index is the element of a tensor of x_dims (the same rank) it comes
// from: along each dim k, Out's position i reads X's position source(k, i), or none when
// that is negative (then x_index is -1).
template <class Source, class F>
void ForEachMapped(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims, Source source, F fn) {
  const size_t rank = out_dims.size();
  const int64_t n = Product(out_dims, 0, rank);
  std::vector<int64_t> index(rank, 0), strides(rank, 1);
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * x_dims[k];
  for (int64_t o = 0; o < n; ++o) {
    int64_t from = 0;
    for (size_t k = 0; k < rank && from >= 0; ++k) {
      const int64_t s = source(k, index[k]);
      from = s < 0 ? -1 : from + s * strides[k];
    }
    fn(o, from);
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INDEX_MAP_H_
