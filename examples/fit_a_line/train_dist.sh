#!/usr/bin/env bash
# fit_a_line as parameter-server training on loopback: 2 pservers, 2 trainers, each
# trainer on its half of the data, launched by `rill launch`, once per transport in
# TRANSPORTS (grpc: the dist_grpc plugin; mpi: dist_mpi, under mpirun). Checks that the
# trained weights match single-process training on the whole data (the same steps), the
# true weights, and each other across transports.
#   usage: train_dist.sh [OUT_DIR]
#   env: RILL, TRANSPORTS (default "grpc"), ITERATIONS, LEARNING_RATE, TOLERANCE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rill=${RILL:-$here/../../build/bin/rill}
out=${1:-$(mktemp -d)}
iterations=${ITERATIONS:-300}
lr=${LEARNING_RATE:-0.1}
tolerance=${TOLERANCE:-1e-6}
transports=${TRANSPORTS:-grpc}
mkdir -p "$out"

# Two free loopback ports for the pservers.
read -r port0 port1 < <(python3 "$here/../loopback_ports.py" 2)
pservers=127.0.0.1:$port0,127.0.0.1:$port1

"$rill" run "$here/data.pbtxt" --fetch x --fetch y --fetch w_true --fetch b_true --save "$out/data" >/dev/null
"$rill" run "$here/shard.pbtxt" --feed x="$out/data/x.npy" --feed y="$out/data/y.npy" \
  --fetch x_0 --fetch x_1 --fetch y_0 --fetch y_1 --save "$out/data" >/dev/null
"$rill" backward "$here/model.pbtxt" --loss avg_cost --sgd "$lr" -o "$out/train.pbtxt" >/dev/null

echo "== single process, whole data, $iterations iterations"
"$rill" run "$out/train.pbtxt" --startup "$here/startup.pbtxt" --feed x="$out/data/x.npy" --feed y="$out/data/y.npy" \
  --iterations "$iterations" --fetch w --fetch b --save "$out/single" >/dev/null

checks=()
check() {  # check NAME W B W_REF B_REF: the max squared error of (W, B) against the reference
  "$rill" run "$here/check.pbtxt" --feed w="$2" --feed w_true="$4" --feed b="$3" --feed b_true="$5" --fetch max_sq_err \
    | sed "s/^/$1: /" | tee "$out/check_${#checks[@]}.txt"
  checks+=("$out/check_${#checks[@]}.txt")
}
first=
for transport in $transports; do
  echo "== transpiling for $transport, 2 trainers and pservers $pservers"
  "$rill" transpile "$out/train.pbtxt" --startup "$here/startup.pbtxt" --trainers 2 --pservers "$pservers" \
    --transport "$transport" -o "$out/$transport"

  echo "== rill launch ($transport): 2 pservers, 2 trainers, $iterations iterations"
  "$rill" launch "$out/$transport" --deadline-ms 30000 -- \
    --feed x="$out/data/x_{trainer}.npy" --feed y="$out/data/y_{trainer}.npy" \
    --iterations "$iterations" --fetch avg_cost --fetch w --fetch b --save "$out/$transport/trainer_{trainer}" \
    | sed -E 's/^(\[trainer [0-9]\] w fp32 \[13,1\]) (([^ ]+ ){4}).*/\1 \2.../'

  echo "== $transport: trained weights against single-process training, the truth and the other transports"
  for t in 0 1; do
    check "$transport trainer $t vs single process" "$out/$transport/trainer_$t/w.npy" "$out/$transport/trainer_$t/b.npy" \
      "$out/single/w.npy" "$out/single/b.npy"
  done
  check "$transport trainer 0 vs truth" "$out/$transport/trainer_0/w.npy" "$out/$transport/trainer_0/b.npy" \
    "$out/data/w_true.npy" "$out/data/b_true.npy"
  if [[ -n $first ]]; then
    check "$transport trainer 0 vs $first trainer 0" "$out/$transport/trainer_0/w.npy" "$out/$transport/trainer_0/b.npy" \
      "$out/$first/trainer_0/w.npy" "$out/$first/trainer_0/b.npy"
  fi
  first=${first:-$transport}
done
worst=$(cat "${checks[@]}" | awk '{ print $NF }' | sort -g | tail -1)
if awk -v e="$worst" -v t="$tolerance" 'BEGIN { exit !(e <= t) }'; then
  echo "PASS: distributed weights ($transports) match single-process training and the truth (max squared error $worst <= $tolerance)"
else
  echo "FAIL: max squared error $worst > $tolerance"
  exit 1
fi
