"""rill.fluid from Python against its limits and PyTorch, in one process and one session,
interleaved round by round; medians over ROUNDS.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_compare.py [ROUNDS]

- Executor.run of a one-op program (scale of a [1] float32 feed, fetched), Python to Python,
  against a bare pybind11 call into the same extension (_rill.device_count: the
  binding's own cost) and PyTorch's eager call of one op (torch.mul on a [1] tensor).
- Training recognize_digits' conv net as the book writes it (batch 64, 28x28, Adam): steps
  per second of Executor.run against the same net in PyTorch (torch.set_num_threads(2),
  Rill's intra-op budget on these 2-core machines: one thread per core).
- A 64 MB float32 feed (a program that only feeds it): time per run against np.copyto of
  64 MB (a memcpy), for an array Rill borrows (rill.empty: 64-byte aligned) and one it must
  copy (numpy's own allocation), which costs a fresh allocation (huge pages, faulted in) and
  the copy.
Prints a Markdown table; ratios below 1 mean Rill is faster (or, for the feed, cheaper
than a copy).
Every process runs with glibc's malloc keeping freed memory (timing.keep_freed_memory).
"""
import statistics
import sys

import numpy as np
import torch
import torch.nn.functional as F

import rill
import rill.fluid as fluid
from rill import _rill
from model_compare import ConvNet  # the same net as the C++ book model's peer
from timing import keep_freed_memory, per_call

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
torch.set_num_threads(2)


def one_op():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        y = fluid.layers.scale(x, scale=3.0)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones(1, "float32")}
    t = torch.ones(1)
    return {
        "rill Executor.run, one op": lambda: exe.run(prog, feed=feed, fetch_list=[y]),
        "bare pybind11 call": lambda: _rill.device_count(1),
        "torch eager op": lambda: torch.mul(t, 3.0),
    }


def images(n, seed):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 1, 28, 28).astype("float32"), rng.randint(0, 10, (n, 1)).astype("int64")


def rill_training():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        c1 = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2,
                                             act="relu")
        c1 = fluid.layers.batch_norm(c1)
        c2 = fluid.nets.simple_img_conv_pool(input=c1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2,
                                             act="relu")
        prediction = fluid.layers.fc(input=c2, size=10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    scope = fluid.core.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    x, y = images(64, 1)
    return lambda: exe.run(main, feed={"img": x, "label": y}, fetch_list=[loss], scope=scope)


def torch_training():
    net = ConvNet()  # ends in softmax, as the book's conv net does
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    x, y = images(64, 1)
    x, y = torch.from_numpy(x), torch.from_numpy(y[:, 0])

    def step():
        opt.zero_grad()
        loss = F.nll_loss(torch.log(net(x)), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def big_feed():
    n = 64 * 1024 * 1024 // 4
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        fluid.layers.data(name="x", shape=[n], dtype="float32", append_batch_size=False)
        c = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
    exe = fluid.Executor(fluid.CPUPlace())
    borrowed = rill.empty(n, "float32")
    borrowed[:] = 1.0
    copied = np.ones(n, "float32")  # numpy's own allocation, 16-byte aligned: copied
    assert rill.is_borrowable(borrowed) and not rill.is_borrowable(copied)
    dst = np.empty_like(borrowed)
    return {
        "64 MB feed, rill.empty (borrowed)": lambda: exe.run(prog, feed={"x": borrowed}, fetch_list=[c]),
        "64 MB feed, np.ones (copied)": lambda: exe.run(prog, feed={"x": copied}, fetch_list=[c]),
        "np.copyto of 64 MB (memcpy)": lambda: np.copyto(dst, borrowed),
    }


def main():
    keep_freed_memory()
    cases = dict(one_op())
    cases["rill training step, conv net b64"] = rill_training()
    cases["torch training step, conv net b64"] = torch_training()
    cases.update(big_feed())
    times = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            times[name].append(per_call(fn))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print("| case | median per call | ratio |")
    print("|---|---|---|")
    ratios = {
        "rill Executor.run, one op": ("torch eager op", "vs torch eager op"),
        "bare pybind11 call": ("rill Executor.run, one op", "share of Executor.run"),
        "rill training step, conv net b64": ("torch training step, conv net b64", "vs PyTorch"),
        "64 MB feed, rill.empty (borrowed)": ("np.copyto of 64 MB (memcpy)", "vs memcpy"),
        "64 MB feed, np.ones (copied)": ("np.copyto of 64 MB (memcpy)", "vs memcpy"),
    }
    for name, m in med.items():
        ratio = ""
        if name in ratios:
            peer, what = ratios[name]
            ratio = "%.2f %s" % (m / med[peer], what)
        print("| %s | %.1f us | %s |" % (name, m * 1e6, ratio))
    print("\ntraining steps/s: rill %.1f, torch %.1f" % (1 / med["rill training step, conv net b64"],
                                                        1 / med["torch training step, conv net b64"]))


if __name__ == "__main__":
    main()
