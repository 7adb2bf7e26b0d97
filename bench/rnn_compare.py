"""rill.fluid's recurrent layers against PyTorch's on packed sequences, forward and backward:
one training step's gradients (no optimizer) of an fc projection and dynamic_lstm
(use_peepholes=False, which nn.LSTM matches), dynamic_lstmp (projection P, proj_activation
identity, which nn.LSTM's proj_size matches) or dynamic_gru, against nn.LSTM / nn.GRU over
the same packed batch. Batch 32 of lengths 10 to 100, input and hidden 512, fp32. Then the
book's understand_sentiment stacked-LSTM net (embedding 128 of a 5148-word dict, three fc +
dynamic_lstm layers of hidden 128, the middle one reversed, max-pooled, an fc softmax, Adagrad)
a whole training step, batch 128 of lengths 10 to 100, against the same net written in
PyTorch (TorchStackedNet; use_peepholes=False, the recurrence nn.LSTM runs). Both sides with 2 threads, PyTorch
in a process of its own (Rill's OpenMP threads, spinning after their regions, would take
the cores of PyTorch's BLAS threads); medians over ROUNDS.

    PYTHONPATH=build/python /usr/bin/python3 bench/rnn_compare.py [ROUNDS]

Prints a Markdown table; a ratio below 1 means Rill is faster.
Every process runs with glibc's malloc keeping freed memory (timing.keep_freed_memory).
"""
import statistics
import subprocess
import sys

import numpy as np
import torch

from timing import keep_freed_memory, per_call

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
E = D = 512
P = 128  # lstmp's projection
torch.set_num_threads(2)
rng = np.random.RandomState(0)
LENGTHS = [int(n) for n in rng.randint(10, 101, size=32)]
X = rng.uniform(-1, 1, (sum(LENGTHS), E)).astype("float32")
# The stacked net's batch: word ids and a label a review.
WORDS, EMB, HIDDEN, LAYERS = 5148, 128, 128, 3
REVIEWS = [int(n) for n in rng.randint(10, 101, size=128)]
IDS = rng.randint(0, WORDS, (sum(REVIEWS), 1)).astype("int64")
LABELS = rng.randint(0, 2, (len(REVIEWS), 1)).astype("int64")
KINDS = ("lstm", "lstmp", "gru", "stacked")


def rill_stacked_step():
    import rill.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(words, size=[WORDS, EMB], is_sparse=True)
        fc = fluid.layers.fc(emb, 4 * HIDDEN)
        lstm, _ = fluid.layers.dynamic_lstm(fc, 4 * HIDDEN, use_peepholes=False)
        for i in range(2, LAYERS + 1):
            fc = fluid.layers.fc([fc, lstm], 4 * HIDDEN)
            lstm, _ = fluid.layers.dynamic_lstm(fc, 4 * HIDDEN, use_peepholes=False, is_reverse=i % 2 == 0)
        pooled = [fluid.layers.sequence_pool(fc, "max"), fluid.layers.sequence_pool(lstm, "max")]
        prediction = fluid.layers.fc(pooled, 2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        fluid.optimizer.Adagrad(learning_rate=0.002).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"words": fluid.create_lod_tensor(IDS, [REVIEWS], fluid.CPUPlace()), "label": LABELS}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss])


