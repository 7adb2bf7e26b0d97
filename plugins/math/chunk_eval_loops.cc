// chunk_eval's count (chunk_eval_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "chunk_eval_loops.h"

#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(RILL_MATH_ISA_TAG)
#error "chunk_eval_loops.cc is compiled by rill_math_isa_objects (CMakeLists.txt), once per set"
#endif

namespace rill::math {
namespace {

// Whether every tag lies in 0 .. r.outside_tag (a negative one is a large unsigned one).
bool InRange(const ChunkRules& r, const int64_t* found, const int64_t* truth, int64_t n) {
  const auto last = static_cast<uint64_t>(r.outside_tag);
  uint64_t bad = 0;
  for (int64_t k = 0; k < n; ++k) {
    bad |= (static_cast<uint64_t>(found[k]) > last) | (static_cast<uint64_t>(truth[k]) > last);
  }
  return bad == 0;
}

// The walk over both lists, a position at a time, bits(prev, tag) giving PairBits.
template <class Bits>
void Walk(Bits bits, const ChunkRules& r, const int64_t* found, const int64_t* truth, int64_t n, ChunkCounts& c) {
  // The counts in locals, not through c: a store through c may be a store to the tags, as
  // far as the compiler knows, and would be made at every position.
  int64_t prev_found = r.outside_tag, prev_true = r.outside_tag, found_chunks = 0, true_chunks = 0, correct = 0;
  int candidate = 0;  // whether the open found and true chunks began together, alike
  for (int64_t k = 0; k < n; ++k) {
    const int f = bits(prev_found, found[k]), t = bits(prev_true, truth[k]);
    correct += candidate & f & t & ChunkRules::kEnds;
    // candidate goes stale when one chunk ends alone, but is only read where both are
    // open, which takes a begin since, which sets it anew.
    const int alike =
        ((f & t & ChunkRules::kCountedBegins) != 0) & ((found[k] >> r.type_shift) == (truth[k] >> r.type_shift));
    candidate = (candidate & (((f | t) & ChunkRules::kBegins) == 0)) | alike;
    found_chunks += (f & ChunkRules::kCountedBegins) != 0;
    true_chunks += (t & ChunkRules::kCountedBegins) != 0;
    prev_found = found[k];
    prev_true = truth[k];
  }
  correct += candidate & ((prev_found >> r.type_shift) != r.outside) & ((prev_true >> r.type_shift) != r.outside);
  c.found += found_chunks;
  c.expected += true_chunks;
  c.correct += correct;
}

#if defined(__AVX512F__)
// The count by words of 64 positions (chunk_eval_loops.h), the range checked on the way;
// needs r.outside < 64 (the counted types as bits). What each position's tag is (outside,
// of another type than the tag before, its position's bits, of a counted type) is found
// eight tags a vector, by compares whose masks are stored a byte each; PairBits is then
// worked out on the words, 64 positions an operation.
class WordCounter {
 public:
  explicit WordCounter(const ChunkRules& r)
      : one_(_mm512_set1_epi64(1)),
        pos0_(_mm512_set1_epi64(r.position_mask & 1)),
        pos1_(_mm512_set1_epi64(r.position_mask & 2)),
        outside_(_mm512_set1_epi64(r.outside)),
        last_(_mm512_set1_epi64(r.outside_tag)),
        counted_(_mm512_set1_epi64(static_cast<long long>(r.counted_types))),
        shift_(_mm_cvtsi64_si128(r.type_shift)),
        r_(r) {}

  bool Count(const int64_t* found, const int64_t* truth, int64_t n, ChunkCounts& c) const {
    // The tag before position 0 is outside_tag: outside, at position 0.
    Side f{_mm512_set1_epi64(r_.outside), 1, 0, 0}, t = f;
    uint64_t carry = 0;  // candidate at the position before the block
    __mmask8 bad = 0;
    int64_t found_chunks = 0, true_chunks = 0, correct = 0;
    for (int64_t block = 0; block < n; block += 64) {
      Bytes fb, tb;
      uint8_t alike[8] = {};
      for (int v = 0; v < 8 && block + 8 * v < n; ++v) {
        const int64_t k = block + 8 * v, left = n - k;
        const auto valid = static_cast<__mmask8>(left >= 8 ? 0xff : (1u << left) - 1);
        const __m512i ft = _mm512_maskz_loadu_epi64(valid, found + k), tt = _mm512_maskz_loadu_epi64(valid, truth + k);
        bad = _kor_mask8(bad, _mm512_mask_cmpgt_epu64_mask(valid, _mm512_max_epu64(ft, tt), last_));
        const __m512i found_type = Tag(ft, valid, v, f, fb), true_type = Tag(tt, valid, v, t, tb);
        _store_mask8(&alike[v], _mm512_mask_cmpeq_epi64_mask(valid, found_type, true_type));
      }
      const uint64_t valid = n - block >= 64 ? ~uint64_t{0} : (uint64_t{1} << (n - block)) - 1;
      const Chunks a = Pairs(fb, valid, f), b = Pairs(tb, valid, t);
      found_chunks += __builtin_popcountll(a.counted);
      true_chunks += __builtin_popcountll(b.counted);
      const uint64_t both_end = a.ends & b.ends, begins_alike = a.counted & b.counted & Word(alike);
      const uint64_t no_begin = ~(a.begins | b.begins);
      // candidate_k = alike_k | (no_begin_k & candidate_k-1): the carries of (alike |
      // no_begin) + alike (alike and no_begin never share a bit: alike takes a begin). Sum
      // bit k is no_begin_k ^ candidate_k-1, so undoing no_begin leaves the candidate before
      // each position.
      const unsigned __int128 sum = static_cast<unsigned __int128>(begins_alike | no_begin) + begins_alike +
                                    static_cast<unsigned __int128>(carry);
      correct += __builtin_popcountll((static_cast<uint64_t>(sum) ^ no_begin) & both_end);
      carry = static_cast<uint64_t>(sum >> 64);
    }
    if (bad != 0) return false;
    if (n > 0) {
      correct += static_cast<int64_t>(carry) & ((found[n - 1] >> r_.type_shift) != r_.outside) &
                 ((truth[n - 1] >> r_.type_shift) != r_.outside);
    }
    c.found += found_chunks;
    c.expected += true_chunks;
    c.correct += correct;
    return true;
  }

