#!/usr/bin/env bash
# Draws the pictures in docs/graphs with `rill graph`: fit_a_line's training program
# (rill backward of examples/fit_a_line/model.pbtxt), Fluid's select Fibonacci
# (examples/csp/fibonacci.pbtxt) and pserver 0 of fit_a_line transpiled for 2 trainers.
#   usage: gen-graph-docs.sh [RILL]   (default: build/bin/rill)
set -euo pipefail
cd "$(dirname "$0")/.."
rill=${1:-build/bin/rill}
out=docs/graphs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
"$rill" backward examples/fit_a_line/model.pbtxt --loss avg_cost --sgd 0.1 -o "$work/train.pbtxt" >/dev/null
"$rill" graph "$work/train.pbtxt" -o "$out/fit_a_line_train.svg"
"$rill" graph examples/csp/fibonacci.pbtxt -o "$out/select_fibonacci.svg"
"$rill" transpile "$work/train.pbtxt" --startup examples/fit_a_line/startup.pbtxt --trainers 2 \
  --pservers 127.0.0.1:6170,127.0.0.1:6171 -o "$work/cluster" >/dev/null
"$rill" graph "$work/cluster/pserver_0.pbtxt" -o "$out/fit_a_line_pserver.svg"
ls -l "$out"
