#!/usr/bin/env bash
# Compares two builds of one benchmark binary in the same session: runs them one after
# the other, ROUNDS times, and prints each benchmark's median per-op time for both, their
# ratio, and the median and quartiles of the rounds' paired ratios (new/base of one
# round). On a noisy machine this is how a change is measured against its parent, both
# built in one configuration:
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && bash scripts/build.sh ...)
#   bench/ab_compare.sh /tmp/base/build build rill_bench_csp 'BM_Prog_' 5
# usage: bench/ab_compare.sh BASE_BUILD NEW_BUILD BINARY FILTER [ROUNDS]
# BASE_ENV and NEW_ENV, when set, are VAR=value words that side runs under, e.g. another
# allocator for one side: NEW_ENV=LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
set -euo pipefail
base=$1 new=$2 binary=$3 filter=$4 rounds=${5:-5}
out=$(mktemp) json=$(mktemp)
trap 'rm -f "$out" "$json"' EXIT
for _ in $(seq "$rounds"); do
  for side in base new; do
    dir=$base side_env=${BASE_ENV:-}
    [ "$side" = new ] && dir=$new side_env=${NEW_ENV:-}
    # JSON to a file: log lines on stdout (a library's info message) would corrupt it there.
    # shellcheck disable=SC2086  # side_env is words, VAR=value each
    env $side_env "$dir/bin/$binary" --benchmark_filter="$filter" --benchmark_out="$json" --benchmark_out_format=json >/dev/null 2>&1
    python3 -c '
import json, sys
unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
for b in json.load(sys.stdin)["benchmarks"]:
    t = 1e9 / b["items_per_second"] if "items_per_second" in b else b["real_time"] * unit[b["time_unit"]]
    print(sys.argv[1], b["name"], t)' "$side" < "$json" >> "$out"
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, name, t = line.split()
    runs[(name, side)].append(float(t))
for name in sorted({n for n, _ in runs}):
    b, n = runs[(name, "base")], runs[(name, "new")]
    mb, mn = statistics.median(b), statistics.median(n)
    # Each round ran base then new back to back, so its ratio cancels the drift between
    # rounds; the spread of those paired ratios says how far to trust the median's.
    paired = sorted(y / x for x, y in zip(b, n))
    q = statistics.quantiles(paired, n=4) if len(paired) >= 2 else paired * 3
    print(f"{name:42s} base {mb:10.1f} ns  new {mn:10.1f} ns  new/base {mn / mb:.2f}"
          f"  paired {statistics.median(paired):.2f} [{q[0]:.2f}-{q[2]:.2f}]")
PY
