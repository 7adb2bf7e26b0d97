#!/usr/bin/env python3
"""Runs bench/executor_bench.cc and prints, per block, the executor's ns per op and its
peers' in the same run: a third party's counter against math's `increment` (the same op
shipped in a plugin of the project's own), and the executor against direct calls.

usage: bench/executor_compare.py [BUILD_DIR] [REPETITIONS]

Each ratio is the median over REPETITIONS (default 5) of one repetition's pair, with the
lowest and highest in brackets: the machine's speed moves between repetitions.
"""
import statistics
import sys

import gbench

build = sys.argv[1] if len(sys.argv) > 1 else "build"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
runs = gbench.iterations(build, "rill_bench_executor", reps)
ns = {name: [1e9 / r["items_per_second"] for r in rs] for name, rs in runs.items()}


def ratio(a, b):
    pairs = sorted(x / y for x, y in zip(ns[a], ns[b]))
    return f"{statistics.median(pairs):.2f} [{pairs[0]:.2f}-{pairs[-1]:.2f}]"


print("| block | math increment | third-party counter | third-party / math | direct call | math / direct |")
print("|---|---|---|---|---|---|")
for n in ("100", "10000"):
    math, third, direct = (f"BM_ExecutorIncrement<kMath>/{n}", f"BM_ExecutorIncrement<kThirdParty>/{n}",
                           f"BM_DirectIncrement/{n}")
    print(f"| {int(n):,} ops | {statistics.median(ns[math]):.1f} ns | {statistics.median(ns[third]):.1f} ns | "
          f"{ratio(third, math)} | {statistics.median(ns[direct]):.1f} ns | {ratio(math, direct)} |")
math, third = "BM_ExecutorCountedLoop<kMath>/10000", "BM_ExecutorCountedLoop<kThirdParty>/10000"
print(f"| counted loop, a step | {statistics.median(ns[math]):.1f} ns | {statistics.median(ns[third]):.1f} ns | "
      f"{ratio(third, math)} | - | - |")
branch = "BM_ExecutorLoopWithBranch/10000"
print(f"| counted loop with a branch (a conditional_block a step) | {statistics.median(ns[branch]):.1f} ns | - | - | - | - |")