class TorchStackedNet(torch.nn.Module):
    """The same net, written as Fluid's: each fc (one Linear of its inputs' concatenation)
    makes the gate sums its LSTM takes, and the recurrence adds h W and the LSTM's bias a
    step (nn.LSTM would project its input again with a W_ih of its own). A reversed layer
    runs each review from its last word (an index that flips each review). The recurrence
    runs on the padded [step, review, 4 * hidden] layout, every review each step: a review's
    steps after its end are never read, so the outputs and gradients are those of packed
    sequences."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(WORDS, EMB, sparse=True)
        self.fcs = torch.nn.ModuleList([torch.nn.Linear(EMB, 4 * HIDDEN)] + [
            torch.nn.Linear(4 * HIDDEN + HIDDEN, 4 * HIDDEN) for _ in range(LAYERS - 1)])
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(HIDDEN, 4 * HIDDEN) * 0.1) for _ in range(LAYERS)])
        self.biases = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(4 * HIDDEN)) for _ in range(LAYERS)])
        self.out = torch.nn.Linear(4 * HIDDEN + HIDDEN, 2)
        offsets = np.cumsum([0] + REVIEWS)
        self.flip = torch.from_numpy(np.concatenate([np.arange(offsets[i + 1] - 1, offsets[i] - 1, -1)
                                                     for i in range(len(REVIEWS))]))
        self.step = torch.from_numpy(np.concatenate([np.arange(n) for n in REVIEWS]))
        self.review = torch.from_numpy(np.concatenate([np.full(n, j) for j, n in enumerate(REVIEWS)]))

    def padded(self, rows, fill):
        out = torch.full((max(REVIEWS), len(REVIEWS), rows.shape[1]), fill, dtype=rows.dtype)
        return out.index_put((self.step, self.review), rows)

    def sequences(self, gates, layer, reverse):
        gates = self.padded(gates[self.flip] if reverse else gates, 0.0) + self.biases[layer]
        h = c = torch.zeros(len(REVIEWS), HIDDEN)
        hs = []
        for step_gates in gates.unbind(0):  # one gradient for all steps (indexing each would zero a whole one each)
            cand, i, f, o = (step_gates + h @ self.weights[layer]).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cand)
            h = torch.sigmoid(o) * torch.tanh(c)
            hs.append(h)
        flat = torch.stack(hs)[self.step, self.review]
        return flat[self.flip] if reverse else flat

    def forward(self, ids):
        fc = self.fcs[0](self.emb(ids))
        lstm = self.sequences(fc, 0, False)
        for i in range(2, LAYERS + 1):
            fc = self.fcs[i - 1](torch.cat([fc, lstm], 1))
            lstm = self.sequences(fc, i - 1, i % 2 == 0)
        pooled = [self.padded(t, float("-inf")).max(0).values for t in (fc, lstm)]
        return torch.log_softmax(self.out(torch.cat(pooled, 1)), 1)


def torch_stacked_step():
    net = TorchStackedNet()
    optimizer = torch.optim.Adagrad(net.parameters(), lr=0.002)  # takes the embedding's sparse gradient too
    ids, labels = torch.from_numpy(IDS[:, 0]), torch.from_numpy(LABELS[:, 0])

    def step():
        optimizer.zero_grad()
        torch.nn.functional.nll_loss(net(ids), labels).backward()
        optimizer.step()
    return step


def rill_step(kind):
    if kind == "stacked":
        return rill_stacked_step()
    import rill.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[E], dtype="float32", lod_level=1)
        if kind == "lstm":
            hidden, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(x, 4 * D, bias_attr=False), 4 * D,
                                                  use_peepholes=False)
        elif kind == "lstmp":
            hidden, _ = fluid.layers.dynamic_lstmp(fluid.layers.fc(x, 4 * D, bias_attr=False), 4 * D, P,
                                                   use_peepholes=False, proj_activation="identity")
        else:
            hidden = fluid.layers.dynamic_gru(fluid.layers.fc(x, 3 * D, bias_attr=False), D)
        loss = fluid.layers.mean(hidden)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": fluid.create_lod_tensor(X, [LENGTHS], fluid.CPUPlace())}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss])


def torch_step(kind):
    if kind == "stacked":
        return torch_stacked_step()
    net = torch.nn.GRU(E, D) if kind == "gru" else torch.nn.LSTM(E, D, proj_size=P if kind == "lstmp" else 0)
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
    keep_freed_memory()
    if sys.argv[2:3] == ["--torch"]:  # the peer's process: prints its medians
        print(" ".join(str(median_seconds(torch_step(kind))) for kind in KINDS))
        return
    peer = subprocess.run([sys.executable, __file__, str(ROUNDS), "--torch"], check=True, capture_output=True,
                          text=True).stdout.split()
    rows = [(kind, median_seconds(rill_step(kind)), float(t)) for kind, t in zip(KINDS, peer)]
    names = {"lstm": "dynamic_lstm / nn.LSTM, forward and backward, batch 32 of lengths 10-100, 512",
             "lstmp": "dynamic_lstmp / nn.LSTM(proj_size=%d), the same" % P,
             "gru": "dynamic_gru / nn.GRU, the same",
             "stacked": "understand_sentiment's stacked LSTM, a training step, batch 128 of lengths 10-100"}
    print("| step | Rill ms | PyTorch ms | Rill / PyTorch |")
    print("|---|---|---|---|")
    for kind, r, t in rows:
        print("| %s | %.1f | %.1f | %.2f |" % (names[kind], r * 1e3, t * 1e3, r / t))


if __name__ == "__main__":
    main()
