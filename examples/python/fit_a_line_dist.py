"""fit_a_line as parameter-server training, written as Fluid's distributed scripts were:
one script, its role chosen by the command line. DistributeTranspiler splits the training
program into trainer and pserver programs; `--transport` picks the plugin's ops (grpc or
mpi). Parameters start at 0 so that runs can be compared.

    python3 fit_a_line_dist.py pserver ENDPOINT --pservers E0,E1 --trainers 2
    python3 fit_a_line_dist.py trainer ID --pservers E0,E1 --trainers 2 --out w_ID.npy
    python3 fit_a_line_dist.py single --trainers 2 --out w.npy    # the same steps in one process
    mpirun -np 4 python3 fit_a_line_dist.py mpi --pservers E0,E1 --trainers 2 --transport mpi --out DIR
        # each rank takes its role from its rank, pservers first (as `rill launch` orders
        # them); trainer J writes DIR/w_J.npy

Every role takes the same `--optimizer` (sgd, momentum, adam, adagrad, decayed_adagrad,
rmsprop, adamax, adadelta), `--regularization` (l1, l2) and `--clip` (value, norm,
global_norm), so each distributed run has its one-process twin.

Trainer ID trains on shard ID of the data (64 rows each, the same every step), the single
process on all shards at once: with equal shards, sync training averages the trainers'
gradients into exactly the single process's.
"""
import argparse
import os

import numpy as np

import rill.fluid as fluid

STEPS = 50


def shard(i):
    rng = np.random.RandomState(100 + i)
    w_true = np.random.RandomState(7).randn(13, 1).astype("float32")
    x = rng.randn(64, 13).astype("float32")
    # y in float64, rounded once: the same data whichever BLAS numpy uses.
    return x, (x.astype("float64") @ w_true.astype("float64") + 0.5).astype("float32")


OPTIMIZERS = {
    "sgd": lambda **kw: fluid.optimizer.SGD(learning_rate=0.1, **kw),
    "momentum": lambda **kw: fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9, **kw),
    "adam": lambda **kw: fluid.optimizer.Adam(learning_rate=0.1, **kw),
    "adagrad": lambda **kw: fluid.optimizer.Adagrad(learning_rate=0.3, **kw),
    "decayed_adagrad": lambda **kw: fluid.optimizer.DecayedAdagrad(learning_rate=0.3, **kw),
    # epsilon well above g^2: with Fluid's 1e-6 the first steps divide tiny gradients by their
    # own size, which turns the last-bit difference between an average of the trainers'
    # gradients and one process's whole-batch gradient into a difference of 5e-5.
    "rmsprop": lambda **kw: fluid.optimizer.RMSProp(learning_rate=0.05, momentum=0.5, centered=True, epsilon=1e-2,
                                                    **kw),
    "adamax": lambda **kw: fluid.optimizer.Adamax(learning_rate=0.1, **kw),
    "adadelta": lambda **kw: fluid.optimizer.Adadelta(learning_rate=1.0, **kw),
}
REGULARIZERS = {"l1": lambda: fluid.regularizer.L1Decay(0.01), "l2": lambda: fluid.regularizer.L2Decay(0.01)}
CLIPS = {"value": lambda: fluid.clip.GradientClipByValue(0.5),
         "norm": lambda: fluid.clip.GradientClipByNorm(1.0),
         "global_norm": lambda: fluid.clip.GradientClipByGlobalNorm(1.0)}


def build(optimizer="sgd", regularization="", clip=""):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    zero = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.0))
    y_predict = fluid.layers.fc(input=x, size=1, act=None, param_attr=zero, bias_attr=zero)
    avg_cost = fluid.layers.mean(fluid.layers.square_error_cost(input=y_predict, label=y))
    if clip:
        fluid.clip.set_gradient_clip(CLIPS[clip]())
    regularizer = REGULARIZERS[regularization]() if regularization else None
    OPTIMIZERS[optimizer](regularization=regularizer).minimize(avg_cost)
    return avg_cost


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["pserver", "trainer", "single", "mpi"])
    parser.add_argument("who", nargs="?", default="")
    parser.add_argument("--pservers", default="")
    parser.add_argument("--trainers", type=int, default=2)
    parser.add_argument("--transport", default="grpc")
    parser.add_argument("--out", default="")
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    parser.add_argument("--regularization", choices=sorted(REGULARIZERS), default=None)
    parser.add_argument("--clip", choices=sorted(CLIPS), default=None)
    args = parser.parse_args()
    if args.role == "mpi":
        rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "-1")))
        endpoints = args.pservers.split(",")
        if rank < 0:
            parser.error("the mpi role runs under mpirun, which gives each process its rank")
        if rank < len(endpoints):
            args.role, args.who = "pserver", endpoints[rank]
        else:
            args.role, args.who = "trainer", str(rank - len(endpoints))
            args.out = os.path.join(args.out, "w_%s.npy" % args.who)
    avg_cost = build(args.optimizer, args.regularization, args.clip)
    exe = fluid.Executor(fluid.CPUPlace())
    if args.role == "single":
        exe.run(fluid.default_startup_program())
        shards = [shard(i) for i in range(args.trainers)]
        x = np.concatenate([s[0] for s in shards])
        y = np.concatenate([s[1] for s in shards])
        for _ in range(STEPS):
            exe.run(feed={"x": x, "y": y}, fetch_list=[avg_cost])
        np.save(args.out, fluid.fetch_var("fc_0.w_0"))
        return
    t = fluid.DistributeTranspiler(transport=args.transport)
    trainer_id = int(args.who) if args.role == "trainer" else 0
    t.transpile(trainer_id, pservers=args.pservers, trainers=args.trainers)
    if args.role == "pserver":
        exe.run(t.get_startup_program(args.who))
        exe.run(t.get_pserver_program(args.who))  # serves until every trainer is done
        return
    os.environ["RILL_TRAINER_ID"] = str(trainer_id)
    exe.run(t.get_trainer_startup_program())
    trainer_program = t.get_trainer_program()
    x, y = shard(trainer_id)
    for _ in range(STEPS):
        loss, = exe.run(trainer_program, feed={"x": x, "y": y}, fetch_list=[avg_cost])
    np.save(args.out, fluid.fetch_var("fc_0.w_0"))
    print("trainer %d: loss %.6f" % (trainer_id, loss[0]))
    exe.close()  # tells the pservers this trainer is done


if __name__ == "__main__":
    main()
