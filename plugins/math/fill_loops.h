// plugins/math/fill_loops.h — p[0, n) = value for elements of 1, 2, 4 or 8 bytes, compiled
// once per instruction set (isa.h) by fill_loops.cc: a fill is bound by how many bytes a
// store writes, which the vector width sets, and the plugin's baseline build stores 16.
// ParallelFill (parallel_for.h) splits a fill across the passes' team with these.
#ifndef RILL_MATH_FILL_LOOPS_H_
#define RILL_MATH_FILL_LOOPS_H_

#include <cstdint>

#include "isa.h"

namespace rill::math {
namespace fill {

// Instantiated by fill_loops.cc for each set's tag and uint8_t, uint16_t, uint32_t, uint64_t.
template <class Set, class Word>
void Fill(Word* p, int64_t n, Word value);

// MathIsa()'s Fill of Word.
template <class Word>
auto FillFor() {
  static const auto loop = ForMathIsa([](auto set) { return &Fill<decltype(set), Word>; });
  return loop;
}

}  // namespace fill
}  // namespace rill::math

#endif  // RILL_MATH_FILL_LOOPS_H_
