#!/usr/bin/env bash
# Formats the repository's C and C++ sources with clang-format by .clang-format (the frozen
# SDK 1.0 files under tests/compat keep their bytes: their own .clang-format disables it).
# With --check, changes nothing and fails naming each file that is not formatted.
#   usage: format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "format.sh: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' '*.hpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  unformatted=0
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f"
      unformatted=1
    fi
  done
  exit "$unformatted"
fi
clang-format --style=file -i "${files[@]}"