 private:
  // One list's tags, a bit a position, eight positions a byte: outside, of another type
  // than the tag before, bit 0 and bit 1 of the position (0 where tag_types has no such
  // bit), of a counted type. 0 past n.
  struct Bytes {
    uint8_t out[8] = {}, differs[8] = {}, pos0[8] = {}, pos1[8] = {}, counted[8] = {};
  };
  // One list's state from block to block: the types of the last eight tags, and what the
  // last tag was (outside, its position's bits).
  struct Side {
    __m512i types;
    uint64_t out, pos0, pos1;
  };
  struct Chunks {
    uint64_t ends, begins, counted;
  };

  static uint64_t Word(const uint8_t (&bytes)[8]) {
    uint64_t w;
    std::memcpy(&w, bytes, 8);  // byte v's bit j is position 8 v + j: x86 is little-endian
    return w;
  }

  // Stores what the eight tags `tags` (vector v of the block) are into b; returns their types.
  __m512i Tag(__m512i tags, __mmask8 valid, int v, Side& s, Bytes& b) const {
    const __m512i type = _mm512_srl_epi64(tags, shift_);
    _store_mask8(&b.out[v], _mm512_mask_cmpeq_epi64_mask(valid, type, outside_));
    _store_mask8(&b.differs[v], _mm512_mask_cmpneq_epi64_mask(valid, type, _mm512_alignr_epi64(type, s.types, 7)));
    _store_mask8(&b.pos0[v], _mm512_mask_test_epi64_mask(valid, tags, pos0_));
    _store_mask8(&b.pos1[v], _mm512_mask_test_epi64_mask(valid, tags, pos1_));
    _store_mask8(&b.counted[v], _mm512_mask_test_epi64_mask(valid, _mm512_srlv_epi64(counted_, type), one_));
    s.types = type;
    return type;
  }

  // PairBits of every position of the block against the one before, as words.
  Chunks Pairs(const Bytes& b, uint64_t valid, Side& s) const {
    const uint64_t out = Word(b.out), differs = Word(b.differs), pos0 = Word(b.pos0), pos1 = Word(b.pos1);
    const uint64_t prev_out = (out << 1) | s.out, prev0 = (pos0 << 1) | s.pos0, prev1 = (pos1 << 1) | s.pos1;
    s.out = out >> 63;
    s.pos0 = pos0 >> 63;
    s.pos1 = pos1 >> 63;
    // Where each position is p, and the one before pp (a tag's position is below tag_types).
    const uint64_t at[4] = {~pos0 & ~pos1, pos0 & ~pos1, ~pos0 & pos1, pos0 & pos1};
    const uint64_t before[4] = {~prev0 & ~prev1, prev0 & ~prev1, ~prev0 & prev1, prev0 & prev1};
    uint64_t ends_pair = 0, begins_pair = 0;
    for (int64_t pp = 0; pp < r_.tag_types; ++pp) {
      for (int64_t p = 0; p < r_.tag_types; ++p) {
        const int64_t bit = pp * r_.tag_types + p;
        const uint64_t both = before[pp] & at[p];
        ends_pair |= both & (0 - static_cast<uint64_t>((r_.ends >> bit) & 1));
        begins_pair |= both & (0 - static_cast<uint64_t>((r_.begins >> bit) & 1));
      }
    }
    const uint64_t begins = ~out & (prev_out | differs | begins_pair) & valid;
    return {~prev_out & (out | differs | ends_pair) & valid, begins, begins & Word(b.counted)};
  }

  __m512i one_, pos0_, pos1_, outside_, last_, counted_;  // pos0_, pos1_: the position's bits, where it has them
  __m128i shift_;
  const ChunkRules& r_;
};
#endif

}  // namespace

template <class Set>
bool CountChunks(const ChunkRules& r, const int64_t* found, const int64_t* truth, int64_t n, ChunkCounts& c) {
#if defined(__AVX512F__)
  if (r.outside < 64) return WordCounter(r).Count(found, truth, n, c);
#endif
  if (!InRange(r, found, truth, n)) return false;
  if (r.pairs.empty()) {
    Walk([&r](int64_t prev, int64_t tag) { return PairBits(r, prev, tag); }, r, found, truth, n, c);
  } else {
    const int64_t tags = r.outside_tag + 1;
    const uint8_t* pairs = r.pairs.data();
    Walk([pairs, tags](int64_t prev, int64_t tag) { return int{pairs[prev * tags + tag]}; }, r, found, truth, n, c);
  }
  return true;
}

template bool CountChunks<RILL_MATH_ISA_TAG>(const ChunkRules&, const int64_t*, const int64_t*, int64_t, ChunkCounts&);

}  // namespace rill::math
