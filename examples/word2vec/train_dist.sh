#!/usr/bin/env bash
# word2vec (Paddle's book) as parameter-server training on loopback with sparse updates:
# the shared embedding is looked up with is_sparse, so each trainer sends SelectedRows of
# the rows its batch touched, which the pservers apply to those rows alone. 2 pservers and
# 2 trainers, each trainer on its half of the data, launched by `rill launch`; the trained
# parameters must match single-process training on the whole data, step for step.
#   usage: train_dist.sh [OUT_DIR]      env: RILL, PYTHON (with numpy), ITERATIONS, TOLERANCE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rill=${RILL:-$here/../../build/bin/rill}
python=${PYTHON:-/usr/bin/python3}
out=${1:-$(mktemp -d)}
iterations=${ITERATIONS:-30}
tolerance=${TOLERANCE:-1e-10}
mkdir -p "$out"

read -r port0 port1 < <(python3 "$here/../loopback_ports.py" 2)

"$python" "$here/data.py" "$out/data"
"$rill" backward "$here/model.pbtxt" --loss avg_cost --sgd 0.5 -o "$out/train.pbtxt" >/dev/null
feeds() { for w in w1 w2 w3 label; do printf -- '--feed %s=%s ' "$w" "$out/data/$w$1.npy"; done; }
fetches="--fetch avg_cost --fetch emb --fetch fc1_w --fetch fc2_w"

echo "== single process, whole data, $iterations iterations"
# shellcheck disable=SC2046
"$rill" run "$out/train.pbtxt" --startup "$here/startup.pbtxt" $(feeds "") --iterations "$iterations" \
  $fetches --save "$out/single" | grep avg_cost

echo "== 2 pservers, 2 trainers over gRPC, $iterations iterations"
"$rill" transpile "$out/train.pbtxt" --startup "$here/startup.pbtxt" --trainers 2 \
  --pservers "127.0.0.1:$port0,127.0.0.1:$port1" -o "$out/cluster" >/dev/null
# shellcheck disable=SC2046
"$rill" launch "$out/cluster" --deadline-ms 30000 -- $(feeds "_{trainer}") --iterations "$iterations" \
  $fetches --save "$out/cluster/trainer_{trainer}" | grep avg_cost

"$python" - "$out" "$tolerance" <<'PY'
import sys
import numpy as np
out, tol = sys.argv[1], float(sys.argv[2])
worst = 0.0
for t in (0, 1):
    for name in ("emb", "fc1_w", "fc2_w"):
        a = np.load("%s/cluster/trainer_%d/%s.npy" % (out, t, name)).astype(np.float64)
        b = np.load("%s/single/%s.npy" % (out, name)).astype(np.float64)
        worst = max(worst, float(((a - b) ** 2).max()))
print("max squared difference from single-process training: %.3g" % worst)
sys.exit(0 if worst <= tol else 1)
PY
echo "PASS: sparse parameter-server training matches single-process training"
