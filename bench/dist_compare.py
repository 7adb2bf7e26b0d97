#!/usr/bin/env python3
"""Runs the gRPC transport benchmarks (bench/dist_bench.cc) and prints a markdown table of
median throughputs and the ratios Rill / raw TCP and Rill / plain protobuf.

usage: bench/dist_compare.py [BUILD_DIR] [REPETITIONS]

The four paths run one after the other, on loopback, each sending from this benchmark's
process to receivers in a second process of the same binary; medians over REPETITIONS runs
(default 5).
"""
import statistics
import sys

import gbench


def medians(build_dir, reps):
    """{benchmark: (median bytes per second, median real time)}"""
    runs = gbench.iterations(build_dir, "rill_bench_dist", reps)
    return {k: (statistics.median(b["bytes_per_second"] for b in v), statistics.median(b["real_time"] for b in v))
            for k, v in runs.items()}


def size_name(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    m = medians(build, reps)
    mb = lambda name: m[name][0] / 1e6
    print("| tensor | Rill send | Rill, in the message | plain protobuf | raw TCP | Rill / raw TCP "
          "| in the message / raw TCP | Rill / protobuf |")
    print("|---|---|---|---|---|---|---|---|")
    for kib in (1, 64, 1024, 16 * 1024, 64 * 1024, 256 * 1024):
        n = kib * 1024
        rill, in_message = mb(f"BM_Send_Rill/{n}"), mb(f"BM_Send_RillInMessage/{n}")
        pb, tcp = mb(f"BM_Send_Protobuf/{n}"), mb(f"BM_Send_RawTcp/{n}")
        print(f"| {size_name(n)} | {rill:.0f} MB/s | {in_message:.0f} MB/s | {pb:.0f} MB/s | {tcp:.0f} MB/s "
              f"| {rill / tcp:.2f} | {in_message / tcp:.2f} | {rill / pb:.2f} |")
    print()
    for n in (1024, 1 << 20, 16 << 20):
        print(f"sync step (send + barrier + get), {size_name(n)} each way: {m[f'BM_PserverStep/{n}'][1]:.0f} us")
    step, rpc = m["BM_PserverStep/1024"][1], m["BM_Send_Protobuf/1024"][1]
    print(f"1 KiB sync step against a plain gRPC round trip of 1 KiB (protobuf): {step:.0f} / {rpc:.0f} us = "
          f"{step / rpc:.2f} round trips")


if __name__ == "__main__":
    main()
