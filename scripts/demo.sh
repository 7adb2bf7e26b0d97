#!/usr/bin/env bash
# Rill's main job, end to end: install dependencies, build, run a program that uses the
# host's control flow (while, conditional_block) and the math plugin loaded from disk (in
# text and in binary form), then train Fluid's fit_a_line: backward pass appended by
# `rill backward`, SGD for 300 steps, trained weights checked against the true ones; train
# it again as a parameter-server cluster over gRPC (2 pservers, 2 trainers, `rill
# launch` on loopback) and check it matches; and run Go-style concurrency (channels,
# select, go blocks as tasks) with the csp plugin; then the same runtime from Python
# (rill.fluid): the select design document's Fibonacci, and recognize_digits' conv net.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCHMARKS=OFF
rill=build/bin/rill
echo "== plugins loaded"
$rill plugins
echo "== rill run examples/programs/sum_below.pbtxt (text)"
$rill run examples/programs/sum_below.pbtxt --fetch i --fetch sum
echo "== the same program saved as binary"
$rill convert examples/programs/sum_below.pbtxt -o build/sum_below.pb
$rill run build/sum_below.pb --fetch i --fetch sum
echo "== fit_a_line: linear regression trained by rill"
bash examples/fit_a_line/train.sh build/fit_a_line
echo "== fit_a_line: parameter-server training, 2 pservers + 2 trainers over gRPC, then over MPI (rill transpile, rill launch)"
TRANSPORTS="grpc mpi" bash examples/fit_a_line/train_dist.sh build/fit_a_line_dist
echo "== CSP: Fibonacci from a select inside while (examples/csp/fibonacci.pbtxt)"
$rill run examples/csp/fibonacci.pbtxt --fetch result
echo "== CSP: Go's daisy chain of 100,000 go blocks (examples/csp/daisy_chain.pbtxt)"
time $rill run examples/csp/daisy_chain.pbtxt --fetch result
echo "== Python (rill.fluid): the select design document's Fibonacci (examples/python/select_fibonacci.py)"
PYTHONPATH=build/python /usr/bin/python3 examples/python/select_fibonacci.py | tail -1
echo "== Python (rill.fluid): recognize_digits' conv net, trained, tested and saved (examples/python/recognize_digits.py)"
(cd build && PYTHONPATH=python /usr/bin/python3 ../examples/python/recognize_digits.py conv)
