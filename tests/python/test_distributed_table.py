"""Distributed lookup tables: an embedding looked up with is_distributed is row-sharded over
the pservers (`rill transpile`), trainers prefetch the rows their batch names and send back
those rows' gradients, and the table never exists whole on a trainer.

- word2vec (three lookups of one shared table) on 2 pservers and 2 trainers trains to the
  parameters of one process on the whole data: the fc weights each trainer ends with, and
  the table put together from the pservers' shards (their last checkpoint).
- A CTR-style net with a 10^7 x 64 fp32 table (2.5 GB) on 2 pservers and 2 trainers: each
  trainer's peak RSS stays under 500 MB (run on purpose: `ctest -L stress`, which sets
  RILL_LARGE_TABLE_ROWS; the default run trains the same net on a small table).
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_async_training import ROOT, RILL, rill  # noqa: E402
from test_distributed import free_ports, has_plugin  # noqa: E402

pytestmark = pytest.mark.skipif(not has_plugin("dist_grpc"), reason="the dist_grpc plugin is not built (no gRPC)")
ITERATIONS = 20
DISTRIBUTED = 'attrs { name: "is_sparse" type: BOOLEAN b: true } attrs { name: "is_distributed" type: BOOLEAN b: true }'


def word2vec_with_a_distributed_table(d):
    """word2vec's programs with its table looked up with is_distributed and initialized by a
    constant (a random initializer draws each shard on its pserver: other values than one
    process draws), and its data."""
    example = os.path.join(ROOT, "examples", "word2vec")
    subprocess.run([sys.executable, os.path.join(example, "data.py"), d], check=True, capture_output=True)
    model = open(os.path.join(example, "model.pbtxt")).read()
    assert model.count('attrs { name: "is_sparse" type: BOOLEAN b: true }') == 3
    with open(os.path.join(d, "model.pbtxt"), "w") as f:
        f.write(model.replace('attrs { name: "is_sparse" type: BOOLEAN b: true }', DISTRIBUTED))
    startup = open(os.path.join(example, "startup.pbtxt")).read()
    gaussian = re.search(r'ops \{ type: "gaussian_random" outputs \{ parameter: "Out" arguments: "emb" \}.*\n', startup)
    constant = ('ops { type: "fill_constant" outputs { parameter: "Out" arguments: "emb" } attrs { name: "shape" '
                'type: INTS ints: 20 ints: 8 } attrs { name: "value" type: FLOAT f: 0.25 } }\n')
    with open(os.path.join(d, "startup.pbtxt"), "w") as f:
        f.write(startup.replace(gaussian.group(0), constant))
    rill("backward", os.path.join(d, "model.pbtxt"), "--loss", "avg_cost", "--sgd", 0.5, "-o",
         os.path.join(d, "train.pbtxt"))


def checkpointed(pserver_program, checkpoint, out):
    """The variables a pserver's last checkpoint holds, as {name: array}: loaded by a program
    of one load_combine with the names the pserver's save_combine wrote, in its order."""
    text = open(pserver_program).read()
    saved = re.search(r'inputs \{\s*parameter: "X"((?:\s*arguments: "[^"]*")+)\s*\}\s*type: "save_combine"', text)
    names = re.findall(r'arguments: "([^"]*)"', saved.group(1))
    os.makedirs(out, exist_ok=True)
    program = os.path.join(out, "load.pbtxt")
    with open(program, "w") as f:
        f.write('blocks { idx: 0 parent_idx: -1 ops { type: "load_combine" outputs { parameter: "Out" %s } '
                'attrs { name: "file_path" type: STRING s: "%s" } } }\n'
                % (" ".join('arguments: "%s"' % n for n in names), checkpoint))
    args = [a for n in names for a in ("--fetch", n)]
    rill("run", program, *args, "--save", out)
    return {n: np.load(os.path.join(out, n + ".npy")) for n in names}


