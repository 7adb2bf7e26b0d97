// The instruction sets the math plugin's vectorized loops are compiled for, and the one this
// process runs.
//
// The plugin's baseline is the compiler's default target (x86-64: SSE2). A loop whose speed
// depends on the vector width (Eigen's exp, log, tanh, sin and the rest are several times
// faster on AVX2 and AVX-512) lives in a source CMakeLists.txt compiles once per set
// (rill_math_isa_objects): each copy with that set's flags, instantiating its function
// templates for the set's tag type (RILL_MATH_ISA_TAG: IsaBaseline, IsaAvx2, IsaAvx512, a
// template argument of each, so every copy has symbols of its own), and Eigen's namespace
// renamed for it, so no Eigen function compiled for a wider set (or with other options)
// shares a symbol with another object's. What such a source can still share (an inline
// function of the SDK or of the standard library) resolves to the baseline's copy: the
// wider sets' objects are linked last, and the linker keeps the first definition it meets.
//
// A kernel picks its loop by MathIsa() when it first runs (ForMathIsa). The sets differ in rounding
// only where the vector code does (a fused multiply-add, a polynomial evaluated in a wider
// register): results are the same run to run and for every thread budget, but not across
// machines of different sets, as for oneDNN's primitives.
#ifndef RILL_MATH_ISA_H_
#define RILL_MATH_ISA_H_

namespace rill::math {

enum class Isa { kBaseline, kAvx2, kAvx512 };

// The widest set both this build and this CPU (and its OS, which must save the wider
// registers) support, lowered to the one named by the environment variable RILL_MATH_ISA
// ("baseline", "avx2" or "avx512") where that is narrower: tests run every set's loops on
// one machine that way. Decided once per process; a name it does not know is an Error.
Isa MathIsa();

const char* IsaName(Isa isa);

// The tag types naming each set's copy of a function template.
struct IsaBaseline {};
struct IsaAvx2 {};
struct IsaAvx512 {};

// f(tag) with the tag of MathIsa()'s set: f takes the tag's type as `auto` and returns the
// set's functions (one type whatever the set).
template <class F> auto ForMathIsa(F&& f) {
  switch (MathIsa()) {
#if defined(RILL_MATH_X86_ISAS)
    case Isa::kAvx512: return f(IsaAvx512{});
    case Isa::kAvx2: return f(IsaAvx2{});
#endif
    default: return f(IsaBaseline{});
  }
}

}  // namespace rill::math

#endif  // RILL_MATH_ISA_H_
