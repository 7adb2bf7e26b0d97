#!/usr/bin/env python3
"""Runs the CSP benchmarks of Rill (bench/csp_bench.cc) and of Go (bench/peers) in one
session and prints a markdown table of per-op medians and Rill / Go ratios.

usage: bench/csp_compare.py [BUILD_DIR] [REPETITIONS]

Per op: a round trip (ping-pong), a message (producer/consumer), a whole chain (daisy
chain), a go block started and finished (spawn).

Each ratio is paired: a round runs every scenario once in Rill (its channel-API and
program benchmarks) and once in Go, side by side, alternating which goes first, and the
ratio is the median over REPETITIONS rounds (default 5) of each round's Rill / Go, with
the lowest and highest in brackets. These shared machines change speed from minute to
minute (how far apart the two vCPUs are: the time a cache line takes to pass between them
varies several-fold from one spell to the next), so two figures taken minutes apart
compare two machines; the table's first line gives the line-transfer time before and
after the rounds.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

import gbench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# scenario -> (Go benchmark, Rill channel-API benchmark, Rill program benchmark)
SCENARIOS = [
    ("unbuffered ping-pong (round trip)", "PingPong", "BM_Chan_PingPong", "BM_Prog_PingPong"),
    ("select ping-pong (round trip)", "SelectPingPong", "BM_Chan_SelectPingPong", "BM_Prog_SelectPingPong"),
    ("producer/consumer, capacity 0 (message)", "ProdCons/cap=0", "BM_Chan_ProdCons/0", "BM_Prog_ProdCons/0"),
    ("producer/consumer, capacity 1 (message)", "ProdCons/cap=1", "BM_Chan_ProdCons/1", "BM_Prog_ProdCons/1"),
    ("producer/consumer, capacity 100 (message)", "ProdCons/cap=100", "BM_Chan_ProdCons/100", "BM_Prog_ProdCons/100"),
    ("daisy chain of 10,000 (whole chain)", "DaisyChain/n=10000", "BM_Chan_DaisyChain/10000", "BM_Prog_DaisyChain/10000"),
    ("daisy chain of 100,000 (whole chain)", "DaisyChain/n=100000", "BM_Chan_DaisyChain/100000", "BM_Prog_DaisyChain/100000"),
    # Go's spawn counts down an atomic; a program cannot, so its spawn row is measured
    # against the peer that does what the program does (each block sends one value).
    ("go block spawn (per block)", "Spawn", "BM_Chan_Spawn", None),
    ("go block spawn, each block sending one value (per block)", "SpawnSend", "BM_Chan_SpawnSend", "BM_Prog_Spawn"),
]
# Go's spawn benchmarks' op is a batch of 1000 goroutines
GO_PER_OP_DIVISOR = {"Spawn": 1000, "SpawnSend": 1000}
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def rill_once(build_dir, api, program):
    """One run of the scenario's two Rill benchmarks: {name: ns per op}."""
    def per_op(b):
        if "items_per_second" in b:
            return 1e9 / b["items_per_second"]
        return b["real_time"] * UNIT_NS[b["time_unit"]]
    only = "^(" + "|".join(re.escape(n) for n in (api, program) if n) + ")/"
    runs = gbench.iterations(build_dir, "rill_bench_csp", 1, benchmark_filter=only)
    return {name: per_op(v[0]) for name, v in runs.items()}


def go_once(test_binary, name):
    """One run of Go's benchmark `name` ("ProdCons/cap=0"): ns per op."""
    pattern = "/".join(f"^{re.escape(part)}$" for part in ("Benchmark" + name).split("/"))
    out = subprocess.run([test_binary, "-test.run", "^$", "-test.bench", pattern, "-test.count", "1"],
                         cwd=os.path.join(ROOT, "bench", "peers"), check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        m = re.match(r"Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m and m.group(1) == name:
            return float(m.group(3)) / GO_PER_OP_DIVISOR.get(name, 1)
    raise RuntimeError(f"Go benchmark {name} printed no result:\n{out}")


def line_transfer(build_dir):
    """What bench/line_transfer.c reads now (the machine's spell), or a note that it is missing."""
    probe = os.path.join(build_dir, "bin", "rill_line_transfer")
    if not os.path.exists(probe):
        return "not built"
    return subprocess.run([probe], check=True, capture_output=True, text=True).stdout.strip()


def fmt(ns):
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns:.0f} ns"


def ratio(pairs):
    """Median [lowest-highest] of the rounds' paired ratios."""
    r = sorted(a / b for a, b in pairs)
    return f"{statistics.median(r):.2f} [{r[0]:.2f}-{r[-1]:.2f}]"


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    before = line_transfer(build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        go_test = os.path.join(tmp, "peers.test")
        subprocess.run(["go", "test", "-c", "-o", go_test], cwd=os.path.join(ROOT, "bench", "peers"), check=True)
        rows = {title: ([], [], []) for title, *_ in SCENARIOS}  # Go, API, program per round
        for rnd in range(reps):
            for title, g, c, p in SCENARIOS:
                go, api, prog = rows[title]
                if rnd % 2 == 0:
                    go.append(go_once(go_test, g))
                    rill = rill_once(build_dir, c, p)
                else:
                    rill = rill_once(build_dir, c, p)
                    go.append(go_once(go_test, g))
                api.append(rill[c])
                if p:
                    prog.append(rill[p])
    print(f"line transfer before: {before}; after: {line_transfer(build_dir)}\n")
    print(f"| scenario (per op) | Go | Rill channel API | ratio | Rill program | ratio |")
    print("|---|---|---|---|---|---|")
    for title, *_ in SCENARIOS:
        go, api, prog = rows[title]
        program = f"{fmt(statistics.median(prog))} | {ratio(zip(prog, go))}" if prog else "- | -"
        print(f"| {title} | {fmt(statistics.median(go))} | {fmt(statistics.median(api))} | "
              f"{ratio(zip(api, go))} | {program} |")


if __name__ == "__main__":
    main()
