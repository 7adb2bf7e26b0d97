#!/usr/bin/env bash
# fit_a_line as parameter-server training over gRPC on loopback: 2 pservers, 2 trainers,
# each trainer on its half of the data, launched by `rill launch`. Checks that the
# trained weights match single-process training on the whole data (the same steps), and
# the true weights.
#   usage: train_dist.sh [OUT_DIR]    (env: RILL, ITERATIONS, LEARNING_RATE, TOLERANCE)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rill=${RILL:-$here/../../build/bin/rill}
out=${1:-$(mktemp -d)}
iterations=${ITERATIONS:-300}
lr=${LEARNING_RATE:-0.1}
tolerance=${TOLERANCE:-1e-6}
mkdir -p "$out"

# Two free loopback ports for the pservers.
read -r port0 port1 < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
pservers=127.0.0.1:$port0,127.0.0.1:$port1

"$rill" run "$here/data.pbtxt" --fetch x --fetch y --fetch w_true --fetch b_true --save "$out/data" >/dev/null
"$rill" run "$here/shard.pbtxt" --feed x="$out/data/x.npy" --feed y="$out/data/y.npy" \
  --fetch x_0 --fetch x_1 --fetch y_0 --fetch y_1 --save "$out/data" >/dev/null
"$rill" backward "$here/model.pbtxt" --loss avg_cost --sgd "$lr" -o "$out/train.pbtxt" >/dev/null

echo "== single process, whole data, $iterations iterations"
"$rill" run "$out/train.pbtxt" --startup "$here/startup.pbtxt" --feed x="$out/data/x.npy" --feed y="$out/data/y.npy" \
  --iterations "$iterations" --fetch w --fetch b --save "$out/single" >/dev/null

echo "== transpiling for 2 trainers and pservers $pservers"
"$rill" transpile "$out/train.pbtxt" --startup "$here/startup.pbtxt" --trainers 2 --pservers "$pservers" -o "$out/cluster"

echo "== rill launch: 2 pservers, 2 trainers, $iterations iterations"
"$rill" launch "$out/cluster" --deadline-ms 30000 -- \
  --feed x="$out/data/x_{trainer}.npy" --feed y="$out/data/y_{trainer}.npy" \
  --iterations "$iterations" --fetch avg_cost --fetch w --fetch b --save "$out/trainer_{trainer}" \
  | sed -E 's/^(\[trainer [0-9]\] w fp32 \[13,1\]) (([^ ]+ ){4}).*/\1 \2.../'

echo "== trained weights against single-process training and against the truth"
for t in 0 1; do
  "$rill" run "$here/check.pbtxt" --feed w="$out/trainer_$t/w.npy" --feed w_true="$out/single/w.npy" \
    --feed b="$out/trainer_$t/b.npy" --feed b_true="$out/single/b.npy" --fetch max_sq_err | sed "s/^/trainer $t vs single process: /" \
    | tee "$out/check_single_$t.txt"
done
"$rill" run "$here/check.pbtxt" --feed w="$out/trainer_0/w.npy" --feed w_true="$out/data/w_true.npy" \
  --feed b="$out/trainer_0/b.npy" --feed b_true="$out/data/b_true.npy" --fetch max_sq_err | sed "s/^/trainer 0 vs truth: /" \
  | tee "$out/check_truth.txt"
worst=$(cat "$out"/check_single_*.txt "$out/check_truth.txt" | awk '{ print $NF }' | sort -g | tail -1)
if awk -v e="$worst" -v t="$tolerance" 'BEGIN { exit !(e <= t) }'; then
  echo "PASS: distributed weights match single-process training and the truth (max squared error $worst <= $tolerance)"
else
  echo "FAIL: max squared error $worst > $tolerance"
  exit 1
fi
