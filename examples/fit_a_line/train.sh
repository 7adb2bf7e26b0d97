#!/usr/bin/env bash
# fit_a_line, end to end with `rill`: make synthetic data with a known answer, append the
# backward pass and SGD to the model, train for ITERATIONS full-batch steps, and check the
# trained weights against the true ones.
#   usage: train.sh [OUT_DIR]     (env: RILL=path/to/rill, ITERATIONS, LEARNING_RATE, TOLERANCE)
# Exits non-zero unless every trained weight is within sqrt(TOLERANCE) of the truth.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rill=${RILL:-$here/../../build/bin/rill}
out=${1:-$(mktemp -d)}
iterations=${ITERATIONS:-300}
lr=${LEARNING_RATE:-0.1}
tolerance=${TOLERANCE:-1e-6}
mkdir -p "$out"

"$rill" run "$here/data.pbtxt" --fetch x --fetch y --fetch w_true --fetch b_true --save "$out/data" >/dev/null
echo "== appending the backward pass and SGD (learning rate $lr)"
"$rill" backward "$here/model.pbtxt" --loss avg_cost --sgd "$lr" -o "$out/train.pbtxt"
echo "== training for $iterations iterations"
"$rill" run "$out/train.pbtxt" --startup "$here/startup.pbtxt" \
  --feed x="$out/data/x.npy" --feed y="$out/data/y.npy" \
  --iterations "$iterations" --print-every $((iterations / 5)) --fetch avg_cost --fetch w --fetch b --save "$out/trained" \
  | sed -E 's/^(\[iteration [0-9]+\] w fp32 \[13,1\]) (([^ ]+ ){4}).*/\1 \2.../'
echo "== true parameters"
"$rill" run "$here/check.pbtxt" --feed w="$out/trained/w.npy" --feed w_true="$out/data/w_true.npy" \
  --feed b="$out/trained/b.npy" --feed b_true="$out/data/b_true.npy" --fetch w_true --fetch b_true --fetch max_sq_err \
  | tee "$out/check.txt"
max_sq_err=$(awk '$1 == "max_sq_err" { print $4 }' "$out/check.txt")
if awk -v e="$max_sq_err" -v t="$tolerance" 'BEGIN { exit !(e <= t) }'; then
  echo "PASS: trained weights match the true ones (max squared error $max_sq_err <= $tolerance)"
else
  echo "FAIL: max squared error $max_sq_err > $tolerance"
  exit 1
fi
