// plugins/math/permute.h — moving a tensor's elements to a permutation of its dims
// (transpose2 and its gradient).
//
// Permute(in, out, in_dims, perm, size) writes out, whose dim k is in's dim perm[k], from in
// (elements of `size` bytes; out and in do not overlap). Dims that stay neighbours are
// merged first and size-1 dims dropped. Then, when out's innermost dim is in's innermost
// too, each row of out is one run of in, copied whole; otherwise out's innermost dim and
// the dim that is innermost in `in` form a 2-D transpose, moved in square tiles so that
// both sides touch whole cache lines. Rows or strips of tiles are split across the
// passes' team (parallel_for.h); which thread moves an element changes nothing.
#ifndef RILL_PLUGINS_MATH_PERMUTE_H_
#define RILL_PLUGINS_MATH_PERMUTE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rill::math {

void Permute(const char* in, char* out, const std::vector<int64_t>& in_dims, const std::vector<size_t>& perm,
             size_t size);

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_PERMUTE_H_
