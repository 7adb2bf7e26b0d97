// examples/csp/scenarios.h — Go's classic concurrency scenarios as Rill programs, built
// with the CSP builder helpers. The tests run them through `rill` and check their results;
// the benchmarks time them against the same scenarios in Go (bench/peers).
#ifndef RILL_EXAMPLES_CSP_SCENARIOS_H_
#define RILL_EXAMPLES_CSP_SCENARIOS_H_

#include <cstdint>

#include "core/program/csp_builder.h"

namespace rill::examples {

// n go blocks in a row, each receiving from its right neighbour and sending one more to
// its left; a last go block starts it with 1. Fetch `result`: n + 1.
core::ProgramBuilder DaisyChain(int64_t n);

// `rounds` round trips: the main block sends on `ping` and receives on `pong`; a go block
// echoes, with a plain receive or (with_select) a select over ping and a quit channel.
// Fetch `echoed`: 1.
core::ProgramBuilder PingPong(int64_t rounds, bool with_select);

// A go block sends n values on a channel of `capacity`; the main block receives them and
// sums them into `sum` (n).
core::ProgramBuilder ProducerConsumer(int64_t n, int64_t capacity);

// Starts n go blocks in batches of `batch` (n a multiple of it), each sending one value on
// a buffered channel; the main block receives a batch's values, adding them to `count`,
// before it starts the next batch. Fetch `count`: n.
core::ProgramBuilder SpawnMany(int64_t n, int64_t batch);

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_CSP_SCENARIOS_H_
