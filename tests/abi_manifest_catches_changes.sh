#!/usr/bin/env bash
# scripts/abi-manifest.py --check must fail, naming the entry, when a shipped entry of abi.h
# changes its prototype, moves, or when the frozen 1.0 header drifts from the manifest; and
# must pass on an appended entry once --write records it. Each case runs on a copy of the
# files the check reads.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fresh() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree/scripts" "$work/tree/sdk/include/rill" "$work/tree/core/abi" "$work/tree/tests/compat"
  cp "$root/scripts/abi-manifest.py" "$work/tree/scripts/"
  cp "$root/sdk/include/rill/abi.h" "$work/tree/sdk/include/rill/"
  cp "$root/sdk/abi_manifest.txt" "$work/tree/sdk/"
  cp "$root/core/abi/host_api.cc" "$work/tree/core/abi/"
  cp "$root/tests/compat/abi_1_0.h" "$work/tree/tests/compat/"
}
expect_failure() {  # description, text the failure must contain
  if out=$(python3 "$work/tree/scripts/abi-manifest.py" --check 2>&1); then
    echo "FAIL: --check passed after: $1"; exit 1
  fi
  grep -qF "$2" <<<"$out" || { echo "FAIL: $1: the message does not say '$2':"; echo "$out"; exit 1; }
  echo "ok: $1"
}

fresh
python3 "$work/tree/scripts/abi-manifest.py" --check >/dev/null

fresh
sed -i 's/int32_t (\*status_code)(const RillStatus\* status);/int64_t (*status_code)(const RillStatus* status);/' \
  "$work/tree/sdk/include/rill/abi.h"
expect_failure "a changed prototype" "entry 'status_code' changed its prototype"

fresh
sed -i '/^  void (\*log)(int32_t level, const char\* message);/d' "$work/tree/sdk/include/rill/abi.h"
expect_failure "a removed entry" "entry 'log' (version 1, offset 40) is gone from abi.h"
expect_failure "a removed entry moves the next" "entry 'register_op' moved: offset 48 in the manifest, 40 in abi.h"

fresh
sed -i 's/size_t (\*op_input_count)(const RillOpInfo\* info, int32_t slot);/size_t (*op_input_count)(const RillOpInfo* info, uint32_t slot);/' \
  "$work/tree/tests/compat/abi_1_0.h"
expect_failure "a drifted frozen header" "tests/compat/abi_1_0.h, the frozen header of version 1"

fresh
sed -i 's|  /\* ===== End of version 2 ===== \*/|  /* ===== End of version 2 ===== */\n  /* ===== Version 3 ===== */\n  void (*appended)(void);|' \
  "$work/tree/sdk/include/rill/abi.h"
expect_failure "an unrecorded appended entry" "entries added to abi.h but not to the manifest"
python3 "$work/tree/scripts/abi-manifest.py" --write
last=$(grep -oE 'RILL_PIN\([a-z_]+, [0-9]+\)' "$work/tree/core/abi/host_api.cc" | tail -n 1 | grep -oE '[0-9]+')
echo "RILL_PIN(appended, $((last + 1)));" >>"$work/tree/core/abi/host_api.cc"
python3 "$work/tree/scripts/abi-manifest.py" --check >/dev/null
echo "ok: an appended entry, once recorded and pinned"
