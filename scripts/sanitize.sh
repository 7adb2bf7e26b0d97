#!/usr/bin/env bash
# Builds the test suite with sanitizers and runs it under them:
#   bash scripts/sanitize.sh           ASan+UBSan (build-asan), then TSan (build-tsan)
#   bash scripts/sanitize.sh address   ASan+UBSan only
#   bash scripts/sanitize.sh thread    TSan only
# The sanitizer builds leave out the CUDA plugin (nvcc code is not instrumented, and with
# no GPU its tests only skip) and the benchmarks. The TSan pass also leaves out the
# transports' tests (labels grpc and mpi): Debian's gRPC and Open MPI are not instrumented,
# so TSan cannot see their synchronization and reports races inside them.
# Each pass is a full build of its own; run them before a change lands (CI runs
# scripts/test.sh, which fuzzes under ASan+UBSan but does not run the suite under them).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
common=(-DRILL_WITH_CUDA=OFF -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=OFF)
case "$mode" in
  all | address | thread) ;;
  *) echo "usage: scripts/sanitize.sh [all|address|thread]" >&2; exit 2 ;;
esac
if [ "$mode" != thread ]; then
  BUILD_DIR=build-asan bash scripts/build.sh -DRILL_SANITIZE=address,undefined "${common[@]}"
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j2 -LE stress
fi
if [ "$mode" != address ]; then
  BUILD_DIR=build-tsan bash scripts/build.sh -DRILL_SANITIZE=thread "${common[@]}"
  ctest --test-dir build-tsan --output-on-failure --no-tests=error -j2 -LE 'stress|grpc|mpi'
fi
