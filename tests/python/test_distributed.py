"""A transpiled job: examples/python/fit_a_line_dist.py as 2 pservers and 2 trainers (four
Python processes on loopback, over gRPC; and under mpirun over MPI) trains to the same
weights as the same steps in one process, with every optimizer Rill ships, with
regularization and with each kind of gradient clipping."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rill
import rill.fluid as fluid

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
SCRIPT = os.path.join(EXAMPLES, "python", "fit_a_line_dist.py")
sys.path.insert(0, EXAMPLES)
from loopback_ports import free_ports  # noqa: E402,F401 (other tests import it from here)


def has_plugin(name):
    return any(p["name"] == name for p in __import__("rill").plugins())


# (--optimizer, --regularization, --clip): each optimizer alone, then regularization and
# each clip, which must run on the averaged gradient to match one process.
TRAININGS = [(o, None, None) for o in ("sgd", "momentum", "adam", "adagrad", "decayed_adagrad", "rmsprop",
                                       "adamax", "adadelta")] + \
    [("adam", "l2", None), ("sgd", "l1", None), ("momentum", None, "value"), ("adam", None, "norm"),
     ("rmsprop", "l2", "global_norm")]


def training_args(training):
    optimizer, regularization, clip = training
    args = ["--optimizer", optimizer]
    if regularization:
        args += ["--regularization", regularization]
    if clip:
        args += ["--clip", clip]
    return args


def training_id(training):
    return "-".join(t for t in training if t)


def pserver_count(training):
    """Clipping by global norm reads every gradient, so its parameters are one group on one
    pserver; the transpiler refuses more pservers than groups."""
    return 1 if training[2] == "global_norm" else 2


def single_process_weights(tmp_path, extra=()):
    single = subprocess.run([sys.executable, SCRIPT, "single", "--trainers", "2", "--out",
                             str(tmp_path / "w.npy")] + list(extra), capture_output=True, text=True, timeout=120)
    assert single.returncode == 0, single.stderr
    return np.load(str(tmp_path / "w.npy"))


def assert_trainers_match_one_process(tmp_path, extra):
    w = single_process_weights(tmp_path, extra)
    for t in range(2):
        np.testing.assert_allclose(np.load(str(tmp_path / ("w_%d.npy" % t))), w, rtol=0, atol=1e-6)
    assert np.abs(w).max() > 0.1  # it trained


@pytest.mark.skipif(not has_plugin("dist_grpc"), reason="the dist_grpc plugin is not built (no gRPC)")
@pytest.mark.parametrize("training", TRAININGS, ids=training_id)
def test_two_pservers_two_trainers_match_one_process(tmp_path, training):
    endpoints = ",".join("127.0.0.1:%d" % p for p in free_ports(pserver_count(training)))
    env = dict(os.environ, RILL_RPC_DEADLINE_MS="60000")
    common = ["--pservers", endpoints, "--trainers", "2"] + training_args(training)
    procs = []
    for e in endpoints.split(","):
        procs.append(subprocess.Popen([sys.executable, SCRIPT, "pserver", e] + common, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for t in range(2):
        procs.append(subprocess.Popen([sys.executable, SCRIPT, "trainer", str(t)] + common +
                                      ["--out", str(tmp_path / ("w_%d.npy" % t))], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=240)
            outputs.append(out)
    finally:
        for p in procs:
            p.kill()
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out
    assert_trainers_match_one_process(tmp_path, training_args(training))


@pytest.mark.skipif(not has_plugin("dist_mpi") or shutil.which("mpirun") is None,
                    reason="the dist_mpi plugin is not built, or there is no mpirun")
@pytest.mark.parametrize("training", TRAININGS, ids=training_id)
def test_the_same_job_over_mpi_under_mpirun(tmp_path, training):
    endpoints = ",".join("127.0.0.1:%d" % p for p in free_ports(pserver_count(training)))
    args = ["mpirun", "--oversubscribe", "-np", str(pserver_count(training) + 2), "-x", "PYTHONPATH"]
    if os.geteuid() == 0:
        args.append("--allow-run-as-root")
    args += [sys.executable, SCRIPT, "mpi", "--pservers", endpoints, "--trainers", "2", "--transport", "mpi",
             "--out", str(tmp_path)] + training_args(training)
    result = subprocess.run(args, capture_output=True, text=True, timeout=240,
                            env=dict(os.environ, RILL_RPC_DEADLINE_MS="60000"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert_trainers_match_one_process(tmp_path, training_args(training))


def test_transpiler_programs():
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    cost = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(input=x, size=1), y))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(cost)
    for transport, serve in (("grpc", "listen_and_serv"), ("mpi", "listen_and_serv_mpi")):
        t = fluid.DistributeTranspiler(transport=transport)
        t.transpile(0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
        trainer_ops = [op.type for op in t.get_trainer_program().global_block().ops]
        assert "sgd" not in trainer_ops and trainer_ops[-1].startswith("send")
        ps = [t.get_pserver_program(e) for e in ("127.0.0.1:6170", "127.0.0.1:6171")]
        assert all(p.global_block().ops[-1].type == serve for p in ps)
        optimize = [op.type for p in ps for b in p.blocks[1:] for op in b.ops]
        assert optimize.count("sgd") == 2  # one parameter on each pserver
        assert t.get_startup_program("127.0.0.1:6170").global_block().ops
    with pytest.raises(ValueError, match="not one of the pservers"):
        t.get_pserver_program("127.0.0.1:1")
    with pytest.raises(ValueError, match="transport"):
        fluid.DistributeTranspiler(transport="carrier-pigeon")


def test_optimizer_state_clipping_and_regularization_move_with_their_optimizer():
    """Adam's beta-power updates (after the update) and clipping go to the parameter's
    pserver: a trainer keeps none of them and sends the backward pass's gradient."""
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    cost = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(input=x, size=1), y))
    fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(0.5))
    fluid.optimizer.Adam(learning_rate=0.1).minimize(cost)
    t = fluid.DistributeTranspiler()
    t.transpile(0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)
    trainer = t.get_trainer_program().global_block()
    assert not [op.type for op in trainer.ops if op.type in ("adam", "clip", "scale")]
    assert sorted(trainer.ops[-1].input("X")) == ["fc_0.b_0@GRAD", "fc_0.w_0@GRAD"]
    for e in ("127.0.0.1:6170", "127.0.0.1:6171"):
        optimize = [op for b in t.get_pserver_program(e).blocks[1:] for op in b.ops]
        types = [op.type for op in optimize]
        assert types[types.index("clip"):] == ["clip", "adam", "scale", "scale"], types
        written = [n for op in optimize if op.type == "scale" for n in op.output("Out")]
        assert sorted(n.rsplit("_", 1)[0] for n in written) == ["beta1_pow_acc", "beta2_pow_acc"], written


def test_more_pservers_than_parameter_groups_is_an_error():
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    cost = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(input=x, size=1), y))
    fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(1.0))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(cost)
    with pytest.raises(rill.Error, match=r"2 pservers for 1 group\(s\) of parameters: .*give at most 1 pserver"):
        fluid.DistributeTranspiler().transpile(0, pservers="127.0.0.1:6170,127.0.0.1:6171", trainers=2)

