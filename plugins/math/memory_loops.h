// plugins/math/memory_loops.h — fills, copies (plain, bits flipped, reversed, of the words
// matching no list) and transposes of plain bytes, compiled once per instruction set (isa.h)
// by memory_loops.cc.
//  - A fill is bound by how many bytes a store writes, which the vector width sets; the
//    plugin's baseline build stores 16.
//  - A copy of a large block by the C library's memcpy may use `rep movsb`, which on some
//    cores runs several times slower than vector moves when the destination's offset within
//    a cache line differs from the source's (a row rolled by a few elements, a transposed
//    run): the plugin copies large blocks with CopyBytes, whose vector loop does not care.
//  - A transpose read element by element is a strided load per element; blocks moved
//    through vector registers read and write whole rows.
// ParallelFill and ParallelCopy (parallel_for.h) split fills and copies across the passes'
// team with these; flip, roll and transpose2 call the others from their own passes.
#ifndef RILL_MATH_MEMORY_LOOPS_H_
#define RILL_MATH_MEMORY_LOOPS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa.h"

namespace rill::math {
namespace memory {

// p[0, n) = value. Instantiated by memory_loops.cc for each set's tag and uint8_t,
// uint16_t, uint32_t, uint64_t.
template <class Set, class Word> void Fill(Word* p, int64_t n, Word value);

// to[0, n) = from[0, n), not overlapping.
template <class Set> void Copy(const uint8_t* from, uint8_t* to, int64_t n);

// to[i] = from[i] ^ mask for i in [0, n), to either from itself or not overlapping it
// (logical_not: a bool is one byte holding 0 or 1).
template <class Set> void XorBytes(const uint8_t* from, uint8_t* to, int64_t n, uint8_t mask);

// to[j] = from[n - 1 - j] for j in [0, n), not overlapping (Word as for Fill).
template <class Set, class Word> void Reverse(const Word* from, Word* to, int64_t n);

// to[c * to_stride + r] = from[r * from_stride + c] for r < rows, c < cols: a transposed
// tile, not overlapping (uint32_t and uint64_t). Above the baseline, in blocks transposed
// in vector registers (8 x 8 words of 4 bytes, 4 x 4 of 8), each row of a block one load
// and each column one store.
template <class Set, class Word>
void Transpose(const Word* from, int64_t from_stride, Word* to, int64_t to_stride, int64_t rows, int64_t cols);

// MathIsa()'s copies of each.
// Words matched against a list of K words, K one of 1, 2, 4 and kMatchWords (a list of
// another length padded with its own words): CountUnmatched counts the words of from[0, n)
// equal to none of list[0, K); CopyUnmatched writes them, in order, to to[0, count), count
// being what CountUnmatched answered, not overlapping from (sequence_erase; uint32_t and
// uint64_t). K compares per word, with no branch, so both are vector loops (the copy's at
// AVX-512's width, where a register's unmatched words can be moved together).
constexpr int kMatchWords = 8;
// Which of the K above a list of `words` takes: 0 for 1, 1 for 2, 2 for 3 or 4, 3 for 5 to 8.
constexpr size_t MatchLoop(int words) { return words <= 1 ? 0 : words <= 2 ? 1 : words <= 4 ? 2 : 3; }
template <class Set, class Word, int K> int64_t CountUnmatched(const Word* from, int64_t n, const Word* list);
template <class Set, class Word, int K>
void CopyUnmatched(const Word* from, int64_t n, Word* to, int64_t count, const Word* list);

template <class Word> auto FillFor() {
  static const auto loop = ForMathIsa([](auto set) { return &Fill<decltype(set), Word>; });
  return loop;
}
inline auto CopyFor() {
  static const auto loop = ForMathIsa([](auto set) { return &Copy<decltype(set)>; });
  return loop;
}
inline auto XorBytesFor() {
  static const auto loop = ForMathIsa([](auto set) { return &XorBytes<decltype(set)>; });
  return loop;
}
template <class Word> auto ReverseFor() {
  static const auto loop = ForMathIsa([](auto set) { return &Reverse<decltype(set), Word>; });
  return loop;
}
// The loops for a list of `words` (1 to kMatchWords): those of the least K that holds it.
template <class Word> auto CountUnmatchedFor(int words) {
  static const auto loops = ForMathIsa([](auto set) {
    using Set = decltype(set);
    return std::array{&CountUnmatched<Set, Word, 1>, &CountUnmatched<Set, Word, 2>, &CountUnmatched<Set, Word, 4>,
                      &CountUnmatched<Set, Word, kMatchWords>};
  });
  return loops[MatchLoop(words)];
}
template <class Word> auto CopyUnmatchedFor(int words) {
  static const auto loops = ForMathIsa([](auto set) {
    using Set = decltype(set);
    return std::array{&CopyUnmatched<Set, Word, 1>, &CopyUnmatched<Set, Word, 2>, &CopyUnmatched<Set, Word, 4>,
                      &CopyUnmatched<Set, Word, kMatchWords>};
  });
  return loops[MatchLoop(words)];
}
template <class Word> auto TransposeFor() {
  static const auto loop = ForMathIsa([](auto set) { return &Transpose<decltype(set), Word>; });
  return loop;
}

}  // namespace memory

// memcpy(to, from, n) for blocks that do not overlap: the C library's below 2 KiB, the
// least size at which glibc's memcpy starts using `rep movsb` (its rep_movsb_threshold:
// 2 KiB with 16-byte vectors, more with wider ones), memory::Copy for the rest. Below
// it glibc moves a block with vector registers, all of a short block's loads issued before
// its stores, which the vector loop's setup and one-register steps cannot match on a row
// of a few hundred bytes (a gathered embedding row).
inline void CopyBytes(void* to, const void* from, size_t n) {
  constexpr size_t kLoopFrom = 2048;
  if (n < kLoopFrom) {
    std::memcpy(to, from, n);
    return;
  }
  memory::CopyFor()(static_cast<const uint8_t*>(from), static_cast<uint8_t*>(to), static_cast<int64_t>(n));
}

}  // namespace rill::math

#endif  // RILL_MATH_MEMORY_LOOPS_H_
