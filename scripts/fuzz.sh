#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz) with clang, libFuzzer, ASan and UBSan into
# build-fuzz, then runs them through ctest:
#   bash scripts/fuzz.sh          each target for RILL_FUZZ_SHORT_RUNS inputs (seconds; CI does this)
#   bash scripts/fuzz.sh long     each target for 1,000,000 inputs, with libFuzzer's final stats
#   bash scripts/fuzz.sh build    the build only
# A crash leaves its input in build-fuzz (crash-*, named in the output): add it to
# tests/fuzz/corpus/<target>/ as a regression input, then fix the bug.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-short}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
CC=clang CXX=clang++ cmake -S . -B build-fuzz "${generator[@]}" -DRILL_FUZZ=ON -DRILL_SANITIZE=address,undefined \
  -DRILL_WITH_CUDA=OFF -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=OFF >/dev/null
targets=(rill_fuzz_npy rill_fuzz_lod_tensor rill_fuzz_model_params rill_fuzz_program rill_fuzz_select_case rill_csp)
grep -q '^rill_fuzz_pserver:' <(cmake --build build-fuzz --target help | sed 's/: .*//;s/$/:/') && targets+=(rill_fuzz_pserver)
cmake --build build-fuzz -j "${JOBS:-2}" --target "${targets[@]}"
case "$mode" in
  build) ;;
  short) ctest --test-dir build-fuzz --output-on-failure --no-tests=error -L fuzz_short ;;
  long) ctest --test-dir build-fuzz --output-on-failure --no-tests=error -L '^fuzz$' -V 2>&1 |
          grep -E "Test #|Done [0-9]+ runs|stat::|#[0-9]+[[:space:]]+DONE|==ERROR|ERROR: libFuzzer|SUMMARY|Passed|Failed" ;;
  *) echo "usage: scripts/fuzz.sh [short|long|build]" >&2; exit 2 ;;
esac
