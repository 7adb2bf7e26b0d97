#!/usr/bin/env python3
"""Start-up cost of `rill`: wall time and peak RSS of `rill ops` (every shipped plugin
loaded and initialized) against `rill --version` (same binary, no plugins loaded), each
run N times; medians reported, and the ratio ops/version.

usage: python3 bench/startup.py [build/bin/rill] [N]"""
import os
import statistics
import subprocess
import sys
import time

rill = sys.argv[1] if len(sys.argv) > 1 else "build/bin/rill"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30


def measure(args):
    walls, rss = [], []
    for _ in range(n):
        start = time.perf_counter()
        proc = subprocess.Popen([rill] + args, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append((time.perf_counter() - start) * 1e3)
        rss.append(usage.ru_maxrss / 1024.0)
        if status != 0:
            sys.exit(f"{rill} {' '.join(args)} failed with status {status}")
    return statistics.median(walls), statistics.median(rss)


ops_wall, ops_rss = measure(["ops"])
ver_wall, ver_rss = measure(["--version"])
print(f"rill ops:        median wall {ops_wall:.2f} ms, median peak RSS {ops_rss:.1f} MiB")
print(f"rill --version:  median wall {ver_wall:.2f} ms, median peak RSS {ver_rss:.1f} MiB")
print(f"ratio ops/version: wall {ops_wall / ver_wall:.2f}x, RSS {ops_rss / ver_rss:.2f}x  (N={n})")
