// chunk_eval's count of the chunks of one sequence of found tags against its true tags,
// compiled once per instruction set (isa.h) by chunk_eval_loops.cc.
//
// A tag t encodes a chunk type t >> type_shift and a position in its chunk t & position_mask
// (ChunkScheme). A chunk is open exactly while the last tag's type is not outside (a chunk
// ends before a position only where another begins there or the position is outside; Ends
// and Begins in chunk_eval_loops.cc show it), so whether a chunk ends before position k and
// whether one begins at k are functions of tags k - 1 and k alone: for two tags of one
// chunk type, a table of their positions (at most 4 x 4); otherwise a comparison of types
// (PairBits). A found chunk is correct when a true chunk begins at the same position with
// the same type and the two end together. So a sequence is counted in one pass over both
// lists, without a branch on the tags: a running flag, `candidate`, says whether the open
// found and true chunks began together, alike.
//
// At AVX-512's width, with fewer than 64 chunk types, the tags are narrowed to bytes and
// what each is (outside, of another type than the one before, its position's two bits, of
// a counted type) is found 64 tags a vector, as words of 64 positions, a bit each (a
// vector compare's mask); the pair rules are worked out on
// the words, and `candidate` runs over a word in one addition: candidate_k =
// begins_alike_k | (no_begin_k & candidate_k-1) is the carry out of position k of
// (begins_alike | no_begin) + begins_alike, the carry out of the word going on to the
// next. The counts are integers, the same by either way.
#ifndef RILL_MATH_CHUNK_EVAL_LOOPS_H_
#define RILL_MATH_CHUNK_EVAL_LOOPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "isa.h"

namespace rill::math {

// A scheme's tags: tag_types = 1 << type_shift positions a type, and each position's code
// (begin, inside, end, single), or -1 where the scheme has no such position.
struct ChunkScheme {
  int64_t tag_types = 1, type_shift = 0;
  int64_t begin = -1, inside = -1, end = -1, single = -1;
};

// The rules for a pair of consecutive tags (prev, tag), for a scheme and a count of chunk
// types, as PairBits reads them.
struct ChunkRules {
  // What a pair says, as bits: a chunk ends before tag, one begins at it, and that one counts.
  static constexpr int kEnds = 1, kBegins = 2, kCountedBegins = 4;
  // The most tags (outside included) read through a table of pairs: 4 KiB, in L1.
  static constexpr int64_t kTableTags = 64;

  // `counted`: whether each type 0 .. types - 1 counts. Defined in chunk_eval.cc.
  ChunkRules(const ChunkScheme& scheme, int64_t types, const std::vector<char>& counted);

  int64_t type_shift, position_mask, tag_types;
  int64_t outside, outside_tag;  // the outside type, and its tag (the last valid one)
  // For two tags of one type at positions prev_pos, pos: bit prev_pos * tag_types + pos
  // says whether the chunk of the first ends between them (ends), one begins at the
  // second (begins).
  uint32_t ends = 0, begins = 0;
  std::vector<char> counted;   // per type 0 .. outside; outside's 0
  uint64_t counted_types = 0;  // the same as bits, where outside < 64
  std::vector<uint8_t> pairs;  // PairBits of every (prev, tag), row prev; empty above kTableTags
};

// The bits of the pair (prev, tag), both in 0 .. outside_tag.
inline int PairBits(const ChunkRules& r, int64_t prev, int64_t tag) {
  const int64_t prev_type = prev >> r.type_shift, type = tag >> r.type_shift;
  const int64_t pair = (prev & r.position_mask) * r.tag_types + (tag & r.position_mask);
  const int prev_out = prev_type == r.outside, out = type == r.outside, differs = type != prev_type;
  const int ends = (prev_out ^ 1) & (out | differs | static_cast<int>((r.ends >> pair) & 1));
  const int begins = (out ^ 1) & (prev_out | differs | static_cast<int>((r.begins >> pair) & 1));
  return ends * ChunkRules::kEnds | begins * ChunkRules::kBegins |
         (begins & r.counted[static_cast<size_t>(type)]) * ChunkRules::kCountedBegins;
}

struct ChunkCounts {
  int64_t found = 0, expected = 0, correct = 0;
};

// Adds the chunks of found[0, n) against truth[0, n) to c, and returns true; or returns
// false, adding nothing, where a tag lies outside 0 .. r.outside_tag.
using CountChunksLoop = bool (*)(const ChunkRules& r, const int64_t* found, const int64_t* truth, int64_t n,
                                 ChunkCounts& c);

// Instantiated by chunk_eval_loops.cc for each set's tag.
template <class Set>
bool CountChunks(const ChunkRules& r, const int64_t* found, const int64_t* truth, int64_t n, ChunkCounts& c);

inline CountChunksLoop CountChunksLoopFor() {
  static const CountChunksLoop loop =
      ForMathIsa([](auto set) -> CountChunksLoop { return &CountChunks<decltype(set)>; });
  return loop;
}

}  // namespace rill::math

#endif  // RILL_MATH_CHUNK_EVAL_LOOPS_H_
