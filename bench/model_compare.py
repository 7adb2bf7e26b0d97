"""The book models through Rill (build/bin/rill_bench_model) against the same nets in
PyTorch, in one session, interleaved round by round, with the same thread count.

    /usr/bin/python3 bench/model_compare.py BUILD_DIR [THREADS] [ROUNDS]

PyTorch: Debian's python3-torch (1.13, oneDNN 2.6.3 inside), torch.set_num_threads(THREADS);
Rill: OMP_NUM_THREADS=THREADS (its intra-op budget). Inference: Rill serves the model
saved as save_inference_model does through core::Model; PyTorch runs the module in eval
mode under torch.no_grad(). Training: one step (forward, cross entropy, backward, Adam)
of the training program through Rill's executor, of loss.backward() and torch.optim.Adam
in PyTorch. Each side reports the median over ROUNDS of its mean time per iteration;
peak RSS is each process's own (PyTorch's includes the interpreter and libtorch). Both
run with glibc's malloc keeping freed memory (timing.keep_freed_memory).
Also one layer: conv2d 3x3, 64 -> 64 channels, 56x56, batch 8, padding 1 (Rill:
rill_bench_math's BM_RillConv2d; PyTorch: torch.nn.functional.conv2d).
Prints a Markdown table with Rill / PyTorch ratios (below 1: Rill is faster).
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from timing import keep_freed_memory


class ConvNet(nn.Module):
    """recognize_digits' conv net as examples/book_models writes it."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.bn = nn.BatchNorm2d(20)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc = nn.Linear(800, 10)

    def forward(self, x):
        x = self.bn(F.max_pool2d(F.relu(self.conv1(x)), 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return F.softmax(self.fc(x.flatten(1)), dim=1)


class ResidualNet(nn.Module):
    """The residual net as examples/book_models writes it: 3x32x32, 16 channels, 3 blocks."""

    def __init__(self, channels=16, blocks=3):
        super().__init__()
        conv = lambda i, o: nn.Conv2d(i, o, 3, padding=1, bias=False)
        self.stem = nn.Sequential(conv(3, channels), nn.BatchNorm2d(channels))
        self.blocks = nn.ModuleList(
            nn.ModuleList([conv(channels, channels), nn.BatchNorm2d(channels), conv(channels, channels),
                           nn.BatchNorm2d(channels)]) for _ in range(blocks))
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        for c1, b1, c2, b2 in self.blocks:
            x = F.relu(b2(c2(F.relu(b1(c1(x))))) + x)
        return F.softmax(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), dim=1)


MODELS = {"conv": (ConvNet, (1, 28, 28)), "residual": (ResidualNet, (3, 32, 32))}


def torch_ms(model, mode, batch, iterations):
    net, image = MODELS[model][0](), MODELS[model][1]
    x = torch.randn(batch, *image)
    if mode == "infer":
        net.eval()
        def step():
            with torch.no_grad():
                net(x)
    else:
        label = torch.randint(0, 10, (batch,))
        opt = torch.optim.Adam(net.parameters(), lr=0.001)
        def step():
            prob = net(x)
            loss = F.nll_loss(torch.log(prob), label)
            (prob.argmax(1) == label).float().mean()  # the accuracy Rill's program computes
            opt.zero_grad()
            loss.backward()
            opt.step()
    for _ in range(iterations):
        step()
    start = time.perf_counter()
    for _ in range(iterations):
        step()
    return (time.perf_counter() - start) * 1e3 / iterations


def torch_conv2d_ms(iterations=20):
    x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
    with torch.no_grad():
        for _ in range(3):
            F.conv2d(x, w, padding=1)
        start = time.perf_counter()
        for _ in range(iterations):
            F.conv2d(x, w, padding=1)
    return (time.perf_counter() - start) * 1e3 / iterations


def rill_conv2d_ms(build, env):
    out = subprocess.run([os.path.join(build, "bin", "rill_bench_math"), "--benchmark_filter=BM_RillConv2d",
                          "--benchmark_format=json", "--benchmark_min_time=0.2"], env=env, capture_output=True,
                         text=True, check=True).stdout
    bench = json.loads(out)["benchmarks"][0]
    assert bench["time_unit"] == "ms"
    return bench["real_time"]


def peak_rss_kb():
    """This process's peak resident set (VmHWM). Not ru_maxrss: Linux carries that across
    exec, so a child would report this (torch-sized) process's size when it forked."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main():
    keep_freed_memory()
    build = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    torch.set_num_threads(threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cases = [("conv", "infer", 1, 400), ("conv", "infer", 64, 20), ("residual", "infer", 1, 200),
             ("residual", "infer", 32, 10), ("conv", "train", 64, 10), ("residual", "train", 32, 5)]
    print("%d threads, medians of %d rounds\n" % (threads, rounds))
    print("| model | batch | Rill ms | PyTorch ms | Rill / PyTorch |")
    print("|---|---|---|---|---|")
    rss = {}
    for model, mode, batch, iterations in cases:
        rill, peer = [], []
        for _ in range(rounds):
            out = subprocess.run([os.path.join(build, "bin", "rill_bench_model"), model, mode, str(batch), "3",
                                  str(iterations)], env=env, capture_output=True, text=True, check=True).stdout
            r = json.loads(out)
            rill.append(r["ms"])
            rss[(model, mode, batch)] = r["peak_rss_kb"]
            peer.append(torch_ms(model, mode, batch, iterations))
        a, b = statistics.median(rill), statistics.median(peer)
        print("| %s %s | %d | %.3f | %.3f | **%.2f** |" % (model, mode, batch, a, b, a / b))
    rill, peer = [], []
    for _ in range(rounds):
        rill.append(rill_conv2d_ms(build, env))
        peer.append(torch_conv2d_ms())
    a, b = statistics.median(rill), statistics.median(peer)
    print("| conv2d 3x3 64->64 56x56 | 8 | %.3f | %.3f | **%.2f** |" % (a, b, a / b))
    # Peak RSS of serving the residual net at batch 32: a fresh PyTorch process doing only that.
    code = ("import torch,sys; sys.path.insert(0, %r); import model_compare as m; torch.set_num_threads(%d); "
            "m.torch_ms('residual', 'infer', 32, 10); print(m.peak_rss_kb())"
            % (os.path.dirname(os.path.abspath(__file__)), threads))
    torch_rss = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    rill_rss = rss[("residual", "infer", 32)]
    print("\npeak RSS serving the residual net at batch 32: Rill %.1f MiB, PyTorch %.1f MiB, ratio **%.2f**"
          % (rill_rss / 1024, torch_rss / 1024, rill_rss / torch_rss))


if __name__ == "__main__":
    main()
