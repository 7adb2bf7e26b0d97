"""`rill launch DIR --profile P`: fit_a_line on 2 pservers and 2 trainers over gRPC writes one
trace per process, each under its own process id and name, on one clock: the trainers' send
ops (their RPCs to the pservers) and the pservers' optimize blocks line up in time.

    /usr/bin/python3 cluster_traces.py RILL SOURCE_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fit_a_line_cluster import make_cluster, run_rill  # noqa: E402

rill, source, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
ITERATIONS = 5


data, cluster = make_cluster(rill, source, out)
profiles = os.path.join(out, "profiles")
run_rill(rill, "launch", cluster, "--deadline-ms", "60000", "--profile", profiles, "--", "--feed",
    "x=%s/x_{trainer}.npy" % data, "--feed", "y=%s/y_{trainer}.npy" % data, "--iterations", str(ITERATIONS))

traces = {}
for name in sorted(os.listdir(profiles)):
    with open(os.path.join(profiles, name)) as f:
        traces[name] = json.load(f)["traceEvents"]
assert sorted(traces) == ["pserver.0.json", "pserver.1.json", "trainer.0.json", "trainer.1.json"], sorted(traces)
pids = set()
for name, events in traces.items():
    meta = next(e for e in events if e.get("name") == "process_name")
    program = "pserver_%s.pbtxt" % name.split(".")[1] if name.startswith("pserver") else "trainer.pbtxt"
    assert meta["args"]["name"] == "rill run " + program, (name, meta)
    assert all(e["pid"] == meta["pid"] for e in events), name
    pids.add(meta["pid"])
assert len(pids) == 4, pids

sends = {n: [e for e in ev if e["ph"] == "X" and e["name"] == "send"] for n, ev in traces.items() if "trainer" in n}
assert all(len(s) == ITERATIONS for s in sends.values()), {n: len(s) for n, s in sends.items()}
for name in ("pserver.0.json", "pserver.1.json"):
    spans = [e for e in traces[name] if e["ph"] == "X"]
    serve = [e for e in spans if e["name"] == "listen_and_serv"]
    updates = [e for e in spans if e["name"] == "sgd" and e["args"]["block"] == 1]
    assert len(serve) == 1 and len(updates) == ITERATIONS, (name, len(serve), len(updates))
    # One clock: each update happens while the pserver serves, and within the trainers' run.
    first_send = min(e["ts"] for s in sends.values() for e in s)
    last_send_end = max(e["ts"] + e["dur"] for s in sends.values() for e in s)
    for u in updates:
        assert serve[0]["ts"] <= u["ts"] <= serve[0]["ts"] + serve[0]["dur"], (u, serve[0])
        assert first_send <= u["ts"] <= last_send_end, (u, first_send, last_send_end)
# The transport's own spans (abi.h version 2, trace_span): each trainer's RPCs, with their
# bytes, and each pserver's waits at the barrier.
for name in ("trainer.0.json", "trainer.1.json"):
    rpcs = [e for e in traces[name] if e["ph"] == "X" and e.get("cat") == "rpc"]
    kinds = set(e["name"].split()[0] for e in rpcs)
    # The startup's pull of the parameters, then a step a pserver an iteration (gradients,
    # barrier and pulls in one call).
    assert kinds == {"GetVariable", "Step"}, (name, kinds)
    assert all(re.match(r"\d+ bytes out, \d+ bytes in", e["args"]["detail"]) for e in rpcs), rpcs[0]
    steps = [e for e in rpcs if e["name"].startswith("Step ")]
    assert len(steps) == 2 * ITERATIONS, (name, len(steps))  # one per pserver per iteration
for name in ("pserver.0.json", "pserver.1.json"):
    waits = [e for e in traces[name] if e["ph"] == "X" and e.get("cat") == "barrier"]
    assert [e["args"]["detail"] for e in waits] == ["iteration %d" % k for k in range(1, ITERATIONS + 1)], waits
# Over MPI (under one mpirun): each process's transfers are spans with their bytes. MPI
# carries the bytes of tensors of 64 KiB and more (smaller ones ride in the gRPC step), so
# this cluster trains a linear model of 16,384 inputs on one pserver.
if shutil.which("mpirun") and os.path.exists(os.path.join(os.path.dirname(rill), "..", "lib", "rill", "plugins",
                                                          "librill_dist_mpi.so")):
    import numpy as np
    wide = os.path.join(out, "wide")
    os.makedirs(wide, exist_ok=True)
    w = 'vars { name: "w" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 ' \
        'dims: 16384 dims: 1 } } } }'
    with open(os.path.join(wide, "model.pbtxt"), "w") as f:
        f.write('blocks { idx: 0 parent_idx: -1 %s\n'
                'ops { type: "mul" inputs { parameter: "X" arguments: "x" } inputs { parameter: "Y" arguments: "w" } '
                'outputs { parameter: "Out" arguments: "xw" } }\n'
                'ops { type: "elementwise_sub" inputs { parameter: "X" arguments: "xw" } '
                'inputs { parameter: "Y" arguments: "y" } outputs { parameter: "Out" arguments: "err" } }\n'
                'ops { type: "square" inputs { parameter: "X" arguments: "err" } '
                'outputs { parameter: "Out" arguments: "sq" } }\n'
                'ops { type: "mean" inputs { parameter: "X" arguments: "sq" } '
                'outputs { parameter: "Out" arguments: "avg_cost" } } }\n' % w)
    with open(os.path.join(wide, "startup.pbtxt"), "w") as f:
        f.write('blocks { idx: 0 parent_idx: -1 %s\nops { type: "fill_constant" outputs { parameter: "Out" '
                'arguments: "w" } attrs { name: "shape" type: INTS ints: 16384 ints: 1 } '
                'attrs { name: "value" type: FLOAT f: 0 } } }\n' % w)
    rng = np.random.RandomState(0)
    for t in range(2):
        np.save(os.path.join(wide, "x_%d.npy" % t), rng.randn(4, 16384).astype("float32"))
        np.save(os.path.join(wide, "y_%d.npy" % t), rng.randn(4, 1).astype("float32"))
    run_rill(rill, "backward", os.path.join(wide, "model.pbtxt"), "--loss", "avg_cost", "--sgd", "0.001", "-o",
             os.path.join(wide, "train.pbtxt"))
    mpi_cluster = os.path.join(out, "mpi_cluster")
    run_rill(rill, "transpile", os.path.join(wide, "train.pbtxt"), "--startup", os.path.join(wide, "startup.pbtxt"),
             "--trainers", "2", "--pservers", "127.0.0.1:1", "--transport", "mpi", "-o", mpi_cluster)
    mpi_profiles = os.path.join(out, "mpi_profiles")
    shutil.rmtree(mpi_profiles, ignore_errors=True)  # an earlier run's, of another cluster
    run_rill(rill, "launch", mpi_cluster, "--deadline-ms", "60000", "--profile", mpi_profiles, "--", "--feed",
             "x=%s/x_{trainer}.npy" % wide, "--feed", "y=%s/y_{trainer}.npy" % wide, "--iterations",
             str(ITERATIONS))
    for name in sorted(os.listdir(mpi_profiles)):
        with open(os.path.join(mpi_profiles, name)) as f:
            spans = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X" and e.get("cat") == "mpi"]
        assert len(spans) >= ITERATIONS and all(re.match(r"\d+ bytes$", e["args"]["detail"]) for e in spans), \
            (name, spans[:2])
    mpi_note = "; over MPI, transfers with their bytes"
else:
    mpi_note = "; MPI not checked (no mpirun or no dist_mpi plugin)"
print("PASS: 4 traces, one per process, on one clock: %d sends per trainer, %d updates per pserver%s" %
      (ITERATIONS, ITERATIONS, mpi_note))
