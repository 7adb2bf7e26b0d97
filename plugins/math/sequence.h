// plugins/math/sequence.h — the sequences a LoD tensor packs, for the sequence ops.
//
// A LoD tensor of R rows holds variable-length sequences: its LoD's last level lists the
// offsets 0 = o[0] <= o[1] <= ... <= o[S] = R, sequence s being rows o[s] .. o[s+1] - 1
// (Fluid's LoDTensor). A level above it groups those sequences the same way.
#ifndef RILL_PLUGINS_MATH_SEQUENCE_H_
#define RILL_PLUGINS_MATH_SEQUENCE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill/sdk.hpp"
#include "shape.h"

namespace rill::math {

// The offsets of `x`'s last LoD level, checked against its rows; throws naming input
// `slot`'s variable (`op`'s) when `x` has no LoD, more than `max_levels` levels, or
// offsets that do not start at 0, decrease, or end elsewhere than at its row count, or
// when a level above the last does not end at the count of sequences below it.
inline std::vector<uint64_t> SequenceOffsets(const OpInfo& op, const char* slot, const Tensor& x, size_t max_levels) {
  const std::string what = "input " + std::string(slot) + " ('" + op.InputName(slot) + "')";
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  if (lod.empty()) throw Error(what + " has no LoD: it must pack sequences (a LoD tensor of level 1 or more)");
  if (lod.size() > max_levels) {
    throw Error(what + " has " + std::to_string(lod.size()) + " LoD levels; at most " + std::to_string(max_levels));
  }
  const uint64_t rows = x.ndim() > 0 ? static_cast<uint64_t>(x.dims()[0]) : 0;
  for (size_t l = 0; l < lod.size(); ++l) {
    const std::vector<uint64_t>& o = lod[l];
    const uint64_t end = l + 1 < lod.size() ? lod[l + 1].size() - 1 : rows;
    bool ok = !o.empty() && o.front() == 0 && o.back() == end;
    for (size_t i = 1; ok && i < o.size(); ++i) ok = o[i] >= o[i - 1];
    if (!ok) {
      std::string list;
      for (size_t i = 0; i < o.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(o[i]);
      if (o.size() > 8) list += ", ...";
      throw Error(what + ": LoD level " + std::to_string(l) + " {" + list + "} must rise from 0 to " +
                  std::to_string(end) + (l + 1 < lod.size() ? " (the sequences of the level below)" : " (its rows)"));
    }
  }
  return lod.back();
}

// Each sequence's rows [begin, end), in order.
using SequenceRanges = std::vector<std::pair<int64_t, int64_t>>;

// The rows of the sequences a LoD level's offsets pack.
inline SequenceRanges RangesOfOffsets(const std::vector<uint64_t>& o) {
  SequenceRanges ranges;
  for (size_t s = 0; s + 1 < o.size(); ++s)
    ranges.emplace_back(static_cast<int64_t>(o[s]), static_cast<int64_t>(o[s + 1]));
  return ranges;
}

// The rows of `count` padded sequences of `padded` rows each (a tensor [count, padded, ...]
// seen as rows), sequence b its first lengths[b]: rows b * padded .. b * padded + lengths[b] - 1.
// Throws naming input `slot` unless it holds `count` int64 lengths within 0 .. padded.
inline SequenceRanges RangesOfPadded(const char* slot, const Tensor& lengths, int64_t count, int64_t padded) {
  if (lengths.dtype() != RILL_INT64 || lengths.numel() != count) {
    throw Error(std::string(slot) + " " + DimsString(lengths.dims()) + " must hold one int64 length for each of the " +
                std::to_string(count) + " padded sequences");
  }
  const int64_t* len = lengths.data<int64_t>();
  SequenceRanges ranges;
  for (int64_t b = 0; b < count; ++b) {
    if (len[b] < 0 || len[b] > padded) {
      throw Error(std::string(slot) + "[" + std::to_string(b) + "] = " + std::to_string(len[b]) + " is outside 0 .. " +
                  std::to_string(padded) + ", the padded length");
    }
    ranges.emplace_back(b * padded, b * padded + len[b]);
  }
  return ranges;
}

using LoD = std::vector<std::vector<uint64_t>>;

// Bytes of one row of `t` (one index of its first dimension); 0 for a tensor of no rows.
inline size_t RowBytes(const Tensor& t) {
  const int64_t rows = t.ndim() > 0 ? t.dims()[0] : 1;
  return rows > 0 ? static_cast<size_t>(t.numel() / rows) * DataTypeSize(t.dtype()) : 0;
}

// One element of a LoD, at level `from` (a sequence of the levels below, or a row when
// `from` is past the last level): its rows [begin, end), and at each level from `from` on
// the lengths of its parts there (lengths[0] its own length at `from`). An op that moves
// whole elements (a step of DynamicRNN, a branch of IfElse) moves these rows and rebuilds
// the LoD from the lengths (OffsetsOf).
struct LodSpan {
  uint64_t begin = 0, end = 0;
  LoD lengths;
};

inline LodSpan SpanOf(const LoD& lod, size_t from, uint64_t element) {
  LodSpan span;
  uint64_t b = element, e = element + 1;
  for (size_t l = from; l < lod.size(); ++l) {
    span.lengths.emplace_back();
    for (uint64_t k = b; k < e; ++k) span.lengths.back().push_back(lod[l][k + 1] - lod[l][k]);
    b = lod[l][b];
    e = lod[l][e];
  }
  span.begin = b;
  span.end = e;
  return span;
}

// Offsets from lengths, level by level.
inline LoD OffsetsOf(const LoD& lengths) {
  LoD lod;
  for (const auto& level : lengths) {
    lod.push_back({0});
    for (uint64_t n : level) lod.back().push_back(lod.back().back() + n);
  }
  return lod;
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_SEQUENCE_H_
