#!/usr/bin/env bash
# scripts/abi-manifest.py --check must fail, naming the entry, when a shipped entry of abi.h
# changes its prototype, moves, or when the frozen 1.0 header drifts from the manifest; when
# an entry is added to a shipped version (which --write refuses too), a shipped version is
# marked in development, or a version has no marker; and must pass on an entry appended
# under a version in development once --write records it. Each case runs on a copy of the
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
sed -i 's|  /\* ===== End of version 2 ===== \*/|  void (*late)(void);\n  /* ===== End of version 2 ===== */|' \
  "$work/tree/sdk/include/rill/abi.h"
expect_failure "an entry added to a shipped version" "entry 'late' is added to version 2, which is shipped"
cp "$work/tree/sdk/abi_manifest.txt" "$work/manifest_before"
if python3 "$work/tree/scripts/abi-manifest.py" --write >/dev/null; then
  echo "FAIL: --write recorded an entry added to a shipped version"; exit 1
fi
cmp -s "$work/manifest_before" "$work/tree/sdk/abi_manifest.txt" || { echo "FAIL: a refused --write changed the manifest"; exit 1; }
echo "ok: --write refuses it"

fresh
sed -i 's|Version 2 (shipped: SDK 1.0)|Version 2 (in development)|' "$work/tree/sdk/include/rill/abi.h"
expect_failure "a shipped version marked in development" "version 2 is shipped (the manifest says so) but abi.h marks it in development"

fresh
sed -i 's|  /\* ===== End of version 2 ===== \*/|  /* ===== End of version 2 ===== */\n  /* ===== Version 3 ===== */\n  void (*appended)(void);|' \
  "$work/tree/sdk/include/rill/abi.h"
expect_failure "a version without its state" "version 3 has no marker saying 'shipped: ...' or 'in development'"

fresh
sed -i 's|  /\* ===== End of version 2 ===== \*/|  /* ===== End of version 2 ===== */\n  /* ===== Version 3 (in development) ===== */\n  void (*appended)(void);|' \
  "$work/tree/sdk/include/rill/abi.h"
expect_failure "an unrecorded appended entry" "entries added to abi.h but not to the manifest"
python3 "$work/tree/scripts/abi-manifest.py" --write
last=$(grep -oE 'RILL_PIN\([a-z_]+, [0-9]+\)' "$work/tree/core/abi/host_api.cc" | tail -n 1 | grep -oE '[0-9]+')
echo "RILL_PIN(appended, $((last + 1)));" >>"$work/tree/core/abi/host_api.cc"
python3 "$work/tree/scripts/abi-manifest.py" --check >/dev/null
echo "ok: an appended entry, once recorded and pinned"
