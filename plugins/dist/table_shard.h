// table_shard.h — where a row of a distributed lookup table lives (a table row-sharded over
// the pservers, Fluid's distributed lookup table): row r of a table sharded over P pservers
// is row r / P of the shard on pserver r % P, so shard p holds ShardHeight(H, p, P) of a
// table's H rows. `rill transpile` (core/program/transpiler.cc) shapes the shards by the
// same rule; prefetch asks for rows and send splits gradients by it.
#ifndef RILL_DIST_TABLE_SHARD_H_
#define RILL_DIST_TABLE_SHARD_H_

#include <cstddef>
#include <cstdint>

namespace rill::dist {

// REQUIRES: row >= 0, shards >= 1.
inline size_t ShardOf(int64_t row, size_t shards) { return static_cast<size_t>(row) % shards; }
inline int64_t RowInShard(int64_t row, size_t shards) { return row / static_cast<int64_t>(shards); }
inline int64_t TableRow(int64_t row_in_shard, size_t shard, size_t shards) {
  return row_in_shard * static_cast<int64_t>(shards) + static_cast<int64_t>(shard);
}
inline int64_t ShardHeight(int64_t height, size_t shard, size_t shards) {
  const auto p = static_cast<int64_t>(shard), n = static_cast<int64_t>(shards);
  return (height - p + n - 1) / n;
}

}  // namespace rill::dist

#endif  // RILL_DIST_TABLE_SHARD_H_
