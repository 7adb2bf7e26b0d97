// core/cli/malloc_tuning.h — the `rill` binary's glibc malloc settings.
//
// Contract: the Rill libraries (core, every plugin) change no process-wide state: a program
// that embeds them keeps the allocator settings it chose. A process that owns itself, the
// `rill` binary (and the benchmarks, which measure what it runs), picks settings for what it
// runs once, at start-up, with ApplyMallocTuning:
//  - kTuned (`rill run --malloc tuned`, the default):
//     - glibc's fast bins off (M_MXFAST 0). What go blocks take from malloc (names, vectors,
//       tensors past the small-object sizes) a chain of go blocks frees in bulk as it
//       unwinds; fast bins keep such frees unmerged until a larger request consolidates
//       them all, where without them each free merges at once.
//     - freed memory kept up to 1 GiB (M_TRIM_THRESHOLD): glibc otherwise gives back arena
//       memory past 128 KiB as it is freed, so a transport's multi-MiB receive buffers are
//       faulted in afresh for every message.
//     - blocks up to 32 MiB from the heap, not mmap (M_MMAP_THRESHOLD): setting the trim
//       threshold turns off glibc's own raising of this threshold (from 128 KiB up to the
//       same 32 MiB) as large blocks are freed, and without it every tensor of 128 KiB or
//       more (a model's activations, each run) is a fresh mapping, faulted in page by page.
//    Each is left as the user set it through glibc's own means (GLIBC_TUNABLES'
//    glibc.malloc.mxfast, .trim_threshold or .mmap_threshold; MALLOC_TRIM_THRESHOLD_,
//    MALLOC_MMAP_THRESHOLD_).
//  - kDefault (`--malloc default`): glibc's settings as the environment gives them.
#ifndef RILL_CORE_CLI_MALLOC_TUNING_H_
#define RILL_CORE_CLI_MALLOC_TUNING_H_

#include <optional>
#include <string>

namespace rill::core {

enum class MallocTuning { kTuned, kDefault };

// "tuned" or "default"; nullopt for anything else.
std::optional<MallocTuning> ParseMallocTuning(const std::string& name);

// Applies `tuning` to the process (kDefault changes nothing). Call once, before any thread
// is started. Does nothing where malloc is not glibc's.
void ApplyMallocTuning(MallocTuning tuning);

}  // namespace rill::core

#endif  // RILL_CORE_CLI_MALLOC_TUNING_H_