@pytest.mark.parametrize("transport", ["grpc", "mpi"])
def test_word2vec_with_its_table_sharded_over_two_pservers_trains_as_one_process(tmp_path, transport):
    if transport == "mpi" and (not has_plugin("dist_mpi") or shutil.which("mpirun") is None):
        pytest.skip("the dist_mpi plugin is not built, or there is no mpirun")
    d = str(tmp_path)
    word2vec_with_a_distributed_table(d)
    feeds = lambda suffix: [a for v in ("w1", "w2", "w3", "label") for a in ("--feed", "%s=%s/%s%s.npy" % (v, d, v, suffix))]
    fetched = ["--fetch", "emb", "--fetch", "fc1_w", "--fetch", "fc2_w"]
    rill("run", os.path.join(d, "train.pbtxt"), "--startup", os.path.join(d, "startup.pbtxt"), *feeds(""),
         "--iterations", ITERATIONS, *fetched, "--save", os.path.join(d, "single"))

    pservers = ["127.0.0.1:%d" % p for p in free_ports(2)]
    cluster = os.path.join(d, "cluster")
    placement = rill("transpile", os.path.join(d, "train.pbtxt"), "--startup", os.path.join(d, "startup.pbtxt"),
                     "--trainers", 2, "--pservers", ",".join(pservers), "-o", cluster, "--checkpoint-dir",
                     os.path.join(d, "ckpt"), "--checkpoint-every", ITERATIONS, "--transport", transport)
    assert re.findall(r"^emb -> (\S+)$", placement, re.M) == pservers, placement  # a shard on each
    trainer = open(os.path.join(cluster, "trainer.pbtxt")).read()
    prefetch = 'type: "prefetch"' if transport == "grpc" else 'type: "prefetch_mpi"'
    assert trainer.count(prefetch) == 1, "the three lookups share one prefetch"
    assert '"emb"' not in open(os.path.join(cluster, "trainer_startup.pbtxt")).read(), "the trainer never holds it"
    run = [*feeds("_{trainer}"), "--iterations", ITERATIONS, "--fetch", "fc1_w", "--fetch", "fc2_w", "--save",
           os.path.join(cluster, "trainer_{trainer}")]
    if transport == "grpc":
        rill("launch", cluster, "--deadline-ms", 60000, "--", *run)
    else:  # every process under one mpirun, each taking its part by its rank
        args = ["mpirun", "--oversubscribe", "-np", "4"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        r = subprocess.run(args + [RILL, "run", cluster] + [str(a) for a in run], capture_output=True, text=True,
                           timeout=240, env=dict(os.environ, RILL_RPC_DEADLINE_MS="60000"))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]

    single = {n: np.load(os.path.join(d, "single", n + ".npy")) for n in ("emb", "fc1_w", "fc2_w")}
    for t in range(2):
        for n in ("fc1_w", "fc2_w"):
            np.testing.assert_allclose(np.load(os.path.join(cluster, "trainer_%d" % t, n + ".npy")), single[n],
                                       rtol=0, atol=1e-5, err_msg="trainer %d's %s" % (t, n))
    emb = np.zeros_like(single["emb"])
    for s in range(2):
        shard = checkpointed(os.path.join(cluster, "pserver_%d.pbtxt" % s), os.path.join(d, "ckpt", "pserver_%d.ckpt" % s),
                             os.path.join(d, "shard_%d" % s))
        assert shard["@PSERVER_ITERATION@"].item() == ITERATIONS
        assert shard["emb"].shape == (10, 8)  # rows s, s + 2, ... of the 20
        emb[s::2] = shard["emb"]
    np.testing.assert_allclose(emb, single["emb"], rtol=0, atol=1e-5)
    assert np.abs(single["emb"] - 0.25).max() > 0.01  # it trained


