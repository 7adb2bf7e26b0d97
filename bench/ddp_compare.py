#!/usr/bin/env python3
"""Data-parallel training steps: Rill's parameter-server training against PyTorch DDP (gloo).

    PYTHONPATH=build/python /usr/bin/python3 bench/ddp_compare.py [ROUNDS] [--nets fc,resnet,transformer]

Three nets, each built with rill.fluid as a Fluid user writes it and with torch.nn, SGD:
- fc: 41 fc layers of 64 (relu between them), 82 small parameters, squared error;
- resnet: a small residual net (a conv of 16 channels and 4 residual blocks of two 3x3
  conv + batch_norm each, average pooling, fc to 10 classes; 29 parameters), 32x32 images;
- transformer: an embedding (vocabulary 1000, width 64) and one transformer block (q, k, v,
  softmax attention, output projection, layer_norm, a 256-wide feed-forward, layer_norm) on
  sequences of 16, squared error.
Batch 32 per worker, 2 workers on loopback, one intra-op thread per process
(RILL_INTRA_OP_THREADS=1, torch.set_num_threads(1)); every process its own.

- Rill, one process; and 2 trainers with 1 and with 2 pservers (fluid.DistributeTranspiler,
  gRPC), synchronous and asynchronous (sync_mode=False, the last column): the pservers share
  the machine's cores with the trainers, as on a user's machine.
- PyTorch, one process; and DDP over gloo with 2 processes.

A step's time: each worker times N steps and then 2N (after warm-up steps), and reports
(t(2N) - t(N)) / N, so whatever a run costs once cancels; trainer 0's figure counts. Medians
over ROUNDS (default 3), each round running every configuration once. The distribution
overhead is the 2-worker step less the one-process step. Prints a Markdown table.
Every process runs with glibc's malloc keeping freed memory (timing.keep_freed_memory).
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile

from timing import keep_freed_memory

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = {"fc": 100, "resnet": 5, "transformer": 20}  # N per net: a run of N steps is ~0.5 s or more
BATCH = 32

# The nets, shared by both sides' workers: feeds(net, rank); build_rill(fluid, net), the
# loss; build_torch(torch, net), the module and loss(module, feeds), so that DDP's wrapper
# is what runs the forward (its hooks bucket the gradients).
NETS = r'''
import numpy as np
BATCH, WIDTH, LAYERS = 32, 64, 41
SEQ, VOCAB, FFN = 16, 1000, 256


def feeds(net, rank):
    rng = np.random.RandomState(rank)
    if net == "fc":
        return {"x": rng.randn(BATCH, WIDTH).astype("float32"), "y": rng.randn(BATCH, WIDTH).astype("float32")}
    if net == "resnet":
        return {"img": rng.randn(BATCH, 3, 32, 32).astype("float32"),
                "label": rng.randint(0, 10, (BATCH, 1)).astype("int64")}
    return {"ids": rng.randint(0, VOCAB, (BATCH, SEQ, 1)).astype("int64"),
            "y": rng.randn(BATCH, SEQ, WIDTH).astype("float32")}


def build_rill(fluid, net):
    L = fluid.layers
    if net == "fc":
        h = x = L.data(name="x", shape=[WIDTH], dtype="float32")
        y = L.data(name="y", shape=[WIDTH], dtype="float32")
        for i in range(LAYERS):
            h = L.fc(h, WIDTH, act="relu" if i + 1 < LAYERS else None)
        return L.mean(L.square_error_cost(h, y))
    if net == "resnet":
        img = L.data(name="img", shape=[3, 32, 32], dtype="float32")
        label = L.data(name="label", shape=[1], dtype="int64")

        def conv_bn(x, act):
            c = L.conv2d(x, num_filters=16, filter_size=3, padding=1, bias_attr=False)
            return L.batch_norm(c, act=act)
        h = conv_bn(img, "relu")
        for _ in range(4):
            h = L.relu(L.elementwise_add(h, conv_bn(conv_bn(h, "relu"), None)))
        h = L.pool2d(h, pool_size=32, pool_type="avg")
        return L.mean(L.softmax_with_cross_entropy(L.fc(h, 10), label))
    ids = L.data(name="ids", shape=[SEQ, 1], dtype="int64")
    y = L.data(name="y", shape=[SEQ, WIDTH], dtype="float32")
    x = L.embedding(ids, size=[VOCAB, WIDTH])
    x = L.reshape(x, [-1, SEQ, WIDTH])
    q, k, v = (L.fc(x, WIDTH, num_flatten_dims=2) for _ in range(3))
    attention = L.softmax(L.matmul(q, k, transpose_y=True, alpha=WIDTH ** -0.5))
    x = L.layer_norm(L.elementwise_add(x, L.fc(L.matmul(attention, v), WIDTH, num_flatten_dims=2)),
                     begin_norm_axis=2)
    ffn = L.fc(L.fc(x, FFN, num_flatten_dims=2, act="relu"), WIDTH, num_flatten_dims=2)
    x = L.layer_norm(L.elementwise_add(x, ffn), begin_norm_axis=2)
    return L.mean(L.square_error_cost(x, y))


def build_torch(torch, net):
    nn = torch.nn
    if net == "fc":
        layers = []
        for i in range(LAYERS):
            layers += [nn.Linear(WIDTH, WIDTH)] + ([nn.ReLU()] if i + 1 < LAYERS else [])
        return nn.Sequential(*layers), lambda m, f: ((m(f["x"]) - f["y"]) ** 2).mean()
    if net == "resnet":
        def conv_bn():
            return nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
                self.blocks = nn.ModuleList(nn.Sequential(conv_bn(), nn.ReLU(), conv_bn()) for _ in range(4))
                self.fc = nn.Linear(16, 10)

            def forward(self, x):
                h = self.stem(x)
                for b in self.blocks:
                    h = torch.relu(h + b(h))
                return self.fc(h.mean((2, 3)))
        return Net(), lambda m, f: nn.functional.cross_entropy(m(f["img"]), f["label"].view(-1))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, WIDTH)
            self.q, self.k, self.v, self.o = (nn.Linear(WIDTH, WIDTH) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.ffn = nn.Sequential(nn.Linear(WIDTH, FFN), nn.ReLU(), nn.Linear(FFN, WIDTH))

        def forward(self, ids):
            x = self.emb(ids.view(-1, SEQ))
            a = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) * WIDTH ** -0.5, -1)
            x = self.ln1(x + self.o(a @ self.v(x)))
            return self.ln2(x + self.ffn(x))
    return Block(), lambda m, f: ((m(f["ids"]) - f["y"]) ** 2).mean()


def timed_steps(step, n):
    """(t(2n) - t(n)) / n of `step` after warm-up steps: seconds a step."""
    import time
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    t1 = time.perf_counter()
    for _ in range(2 * n):
        step()
    t2 = time.perf_counter()
    return ((t2 - t1) - (t1 - t0)) / n
'''

RILL_WORKER = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
from nets import feeds, build_rill, timed_steps
import rill.fluid as fluid
role, who, net, pservers, n, mode = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7]
loss = build_rill(fluid, net)
fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
if role == "single":
    exe.run(fluid.default_startup_program())
    f = feeds(net, 0)
    print(timed_steps(lambda: exe.run(feed=f, fetch_list=[]), n))
    sys.exit(0)
t = fluid.DistributeTranspiler()
trainer = int(who) if role == "trainer" else 0
t.transpile(trainer, pservers=pservers, trainers=2, sync_mode=mode == "sync")
if role == "pserver":
    exe.run(t.get_startup_program(who))
    exe.run(t.get_pserver_program(who))  # serves until both trainers are done
    sys.exit(0)
os.environ["RILL_TRAINER_ID"] = who
exe.run(t.get_trainer_startup_program())
program, f = t.get_trainer_program(), feeds(net, trainer)
print(timed_steps(lambda: exe.run(program, feed=f, fetch_list=[]), n))
exe.close()  # tells the pservers this trainer is done
'''

TORCH_WORKER = r'''
import sys
sys.path.insert(0, sys.argv[1])
from nets import feeds, build_torch, timed_steps
import torch
import torch.distributed as dist
torch.set_num_threads(1)
rank, world, port, net, n = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
torch.manual_seed(0)
model, loss_of = build_torch(torch, net)
if world > 1:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
f = {k: torch.from_numpy(v) for k, v in feeds(net, rank).items()}
def step():
    opt.zero_grad()
    loss_of(model, f).backward()
    opt.step()
if world > 1:
    dist.barrier()
seconds = timed_steps(step, n)
if rank == 0:
    print(seconds)
if world > 1:
    dist.destroy_process_group()
'''


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_all(cmds, env):
    """Runs the commands at once; the first one's printed seconds."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for c in cmds]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(" ".join(p.args) + " failed:\n" + err[-3000:])
    return float(outs[0][0].strip().splitlines()[-1])


