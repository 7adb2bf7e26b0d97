"""Asynchronous parameter-server training (`rill transpile --mode async`, and with
`--max-staleness`): 2 pservers and 2 trainers on loopback over gRPC train fit_a_line (dense
gradients) and word2vec (its embedding's sparse gradients) to a final loss within 10% of
synchronous training's after the same samples (each trainer the same iterations on its half
of the data), the loss taken over the whole data at the trained parameters. `rill status`
names the mode; fluid's DistributeTranspiler transpiles for it."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import rill.fluid as fluid

sys.path.insert(0, os.path.dirname(__file__))
from test_distributed import free_ports, has_plugin  # noqa: E402

RILL = os.environ.get("RILL_BINARY", "rill")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
pytestmark = pytest.mark.skipif(not has_plugin("dist_grpc"), reason="the dist_grpc plugin is not built (no gRPC)")


def rill(*args):
    r = subprocess.run([RILL] + [str(a) for a in args], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
    return r.stdout


def fit_a_line(d):
    """(startup, train program, {feed: (whole, shard of {trainer})}, parameters, learning rate)"""
    example = os.path.join(ROOT, "examples", "fit_a_line")
    rill("run", os.path.join(example, "data.pbtxt"), "--fetch", "x", "--fetch", "y", "--save", d)
    rill("run", os.path.join(example, "shard.pbtxt"), "--feed", "x=%s/x.npy" % d, "--feed", "y=%s/y.npy" % d,
         "--fetch", "x_0", "--fetch", "x_1", "--fetch", "y_0", "--fetch", "y_1", "--save", d)
    feeds = {v: ("%s/%s.npy" % (d, v), "%s/%s_{trainer}.npy" % (d, v)) for v in ("x", "y")}
    return os.path.join(example, "startup.pbtxt"), os.path.join(example, "model.pbtxt"), feeds, ("w", "b"), 0.1


def word2vec(d):
    example = os.path.join(ROOT, "examples", "word2vec")
    subprocess.run([sys.executable, os.path.join(example, "data.py"), d], check=True)
    feeds = {v: ("%s/%s.npy" % (d, v), "%s/%s_{trainer}.npy" % (d, v)) for v in ("w1", "w2", "w3", "label")}
    return (os.path.join(example, "startup.pbtxt"), os.path.join(example, "model.pbtxt"), feeds,
            ("emb", "fc1_w", "fc1_b", "fc2_w", "fc2_b"), 0.5)


def final_loss(tmp_path, model, iterations, mode=()):
    """Trains `model` on 2 pservers and 2 trainers for `iterations` each in `mode` (rill
    transpile's options); returns the loss over the whole data at the trained parameters.
    Synchronous trainers end with the same parameters. Asynchronous ones need not: the
    trainer whose last step was answered last holds every update (one that finished first
    misses the other's later ones), which cannot be told from outside, so the lower of the
    two trainers' losses stands for it."""
    startup, forward, feeds, params, lr = model
    name = "_".join(["sync"] + [str(m).lstrip("-") for m in mode])
    out = tmp_path / name
    train = tmp_path / "train.pbtxt"
    rill("backward", forward, "--loss", "avg_cost", "--sgd", lr, "-o", train)
    pservers = ",".join("127.0.0.1:%d" % p for p in free_ports(2))
    rill("transpile", train, "--startup", startup, "--trainers", 2, "--pservers", pservers, "-o", out, *mode)
    args = [a for v, (_, shard) in feeds.items() for a in ("--feed", "%s=%s" % (v, shard))]
    args += [a for p in params for a in ("--fetch", p)]
    rill("launch", out, "--deadline-ms", 60000, "--", *args, "--iterations", iterations, "--save",
         str(out / "trainer_{trainer}"))
    data = [a for v, (whole, _) in feeds.items() for a in ("--feed", "%s=%s" % (v, whole))]
    losses = []
    for t in range(2):
        trained = [a for p in params for a in ("--feed", "%s=%s/trainer_%d/%s.npy" % (p, out, t, p))]
        losses.append(float(rill("run", forward, *data, *trained, "--fetch", "avg_cost").split()[-1]))
    if not mode:
        assert losses[0] == losses[1], losses
    return min(losses)


def initial_loss(tmp_path, model):
    startup, forward, feeds, params, _ = model
    args = [a for v, (whole, _) in feeds.items() for a in ("--feed", "%s=%s" % (v, whole))]
    return float(rill("run", forward, "--startup", startup, *args, "--fetch", "avg_cost").split()[-1])


@pytest.mark.parametrize("name,iterations", [("fit_a_line", 20), ("word2vec", 300)])
def test_async_training_reaches_the_loss_of_sync_training_on_the_same_samples(tmp_path, name, iterations):
    model = {"fit_a_line": fit_a_line, "word2vec": word2vec}[name](str(tmp_path / "data"))
    start = initial_loss(tmp_path, model)
    sync = final_loss(tmp_path, model, iterations)
    assert sync < 0.5 * start, (start, sync)  # it trained
    for mode in (["--mode", "async"], ["--mode", "async", "--max-staleness", 1]):
        loss = final_loss(tmp_path, model, iterations, mode)
        assert loss <= 1.1 * sync, (mode, start, sync, loss)


def test_rill_status_names_the_mode(tmp_path):
    model = fit_a_line(str(tmp_path / "data"))
    startup, forward, _, _, lr = model
    train = tmp_path / "train.pbtxt"
    rill("backward", forward, "--loss", "avg_cost", "--sgd", lr, "-o", train)
    endpoint = "127.0.0.1:%d" % free_ports(1)[0]
    rill("transpile", train, "--startup", startup, "--trainers", 1, "--pservers", endpoint, "-o", tmp_path / "c",
         "--mode", "async", "--max-staleness", 2)
    server = subprocess.Popen([RILL, "run", str(tmp_path / "c" / "pserver_0.pbtxt"), "--startup",
                               str(tmp_path / "c" / "pserver_0_startup.pbtxt")], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=dict(os.environ, RILL_RPC_DEADLINE_MS="60000"))
    try:
        give_up = time.monotonic() + 60
        while True:  # until the pserver listens
            r = subprocess.run([RILL, "status", endpoint], capture_output=True, text=True, timeout=60)
            if r.returncode == 0 or time.monotonic() > give_up:
                break
        assert r.returncode == 0, r.stderr
        assert "  training: async, staleness at most 2\n" in r.stdout, r.stdout
    finally:
        server.kill()
        server.communicate()


def test_fluids_transpiler_takes_sync_mode_false_and_the_config():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)

    def modes(t):
        serve = [op for op in t.get_pserver_program("127.0.0.1:6174").global_block().ops
                 if op.type == "listen_and_serv"][0]
        send = [op for op in t.get_trainer_program().global_block().ops if op.type == "send"][0]
        return serve.attr("sync_mode"), send.attr("sync_mode"), serve.attr("max_staleness")

    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, trainers=2, sync_mode=False)
    assert modes(t) == (False, False, -1)
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = False
    config.max_staleness = 3
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, startup_program=startup, trainers=2)
    assert modes(t) == (False, False, 3)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, trainers=2)
    assert modes(t)[:2] == (True, True)
    config = fluid.DistributeTranspilerConfig()
    config.max_staleness = 3
    with pytest.raises(ValueError, match="bounds asynchronous training"):
        fluid.DistributeTranspiler(config=config).transpile(0, program=main, startup_program=startup, trainers=2)
    config = fluid.DistributeTranspilerConfig()
    config.mode = "nccl2"
    with pytest.raises(NotImplementedError, match="mode = 'nccl2'"):
        fluid.DistributeTranspiler(config=config).transpile(0, program=main, startup_program=startup, trainers=2)


@pytest.mark.parametrize("options,message", [
    (["--mode", "bogus"], "--mode is sync or async, got 'bogus'"),
    (["--max-staleness", "3"], "--max-staleness bounds asynchronous training: give it with --mode async"),
    (["--mode", "async", "--max-staleness", "-2"], "--max-staleness takes a non-negative integer, got '-2'"),
    (["--checkpoint-every", "3"], "--checkpoint-every needs --checkpoint-dir"),
])
def test_rill_transpile_refuses_options_that_do_not_fit(tmp_path, options, message):
    r = subprocess.run([RILL, "transpile", "train.pbtxt", "--startup", "s.pbtxt", "--trainers", "2", "--pservers",
                        "127.0.0.1:1", "-o", str(tmp_path / "c")] + options, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr, r.stderr
