// plugins/math/gather_rows.h — rows copied from where indices say (embedding lookups,
// gather, index_select): Out's row r is the source row its index names, or zeros.
//
// The source is usually a table far larger than the caches (an embedding of millions of
// rows), read at scattered rows: each row's copy waits on memory, not on the copy. So the
// walk asks for the row kPrefetchDistance ahead of the one it copies (software prefetch,
// which the hardware's stride prefetchers cannot do for scattered rows), keeping that many
// misses in flight, and splits Out's rows across the passes' team (parallel_for.h), each
// thread's misses adding to the others'. Rows are independent: the result does not depend
// on the split.
#ifndef RILL_PLUGINS_MATH_GATHER_ROWS_H_
#define RILL_PLUGINS_MATH_GATHER_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "memory_loops.h"
#include "parallel_for.h"

namespace rill::math {

// How many rows ahead of its copy the walk prefetches, and the most bytes of a row it
// prefetches (the start of a longer row; the hardware streams the rest once the copy reads
// it in order).
inline constexpr int64_t kPrefetchDistance = 16;
inline constexpr size_t kPrefetchRowBytes = 1024;

// out[r * row_bytes, (r + 1) * row_bytes) = row_bytes from source(r), or zeros where
// source(r) is null, for r in [0, rows). source must be callable concurrently and its rows
// must not overlap Out.
template <class Source> void GatherRows(char* out, int64_t rows, size_t row_bytes, Source source) {
  const size_t prefetched = std::min(row_bytes, kPrefetchRowBytes);
  const auto prefetch = [&](int64_t r) {
    if (const char* p = source(r)) {
      for (size_t b = 0; b < prefetched; b += 64) __builtin_prefetch(p + b);
    }
  };
  ParallelFor(rows, 2.0 * static_cast<double>(row_bytes) * static_cast<double>(rows),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t r = begin; r < std::min(end, begin + kPrefetchDistance); ++r) prefetch(r);
                for (int64_t r = begin; r < end; ++r) {
                  if (r + kPrefetchDistance < end) prefetch(r + kPrefetchDistance);
                  char* to = out + static_cast<size_t>(r) * row_bytes;
                  if (const char* from = source(r)) {
                    CopyBytes(to, from, row_bytes);
                  } else {
                    std::memset(to, 0, row_bytes);
                  }
                }
              });
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_GATHER_ROWS_H_