def test_a_distributed_table_must_be_looked_up_sparsely(tmp_path):
    d = str(tmp_path)
    word2vec_with_a_distributed_table(d)
    model = open(os.path.join(d, "model.pbtxt")).read().replace(DISTRIBUTED, 'attrs { name: "is_distributed" type: BOOLEAN b: true }', 1)
    with open(os.path.join(d, "dense.pbtxt"), "w") as f:
        f.write(model)
    rill("backward", os.path.join(d, "dense.pbtxt"), "--loss", "avg_cost", "--sgd", 0.5, "-o", os.path.join(d, "t.pbtxt"))
    r = subprocess.run([RILL, "transpile", os.path.join(d, "t.pbtxt"), "--startup", os.path.join(d, "startup.pbtxt"),
                        "--trainers", "2", "--pservers", "127.0.0.1:1,127.0.0.1:2", "-o", os.path.join(d, "c")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "looks up distributed table 'emb' without is_distributed and is_sparse" in r.stderr, r.stderr


def test_a_killed_pserver_comes_back_with_its_shard_and_training_finishes(tmp_path):
    """Sync word2vec with its table sharded, checkpointing every iteration under `rill
    launch`: pserver 0 is killed once it checkpointed; launch starts it again, the trainers'
    prefetches and steps rejoin it, and the loss at the end is within 5% of an uninterrupted
    run's."""
    from test_pserver_restart import kill_once_checkpointed
    d = str(tmp_path)
    word2vec_with_a_distributed_table(d)
    params = ("fc1_w", "fc1_b", "fc2_w", "fc2_b")
    iterations = 300

    def train(name, kill):
        pservers = ["127.0.0.1:%d" % p for p in free_ports(2)]
        out, ckpt = os.path.join(d, name), os.path.join(d, name + "_ckpt")
        rill("transpile", os.path.join(d, "train.pbtxt"), "--startup", os.path.join(d, "startup.pbtxt"),
             "--trainers", 2, "--pservers", ",".join(pservers), "-o", out, "--checkpoint-dir", ckpt,
             "--checkpoint-every", 1)
        args = [RILL, "launch", out, "--deadline-ms", "60000", "--"]
        args += [a for v in ("w1", "w2", "w3", "label") for a in ("--feed", "%s=%s/%s_{trainer}.npy" % (v, d, v))]
        args += ["--iterations", str(iterations), "--save", os.path.join(out, "trainer_{trainer}")]
        args += [a for p in params for a in ("--fetch", p)]
        job = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if kill:
                kill_once_checkpointed(job, pservers[0], os.path.join(out, "pserver_0.pbtxt"), 20)
            _, stderr = job.communicate(timeout=300)
        finally:
            job.kill()
        assert job.returncode == 0, "\n".join(l for l in stderr.splitlines() if " it/s" not in l)[-3000:]
        if kill:
            assert "launch: pserver 0 died (killed by signal" in stderr, stderr[-2000:]
        emb = np.zeros((20, 8), np.float32)
        for s in range(2):
            shard = checkpointed(os.path.join(out, "pserver_%d.pbtxt" % s), os.path.join(ckpt, "pserver_%d.ckpt" % s),
                                 os.path.join(out, "shard_%d" % s))
            emb[s::2] = shard["emb"]
        np.save(os.path.join(out, "emb.npy"), emb)
        trained = ["--feed", "emb=%s/emb.npy" % out]
        trained += [a for p in params for a in ("--feed", "%s=%s/trainer_0/%s.npy" % (p, out, p))]
        data = [a for v in ("w1", "w2", "w3", "label") for a in ("--feed", "%s=%s/%s.npy" % (v, d, v))]
        return float(rill("run", os.path.join(d, "model.pbtxt"), *data, *trained, "--fetch", "avg_cost").split()[-1])

    uninterrupted = train("plain", kill=False)
    interrupted = train("killed", kill=True)
    assert abs(interrupted - uninterrupted) <= 0.05 * uninterrupted, (interrupted, uninterrupted)


CTR_MODEL = '''blocks {
  idx: 0
  parent_idx: -1
  vars { name: "emb" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: %(rows)d dims: 64 } } } }
  vars { name: "fc_w" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 64 dims: 1 } } } }
  vars { name: "ids" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: -1 dims: 1 } } } }
  vars { name: "y" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 1 } } } }
  ops { type: "lookup_table" inputs { parameter: "W" arguments: "emb" } inputs { parameter: "Ids" arguments: "ids" } outputs { parameter: "Out" arguments: "e" } %(distributed)s }
  ops { type: "mul" inputs { parameter: "X" arguments: "e" } inputs { parameter: "Y" arguments: "fc_w" } outputs { parameter: "Out" arguments: "p" } }
  ops { type: "elementwise_sub" inputs { parameter: "X" arguments: "p" } inputs { parameter: "Y" arguments: "y" } outputs { parameter: "Out" arguments: "d" } }
  ops { type: "square" inputs { parameter: "X" arguments: "d" } outputs { parameter: "Out" arguments: "se" } }
  ops { type: "mean" inputs { parameter: "X" arguments: "se" } outputs { parameter: "Out" arguments: "avg_cost" } }
}
'''
CTR_STARTUP = '''blocks {
  idx: 0
  parent_idx: -1
  vars { name: "emb" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: %(rows)d dims: 64 } } } }
  vars { name: "fc_w" persistable: true type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 64 dims: 1 } } } }
  ops { type: "uniform_random" outputs { parameter: "Out" arguments: "emb" } attrs { name: "shape" type: INTS ints: %(rows)d ints: 64 } attrs { name: "min" type: FLOAT f: -0.01 } attrs { name: "max" type: FLOAT f: 0.01 } attrs { name: "seed" type: INT i: 1 } }
  ops { type: "fill_constant" outputs { parameter: "Out" arguments: "fc_w" } attrs { name: "shape" type: INTS ints: 64 ints: 1 } attrs { name: "value" type: FLOAT f: 0.5 } }
}
'''


def test_trainers_of_a_table_sharded_over_the_pservers_never_hold_it(tmp_path):
    rows = int(os.environ.get("RILL_LARGE_TABLE_ROWS", "100000"))
    d = str(tmp_path)
    with open(os.path.join(d, "model.pbtxt"), "w") as f:
        f.write(CTR_MODEL % {"rows": rows, "distributed": DISTRIBUTED})
    with open(os.path.join(d, "startup.pbtxt"), "w") as f:
        f.write(CTR_STARTUP % {"rows": rows})
    rng = np.random.RandomState(0)
    for t in range(2):
        np.save(os.path.join(d, "ids_%d.npy" % t), rng.randint(0, rows, size=(4096, 1)).astype(np.int64))
        np.save(os.path.join(d, "y_%d.npy" % t), rng.rand(4096, 1).astype(np.float32))
    rill("backward", os.path.join(d, "model.pbtxt"), "--loss", "avg_cost", "--sgd", 0.5, "-o",
         os.path.join(d, "train.pbtxt"))
    pservers = ["127.0.0.1:%d" % p for p in free_ports(2)]
    cluster = os.path.join(d, "cluster")
    rill("transpile", os.path.join(d, "train.pbtxt"), "--startup", os.path.join(d, "startup.pbtxt"), "--trainers", 2,
         "--pservers", ",".join(pservers), "-o", cluster)
    env = dict(os.environ, RILL_RPC_DEADLINE_MS="300000")
    procs = [subprocess.Popen([RILL, "run", os.path.join(cluster, "pserver_%d.pbtxt" % s), "--startup",
                               os.path.join(cluster, "pserver_%d_startup.pbtxt" % s)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for s in range(2)]
    trainers = [subprocess.Popen([RILL, "run", os.path.join(cluster, "trainer.pbtxt"), "--startup",
                                  os.path.join(cluster, "trainer_startup.pbtxt"), "--feed",
                                  "ids=%s/ids_%d.npy" % (d, t), "--feed", "y=%s/y_%d.npy" % (d, t), "--iterations",
                                  "5", "--fetch", "avg_cost"], env=dict(env, RILL_TRAINER_ID=str(t)),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for t in range(2)]
    peaks, outputs = [], []
    try:
        for p in trainers + procs:
            # The output first (a full pipe would stall the process), then its own rusage.
            outputs.append(p.stdout.read())
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            peaks.append(usage.ru_maxrss / 1024.0)
    finally:
        for p in trainers + procs:
            if p.returncode is None:
                p.kill()
    for p, out in zip(trainers + procs, outputs):
        assert p.returncode == 0, out
    table_mb = rows * 64 * 4 / 2.0 ** 20
    print("table %.0f MB; peak RSS: trainers %.0f, %.0f MB; pservers %.0f, %.0f MB" % ((table_mb,) + tuple(peaks)))
    for t in range(2):
        assert peaks[t] < 500, "trainer %d peaked at %.0f MB (the table is %.0f MB)" % (t, peaks[t], table_mb)
    losses = [float(re.findall(r"avg_cost fp32 \[1\] (\S+)", out)[-1]) for out in outputs[:2]]
    assert all(np.isfinite(losses)), losses


def test_fluids_embedding_with_is_distributed_is_sharded_by_fluids_transpiler():
    import rill.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        emb = fluid.layers.embedding(ids, size=[1000, 16], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="table"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6174,127.0.0.1:6175", trainers=2)
    trainer = t.get_trainer_program().global_block().ops
    prefetch = [op for op in trainer if op.type == "prefetch"]
    assert len(prefetch) == 1 and prefetch[0].output("Out") == ["table"]
    assert prefetch[0].attr("shape") == [1000, 16]
    send = [op for op in trainer if op.type == "send"][0]
    assert send.input("ShardedX") == ["table@GRAD"] and "table" not in send.output("Out")
    for endpoint in ("127.0.0.1:6174", "127.0.0.1:6175"):
        table = t.get_pserver_program(endpoint).global_block().var("table")
        assert list(table.shape) == [500, 16]  # its rows of the 1000