def rill_steps(d, net, pservers, mode="sync"):
    env = dict(os.environ, RILL_INTRA_OP_THREADS="1", OMP_NUM_THREADS="1")
    worker, n = os.path.join(d, "rill_worker.py"), str(STEPS[net])
    if pservers == 0:
        return run_all([[sys.executable, worker, d, "single", "0", net, "", n, mode]], env)
    eps = ",".join(f"127.0.0.1:{p}" for p in free_ports(pservers))
    trainers = [[sys.executable, worker, d, "trainer", str(t), net, eps, n, mode] for t in range(2)]
    servers = [[sys.executable, worker, d, "pserver", e, net, eps, n, mode] for e in eps.split(",")]
    return run_all(trainers + servers, env)


def torch_steps(d, net, world):
    # Each worker in a process of its own, as DDP is used; no Rill library is loaded there.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OMP_NUM_THREADS"] = "1"
    port = str(free_ports(1)[0])
    worker = os.path.join(d, "torch_worker.py")
    return run_all([[sys.executable, worker, d, str(r), str(world), port, net, str(STEPS[net])] for r in range(world)],
                   env)


def main():
    keep_freed_memory()
    rounds, nets = 3, ["fc", "resnet", "transformer"]
    args = sys.argv[1:]
    if "--nets" in args:
        nets = args[args.index("--nets") + 1].split(",")
        del args[args.index("--nets"):args.index("--nets") + 2]
    if args:
        rounds = int(args[0])
    with tempfile.TemporaryDirectory() as d:
        for name, text in (("nets.py", NETS), ("rill_worker.py", RILL_WORKER), ("torch_worker.py", TORCH_WORKER)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        print(f"batch {BATCH} per worker, 2 workers on loopback, 1 intra-op thread per process; "
              f"medians of {rounds} rounds, ms a step\n")
        print("| net | pservers | Rill 1 process | Rill 2 trainers | PyTorch 1 process | DDP 2 | **Rill / DDP** "
              "| overhead: Rill, DDP | Rill 2 trainers, async |")
        print("|---|---|---|---|---|---|---|---|---|")
        for net in nets:
            runs = {k: [] for k in ("r0", "r1", "r2", "a1", "a2", "t1", "t2")}
            for _ in range(rounds):
                runs["r0"].append(rill_steps(d, net, 0))
                for ps in (1, 2):
                    runs[f"r{ps}"].append(rill_steps(d, net, ps))
                    runs[f"a{ps}"].append(rill_steps(d, net, ps, "async"))
                runs["t1"].append(torch_steps(d, net, 1))
                runs["t2"].append(torch_steps(d, net, 2))
            m = {k: statistics.median(v) * 1e3 for k, v in runs.items()}
            for ps in (1, 2):
                r = m[f"r{ps}"]
                print(f"| {net} | {ps} | {m['r0']:.2f} | {r:.2f} | {m['t1']:.2f} | {m['t2']:.2f} "
                      f"| **{r / m['t2']:.2f}** | {r - m['r0']:.2f}, {m['t2'] - m['t1']:.2f} | {m[f'a{ps}']:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
