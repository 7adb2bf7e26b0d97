// tests/fuzz/fuzz_target.h — the one function each fuzz target defines, as libFuzzer calls it.
//
// Contract: a target returns 0 for every input; an input a reader refuses is an Error (or
// the reader's documented error type), caught by the target. Anything else the input
// causes (a crash, a sanitizer report, a leak, an escaping exception, a hang) is a bug
// the fuzzer reports. Built with -fsanitize=fuzzer (scripts/fuzz.sh), libFuzzer drives
// it; otherwise replay_main.cc runs it over the files it is given (the seed corpus and
// every crash found, kept as regression inputs), in every test run.
#ifndef RILL_TESTS_FUZZ_FUZZ_TARGET_H_
#define RILL_TESTS_FUZZ_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#endif  // RILL_TESTS_FUZZ_FUZZ_TARGET_H_
