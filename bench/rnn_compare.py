"""rill.fluid's recurrent layers against PyTorch's on packed sequences, forward and backward:
one training step's gradients (no optimizer) of an fc projection and dynamic_lstm
(use_peepholes=False, which nn.LSTM matches) or dynamic_gru, against nn.LSTM / nn.GRU over
the same packed batch. Batch 32 of lengths 10 to 100, input and hidden 512, fp32; both sides
with 2 threads, PyTorch in a process of its own (Rill's OpenMP threads, spinning after
their regions, would take the cores of PyTorch's BLAS threads); medians over ROUNDS.

    PYTHONPATH=build/python /usr/bin/python3 bench/rnn_compare.py [ROUNDS]

Prints a Markdown table; a ratio below 1 means Rill is faster.
"""
import statistics
import subprocess
import sys

import numpy as np
import torch

from timing import per_call

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
E = D = 512
torch.set_num_threads(2)
rng = np.random.RandomState(0)
LENGTHS = [int(n) for n in rng.randint(10, 101, size=32)]
X = rng.uniform(-1, 1, (sum(LENGTHS), E)).astype("float32")


def rill_step(kind):
    import rill.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[E], dtype="float32", lod_level=1)
        if kind == "lstm":
            hidden, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(x, 4 * D, bias_attr=False), 4 * D,
                                                  use_peepholes=False)
        else:
            hidden = fluid.layers.dynamic_gru(fluid.layers.fc(x, 3 * D, bias_attr=False), D)
        loss = fluid.layers.mean(hidden)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": fluid.create_lod_tensor(X, [LENGTHS], fluid.CPUPlace())}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss])


def torch_step(kind):
    net = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(E, D)
    offsets = np.cumsum([0] + LENGTHS)
    seqs = [torch.from_numpy(X[offsets[i]:offsets[i + 1]]) for i in range(len(LENGTHS))]

    def step():
        net.zero_grad()
        out, _ = net(torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False))
        out.data.mean().backward()
    return step


def median_seconds(step):
    return statistics.median(per_call(step, min_seconds=1.0) for _ in range(ROUNDS))


def main():
    if sys.argv[2:3] == ["--torch"]:  # the peer's process: prints its medians
        print(" ".join(str(median_seconds(torch_step(kind))) for kind in ("lstm", "gru")))
        return
    peer = subprocess.run([sys.executable, __file__, str(ROUNDS), "--torch"], check=True, capture_output=True,
                          text=True).stdout.split()
    rows = [(kind, median_seconds(rill_step(kind)), float(t)) for kind, t in zip(("lstm", "gru"), peer)]
    print("| forward and backward, batch 32 of lengths 10-100, 512 | Rill ms | PyTorch ms | Rill / PyTorch |")
    print("|---|---|---|---|")
    for kind, r, t in rows:
        peer = "nn.LSTM" if kind == "lstm" else "nn.GRU"
        print("| dynamic_%s / %s | %.1f | %.1f | %.2f |" % (kind, peer, r * 1e3, t * 1e3, r / t))


if __name__ == "__main__":
    main()
