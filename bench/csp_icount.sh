#!/usr/bin/env bash
# Instructions per op of the CSP program rows, counted by callgrind with one worker: the
# figure each change to a message's or a go block's path is measured by before its time,
# which these shared machines blur (a row's paired time ratio spans +-20% from run to run;
# its instruction count is the same in every run).
#
#   bench/csp_icount.sh BUILD [ROW...]
#
# ROW is a BM_Prog_ benchmark's name after the prefix (PingPong, SelectPingPong,
# ProdCons/0, ProdCons/1, ProdCons/100, Spawn: the default), printed as instructions per
# op: the run's total less the start-up (a run with no op), over the ops of its two runs
# (each program benchmark runs its program once untimed, then once timed at
# --benchmark_min_time=0.001). Then `chain`: a daisy chain's instructions per block, from
# one-shot `rill run`s of examples/csp/daisy_chain.pbtxt with 10,000 blocks and with 1.
# Needs valgrind; BUILD is a RelWithDebInfo build with benchmarks (build-ab in docs).
set -euo pipefail
build=$1
shift
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(PingPong SelectPingPong ProdCons/0 ProdCons/1 ProdCons/100 Spawn)
here=$(cd "$(dirname "$0")/.." && pwd)
ops_per_run=200000  # kRounds in bench/csp_bench.cc
startup=8100000     # callgrind's count for a program benchmark's process with no op run

collected() {  # the instructions callgrind counted in the command given
  RILL_WORKERS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 |
    awk '/Collected/ {gsub(",", "", $4); print $4}'
}

for row in "${rows[@]}"; do
  n=$(collected "$build/bin/rill_bench_csp" --benchmark_filter="BM_Prog_$row/" --benchmark_min_time=0.001)
  echo "$row $(((n - startup) / (2 * ops_per_run)))"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The program's loop limit is the file's one `f: 100000`.
sed 's/f: 100000$/f: 10000/' "$here/examples/csp/daisy_chain.pbtxt" > "$tmp/c10k.pbtxt"
sed 's/f: 100000$/f: 1/' "$here/examples/csp/daisy_chain.pbtxt" > "$tmp/c1.pbtxt"
a=$(collected "$build/bin/rill" run "$tmp/c10k.pbtxt" --fetch result)
b=$(collected "$build/bin/rill" run "$tmp/c1.pbtxt" --fetch result)
echo "chain $(((a - b) / 9999))"
