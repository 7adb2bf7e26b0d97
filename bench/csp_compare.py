#!/usr/bin/env python3
"""Runs the CSP benchmarks of Rill (bench/csp_bench.cc) and of Go (bench/peers) in one
session and prints a markdown table of per-op medians and Rill / Go ratios.

usage: bench/csp_compare.py [BUILD_DIR] [REPETITIONS]

Per op: a round trip (ping-pong), a message (producer/consumer), a whole chain (daisy
chain), a go block started and finished (spawn). Medians over REPETITIONS runs (default 5).
"""
import os
import re
import statistics
import subprocess
import sys

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
    ("go block spawn (per block)", "Spawn", "BM_Chan_Spawn", "BM_Prog_Spawn"),
]
GO_PER_OP_DIVISOR = {"Spawn": 1000}  # Go's BenchmarkSpawn op is a batch of 1000 goroutines
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def rill_medians(build_dir, reps):
    def per_op(b):
        if "items_per_second" in b:
            return 1e9 / b["items_per_second"]
        return b["real_time"] * UNIT_NS[b["time_unit"]]
    runs = gbench.iterations(build_dir, "rill_bench_csp", reps)
    return {k: statistics.median(per_op(b) for b in v) for k, v in runs.items()}


def go_medians(reps):
    out = subprocess.run(["go", "test", "-run", "^$", "-bench", ".", "-count", str(reps)],
                         cwd=os.path.join(ROOT, "bench", "peers"), check=True, capture_output=True,
                         text=True).stdout
    runs = {}
    for line in out.splitlines():
        m = re.match(r"Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            name = m.group(1)
            runs.setdefault(name, []).append(float(m.group(3)) / GO_PER_OP_DIVISOR.get(name, 1))
    return {k: statistics.median(v) for k, v in runs.items()}


def fmt(ns):
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns:.0f} ns"


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    go = go_medians(reps)
    rill = rill_medians(build_dir, reps)
    print(f"| scenario (per op) | Go | Rill channel API | ratio | Rill program | ratio |")
    print("|---|---|---|---|---|---|")
    for title, g, c, p in SCENARIOS:
        gv, cv, pv = go[g], rill[c], rill[p]
        print(f"| {title} | {fmt(gv)} | {fmt(cv)} | {cv / gv:.2f} | {fmt(pv)} | {pv / gv:.2f} |")


if __name__ == "__main__":
    main()
