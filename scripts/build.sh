#!/usr/bin/env bash
# Configures and builds Rill into BUILD_DIR (default: build). Extra arguments go to cmake.
# Uses -j2: CI machines have two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The Python package is built for Debian's python3, which install-deps gives numpy and
# protobuf (a pyenv python3 first on PATH has neither); -DPython3_EXECUTABLE=... overrides.
python=()
[ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake -S . -B "$build_dir" "${generator[@]}" "${python[@]}" "$@"
cmake --build "$build_dir" -j "${JOBS:-2}"
