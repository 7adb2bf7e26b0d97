// chunk_eval's count (chunk_eval_loops.h) for one instruction set: CMakeLists.txt compiles
// this file once per set, naming its tag in RILL_MATH_ISA_TAG.
#include "chunk_eval_loops.h"

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
// needs r.outside < 64 (the counted types as bits), which keeps every valid tag below 255
// (the outside tag is at most 63 << 2). A block's 64 tags of each list are narrowed to
// bytes with unsigned saturation (a tag above 254, or a negative one, becomes 255 and fails
// the range check), and what each is (outside, of another type than the tag before, its
// position's bits, of a counted type) is found 64 tags an operation, as a word of bits;
// PairBits is then worked out on the words.
class WordCounter {
 public:
  explicit WordCounter(const ChunkRules& r)
      : type_bits_(_mm512_set1_epi8(static_cast<char>(0xff >> r.type_shift))),
        seven_(_mm512_set1_epi8(7)),
        pos0_(_mm512_set1_epi8(static_cast<char>(r.position_mask & 1))),
        pos1_(_mm512_set1_epi8(static_cast<char>(r.position_mask & 2))),
        outside_(_mm512_set1_epi8(static_cast<char>(r.outside))),
        last_(_mm512_set1_epi8(static_cast<char>(r.outside_tag))),
        counted_(_mm512_set1_epi64(static_cast<long long>(r.counted_types))),
        bit_(_mm512_set1_epi64(0x8040201008040201)),
        shift_(_mm_cvtsi64_si128(r.type_shift)),
        r_(r) {}

  bool Count(const int64_t* found, const int64_t* truth, int64_t n, ChunkCounts& c) const {
    // The tag before position 0 is outside_tag: outside, at position 0.
    Side f{outside_, 1, 0, 0}, t = f;
    uint64_t carry = 0;  // candidate at the position before the block
    __mmask64 bad = 0;
    int64_t found_chunks = 0, true_chunks = 0, correct = 0;
    for (int64_t block = 0; block < n; block += 64) {
      const int64_t left = n - block;
      const __mmask64 valid = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
      const __m512i ft = Narrow(found + block, left), tt = Narrow(truth + block, left);
      bad |= _mm512_mask_cmpgt_epu8_mask(valid, _mm512_max_epu8(ft, tt), last_);
      __m512i found_type, true_type;
      const Chunks a = Pairs(Classify(ft, valid, f, found_type), valid, f);
      const Chunks b = Pairs(Classify(tt, valid, t, true_type), valid, t);
      const uint64_t alike = _mm512_mask_cmpeq_epi8_mask(valid, found_type, true_type);
      found_chunks += __builtin_popcountll(a.counted);
      true_chunks += __builtin_popcountll(b.counted);
      const uint64_t both_end = a.ends & b.ends, begins_alike = a.counted & b.counted & alike;
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
  // One list's tags, a bit a position: outside, of another type than the tag before, bit 0
  // and bit 1 of the position (0 where tag_types has no such bit), of a counted type. 0
  // past n.
  struct Words {
    uint64_t out, differs, pos0, pos1, counted;
  };
  // One list's state from block to block: the types of the last block (byte 63 the last
  // tag's), and what the last tag was (outside, its position's bits).
  struct Side {
    __m512i types;
    uint64_t out, pos0, pos1;
  };
  struct Chunks {
    uint64_t ends, begins, counted;
  };

  // tags[0, min(left, 64)) as bytes, saturated at 255; 0 past left.
  static __m512i Narrow(const int64_t* tags, int64_t left) {
    __m128i eighths[8];
    for (int v = 0; v < 8; ++v) {
      const int64_t here = left - 8 * v;
      const auto valid = static_cast<__mmask8>(here >= 8 ? 0xff : here <= 0 ? 0 : (1u << here) - 1);
      eighths[v] = _mm512_cvtusepi64_epi8(_mm512_maskz_loadu_epi64(valid, tags + 8 * v));
    }
    __m512i out = _mm512_castsi128_si512(_mm_unpacklo_epi64(eighths[0], eighths[1]));
    out = _mm512_inserti32x4(out, _mm_unpacklo_epi64(eighths[2], eighths[3]), 1);
    out = _mm512_inserti32x4(out, _mm_unpacklo_epi64(eighths[4], eighths[5]), 2);
    return _mm512_inserti32x4(out, _mm_unpacklo_epi64(eighths[6], eighths[7]), 3);
  }

  // What the block's 64 tags (bytes) are; stores their types to `type` and keeps them in s.
  Words Classify(__m512i tags, __mmask64 valid, Side& s, __m512i& type) const {
    type = _mm512_and_si512(_mm512_srl_epi16(tags, shift_), type_bits_);
    // Each position's tag before: the types a byte up, the last block's last in byte 0
    // (alignr_epi8 shifts within 16-byte lanes, so each lane takes its byte from the lane
    // below, which alignr_epi64 brings in).
    const __m512i before = _mm512_alignr_epi8(type, _mm512_alignr_epi64(type, s.types, 6), 15);
    // Whether type t counts: bit t & 7 of byte t >> 3 of counted_types, by two lookups.
    const __m512i counted_byte = _mm512_shuffle_epi8(counted_, _mm512_and_si512(_mm512_srli_epi16(type, 3), seven_));
    const __m512i type_bit = _mm512_shuffle_epi8(bit_, _mm512_and_si512(type, seven_));
    s.types = type;
    return {_mm512_mask_cmpeq_epi8_mask(valid, type, outside_), _mm512_mask_cmpneq_epi8_mask(valid, type, before),
            _mm512_mask_test_epi8_mask(valid, tags, pos0_), _mm512_mask_test_epi8_mask(valid, tags, pos1_),
            _mm512_mask_test_epi8_mask(valid, counted_byte, type_bit)};
  }

  // PairBits of every position of the block against the one before, as words.
  Chunks Pairs(const Words& w, uint64_t valid, Side& s) const {
    const uint64_t prev_out = (w.out << 1) | s.out, prev0 = (w.pos0 << 1) | s.pos0, prev1 = (w.pos1 << 1) | s.pos1;
    s.out = w.out >> 63;
    s.pos0 = w.pos0 >> 63;
    s.pos1 = w.pos1 >> 63;
    // Where each position is p, and the one before pp (a tag's position is below tag_types).
    const uint64_t at[4] = {~w.pos0 & ~w.pos1, w.pos0 & ~w.pos1, ~w.pos0 & w.pos1, w.pos0 & w.pos1};
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
    const uint64_t begins = ~w.out & (prev_out | w.differs | begins_pair) & valid;
    return {~prev_out & (w.out | w.differs | ends_pair) & valid, begins, begins & w.counted};
  }

  // Bytes: type_bits_ what is left of a byte shifted by type_shift; counted_ counted_types'
  // eight bytes and bit_ 1 << j at byte j, in every 16-byte lane (shuffle_epi8's tables).
  __m512i type_bits_, seven_, pos0_, pos1_, outside_, last_, counted_, bit_;
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
