#!/usr/bin/env bash
# CI's run: installs dependencies, builds (tests and benchmarks included), runs the whole
# test suite, then the fuzz targets briefly under libFuzzer with ASan+UBSan
# (scripts/fuzz.sh; `fuzz.sh long` is the long run). Stress tests and benchmarks are
# labelled and not part of this run.
# The whole suite under ASan+UBSan and under TSan is scripts/sanitize.sh: two more full
# builds, each longer than this whole run, so it is run on purpose before a change lands
# rather than by CI on every one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=ON
ctest --test-dir build --output-on-failure --no-tests=error -j2 -LE stress
bash scripts/fuzz.sh short
