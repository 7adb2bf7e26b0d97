"""fit_a_line as a transpiled cluster of 2 pservers and 2 trainers on loopback, for the
tests of `rill launch`: its data shards, training program and cluster directory."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from loopback_ports import free_ports  # noqa: E402


def run_rill(rill, *args):
    result = subprocess.run([rill] + list(args), capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, (args, result.stderr)
    return result


def make_cluster(rill, source, out, transport="grpc"):
    """Writes OUT/data (x_J.npy, y_J.npy per trainer) and OUT/cluster, transpiled for
    `transport`; returns both paths."""
    example = os.path.join(source, "examples", "fit_a_line")
    data = os.path.join(out, "data")
    run_rill(rill, "run", os.path.join(example, "data.pbtxt"), "--fetch", "x", "--fetch", "y", "--save", data)
    run_rill(rill, "run", os.path.join(example, "shard.pbtxt"), "--feed", "x=%s/x.npy" % data, "--feed",
             "y=%s/y.npy" % data, "--fetch", "x_0", "--fetch", "x_1", "--fetch", "y_0", "--fetch", "y_1",
             "--save", data)
    train = os.path.join(out, "train.pbtxt")
    run_rill(rill, "backward", os.path.join(example, "model.pbtxt"), "--loss", "avg_cost", "--sgd", "0.1", "-o",
             train)
    endpoints = ",".join("127.0.0.1:%d" % port for port in free_ports(2))
    cluster = os.path.join(out, "cluster")
    run_rill(rill, "transpile", train, "--startup", os.path.join(example, "startup.pbtxt"), "--trainers", "2",
             "--pservers", endpoints, "--transport", transport, "-o", cluster)
    return data, cluster
