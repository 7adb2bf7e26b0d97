// GroupRows: an LSD radix sort of the row numbers, carrying each one's input position.
// Each pass is stable, so positions with one row number keep their input order, which is
// what a stable comparison sort gives, in passes over the row numbers' span rather than
// log(count) rounds of comparisons.
#include "selected_rows.h"

#include <algorithm>
#include <utility>

namespace rill::math {
namespace {

// Row numbers as unsigned keys in the same order: the sign bit flipped.
constexpr uint64_t kSignBit = uint64_t{1} << 63;
uint64_t KeyOf(int64_t row) { return static_cast<uint64_t>(row) ^ kSignBit; }
int64_t RowOf(uint64_t key) { return static_cast<int64_t>(key ^ kSignBit); }

// The bits x needs: 0 for 0.
int BitWidth(uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

}  // namespace

RowGroups GroupRows(const int64_t* rows, size_t count) {
  RowGroups groups;
  groups.starts.push_back(0);
  if (count == 0) return groups;
  uint64_t lo = KeyOf(rows[0]), hi = lo;
  for (size_t i = 1; i < count; ++i) {
    lo = std::min(lo, KeyOf(rows[i]));
    hi = std::max(hi, KeyOf(rows[i]));
  }
  // Keys less the smallest, so that the passes cover the span's bits only; digits of about
  // log2(count) bits (4 to 11), so that a pass's buckets cost no more than its elements.
  const int span_bits = BitWidth(hi - lo);
  const int digit_bits = std::clamp(BitWidth(count), 4, 11);
  std::vector<uint64_t> keys(count), next_keys(count);
  std::vector<size_t> order(count), next_order(count);
  for (size_t i = 0; i < count; ++i) {
    keys[i] = KeyOf(rows[i]) - lo;
    order[i] = i;
  }
  std::vector<size_t> bucket(size_t{1} << digit_bits);
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  for (int shift = 0; shift < span_bits; shift += digit_bits) {
    std::fill(bucket.begin(), bucket.end(), size_t{0});
    for (size_t i = 0; i < count; ++i) ++bucket[(keys[i] >> shift) & mask];
    size_t start = 0;
    for (size_t& b : bucket) start += std::exchange(b, start);
    for (size_t i = 0; i < count; ++i) {
      const size_t to = bucket[(keys[i] >> shift) & mask]++;
      next_keys[to] = keys[i];
      next_order[to] = order[i];
    }
    keys.swap(next_keys);
    order.swap(next_order);
  }
  for (size_t j = 0; j < count; ++j) {
    if (j > 0 && keys[j] == keys[j - 1]) continue;
    groups.rows.push_back(RowOf(keys[j] + lo));
    if (j > 0) groups.starts.push_back(j);
  }
  groups.starts.push_back(count);
  groups.order = std::move(order);
  return groups;
}

}  // namespace rill::math
