#!/usr/bin/env bash
# The checks that need a GPU, run from the repository root on a machine that has one and a
# tree packed here by scripts/bundle.sh (the development machines and CI have no GPU):
#
#   bash scripts/gpu-check.sh [BUNDLE_DIR]      # default .bundle
#
# Runs every CUDA and device test, the GPU benchmarks (medians of 7), fit_a_line trained
# with --device cuda:0, compute-sanitizer's memcheck over the CUDA tests, then all of
# rill_tests (the CPU tests also see a real device then). Exits non-zero if a check fails.
#
# Everything it prints, cuDNN's own log of errors and warnings during the CUDA tests, and
# the benchmarks as JSON go to files in $OUT (the device tool's folder that comes back),
# or in a temporary folder it names: a long run's output is more than a terminal keeps.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.bundle}
[[ -x $bundle/build/bin/rill_tests ]] || { echo "gpu-check.sh: $bundle/build/bin/rill_tests not found: run scripts/bundle.sh on a test build" >&2; exit 2; }
logs=${OUT:-$(mktemp -d)}
exec > >(tee "$logs/gpu-check.log") 2>&1
echo "logs in $logs"
# Binaries find plugins and fixtures at the build path compiled in: this tree's build/.
[[ -e build ]] || ln -s "$bundle/build" build
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
bin=build/bin
failed=()
check() {  # check NAME COMMAND...: runs it, remembers a failure
  echo "== $1"
  local name=$1 start=$SECONDS
  shift
  "$@" || failed+=("$name")
  echo "== $name: $((SECONDS - start)) s"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# Most telling first, so that a run cut short by the device's time limit still has them.
check "CUDA and device tests" env CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG="$logs/cudnn.log" \
  $bin/rill_tests --gtest_filter='*Cuda*:*HalfPrecision*:Devices*' --gtest_brief=1
check "GPU benchmarks" $bin/rill_bench_cuda --benchmark_repetitions=7 --benchmark_report_aggregates_only=true \
  --benchmark_out="$logs/bench_cuda.json"
rill_on_gpu=$(mktemp)
printf '#!/bin/sh\nif [ "$1" = run ]; then exec %s "$@" --device cuda:0; fi\nexec %s "$@"\n' \
  "$PWD/$bin/rill" "$PWD/$bin/rill" > "$rill_on_gpu"
chmod +x "$rill_on_gpu"
check "fit_a_line on cuda:0" env RILL="$rill_on_gpu" bash examples/fit_a_line/train.sh "$(mktemp -d)"
check "CSP daisy chain on cuda:0" "$rill_on_gpu" run examples/csp/daisy_chain.pbtxt --fetch result
check "memcheck of the CUDA tests" compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 5 \
  $bin/rill_tests --gtest_filter='*Cuda*:*HalfPrecision*' --gtest_brief=1
check "all of rill_tests" $bin/rill_tests --gtest_brief=1

if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all GPU checks passed"
