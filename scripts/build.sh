#!/usr/bin/env bash
# Configures and builds Rill into BUILD_DIR (default: build). Extra arguments go to cmake.
# Uses -j2: CI machines have two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" "$@"
cmake --build "$build_dir" -j "${JOBS:-2}"
