#!/usr/bin/env bash
# fit_a_line over gRPC with each process on a host of its own: the test makes one network
# namespace per process (2 pservers, 2 trainers), each with its own address on a veth
# joined to a bridge in one more namespace, runs the transpiled programs there by hand
# (`rill run` per process, as on real hosts), checks the trained weights against
# single-process training, and removes every namespace it made. Exits 77 (skipped, with
# the reason) where namespaces cannot be made: not root, no iproute2, no CAP_SYS_ADMIN.
#   usage: netns_cluster_test.sh RILL WORK_DIR
set -euo pipefail
rill=$1
work=$2
here=$(cd "$(dirname "$0")/../../examples/fit_a_line" && pwd)
tag=rn$$
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "creating network namespaces needs root"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"

namespaces=()
cleanup() { for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done; }
trap cleanup EXIT
ip netns add "${tag}sw" 2>/dev/null || skip "this machine does not allow creating network namespaces (ip netns add failed)"
namespaces+=("${tag}sw")
ip -n "${tag}sw" link add br0 type bridge
ip -n "${tag}sw" link set br0 up
for i in 0 1 2 3; do  # hosts: pserver 0, pserver 1, trainer 0, trainer 1
  ns=${tag}h$i
  ip netns add "$ns"
  namespaces+=("$ns")
  ip link add "${tag}a$i" type veth peer name "${tag}b$i"
  ip link set "${tag}a$i" netns "$ns"
  ip link set "${tag}b$i" netns "${tag}sw"
  ip -n "$ns" addr add "10.213.7.$((i + 1))/24" dev "${tag}a$i"
  ip -n "$ns" link set "${tag}a$i" up
  ip -n "$ns" link set lo up
  ip -n "${tag}sw" link set "${tag}b$i" master br0
  ip -n "${tag}sw" link set "${tag}b$i" up
done

rm -rf "$work" && mkdir -p "$work"
"$rill" run "$here/data.pbtxt" --fetch x --fetch y --save "$work/data" >/dev/null
"$rill" backward "$here/model.pbtxt" --loss avg_cost --sgd 0.1 -o "$work/train.pbtxt" >/dev/null
"$rill" run "$work/train.pbtxt" --startup "$here/startup.pbtxt" --feed x="$work/data/x.npy" --feed y="$work/data/y.npy" \
  --iterations 50 --fetch w --fetch b --save "$work/single" >/dev/null
"$rill" transpile "$work/train.pbtxt" --startup "$here/startup.pbtxt" --trainers 2 \
  --pservers 10.213.7.1:6170,10.213.7.2:6170 -o "$work/cluster" >/dev/null

export RILL_RPC_DEADLINE_MS=20000
# Pservers listening beyond loopback take a shared token.
export RILL_DIST_TOKEN="netns-$$-$RANDOM"
run_in() {  # host index, log name, rill arguments...
  local ns=${tag}h$1 log=$work/$2.log
  shift 2
  ip netns exec "$ns" "$@" >"$log" 2>&1
}
c=$work/cluster
run_in 0 pserver0 "$rill" run "$c/pserver_0.pbtxt" --startup "$c/pserver_0_startup.pbtxt" & ps0=$!
run_in 1 pserver1 "$rill" run "$c/pserver_1.pbtxt" --startup "$c/pserver_1_startup.pbtxt" & ps1=$!
for t in 0 1; do
  RILL_TRAINER_ID=$t run_in $((t + 2)) trainer$t "$rill" run "$c/trainer.pbtxt" --startup "$c/trainer_startup.pbtxt" \
    --feed x="$work/data/x.npy" --feed y="$work/data/y.npy" --iterations 50 --fetch w --fetch b --save "$work/trainer$t" &
  eval "t$t=\$!"
done
status=0
for p in "$t0" "$t1" "$ps0" "$ps1"; do wait "$p" || status=1; done
if [ $status -ne 0 ]; then
  tail -n 5 "$work"/*.log
  echo "FAIL: a process of the cluster failed"
  exit 1
fi
"$rill" run "$here/check.pbtxt" --feed w="$work/trainer1/w.npy" --feed w_true="$work/single/w.npy" \
  --feed b="$work/trainer1/b.npy" --feed b_true="$work/single/b.npy" --fetch max_sq_err | tee "$work/check.txt"
err=$(awk '{ print $NF }' "$work/check.txt")
awk -v e="$err" 'BEGIN { exit !(e <= 1e-10) }' || { echo "FAIL: weights differ from single-process training ($err)"; exit 1; }
echo "PASS: 4 hosts (network namespaces 10.213.7.1-4) trained the single-process weights (max squared error $err)"
