#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite; then builds the suite with
# ASan+UBSan, and with TSan, and runs it under each (skip those with RILL_SKIP_SANITIZERS=1).
# The sanitizer builds leave out the CUDA plugin: nvcc code is not instrumented, and with no
# GPU on these machines its tests only skip.
# Then the fuzz targets run briefly under libFuzzer (scripts/fuzz.sh; `fuzz.sh long` is the
# long run). Stress tests and benchmarks are labelled and not part of this run. The TSan pass also
# leaves out the transports' tests (labels grpc and mpi): Debian's gRPC and Open MPI are not
# instrumented, so TSan cannot see their synchronization and reports races inside them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=ON
ctest --test-dir build --output-on-failure --no-tests=error -j2 -LE stress
if [ "${RILL_SKIP_SANITIZERS:-0}" != 1 ]; then
  BUILD_DIR=build-asan bash scripts/build.sh -DRILL_SANITIZE=address,undefined -DRILL_WITH_CUDA=OFF -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=OFF
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j2 -LE stress
  BUILD_DIR=build-tsan bash scripts/build.sh -DRILL_SANITIZE=thread -DRILL_WITH_CUDA=OFF -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=OFF
  ctest --test-dir build-tsan --output-on-failure --no-tests=error -j2 -LE 'stress|grpc|mpi'
  # The fuzz targets under libFuzzer (clang, ASan+UBSan), a short run each.
  bash scripts/fuzz.sh short
fi
