#!/usr/bin/env python3
"""Runs the MPI transport benchmarks (bench/dist_mpi_bench.cc, under mpirun -np 2) and
prints a markdown table of median throughputs and the ratios against raw MPI and against
Rill's gRPC transport.

usage: bench/dist_mpi_compare.py [BUILD_DIR] [REPETITIONS]

Every path runs in one mpirun, one after the other, between the same two ranks; medians
over REPETITIONS runs (default 5).
"""
import os
import statistics
import sys

import gbench


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    mpirun = ["mpirun", "--oversubscribe", "-np", "2"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    runs = gbench.iterations(build, "rill_bench_dist_mpi", reps, launcher=mpirun)
    rate = {k: statistics.median(b["bytes_per_second"] for b in v) / 1e6 for k, v in runs.items()}
    time = {k: statistics.median(b["real_time"] for b in v) for k, v in runs.items()}
    print("| tensor | Rill MPI | raw MPI ping-pong | raw MPI send+answer | Rill MPI, gRPC requests | Rill gRPC "
          "| Rill MPI / ping-pong | Rill MPI / send+answer | gRPC requests / ping-pong | Rill MPI / Rill gRPC |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kib in (1, 64, 1024, 16 * 1024, 64 * 1024, 256 * 1024):
        n = kib * 1024
        mpi, seed, grpc = rate[f"BM_Send/Mpi/{n}"], rate[f"BM_Send/MpiGrpcRequests/{n}"], rate[f"BM_Send/Grpc/{n}"]
        pp, sa = rate[f"BM_MpiPingPong/{n}"], rate[f"BM_MpiSendAck/{n}"]
        size = f"{kib >> 10} MiB" if kib >= 1024 else f"{kib} KiB"
        print(f"| {size} | {mpi:.0f} MB/s | {pp:.0f} MB/s | {sa:.0f} MB/s | {seed:.0f} MB/s | {grpc:.0f} MB/s "
              f"| {mpi / pp:.2f} | {mpi / sa:.2f} | {seed / pp:.2f} | {mpi / grpc:.2f} |")
    print()
    for name in ("BM_Send/Mpi/1024", "BM_Send/MpiGrpcRequests/1024", "BM_Send/Grpc/1024", "BM_MpiSendAck/1024"):
        print(f"{name}: {time[name]:.1f} us per send")


if __name__ == "__main__":
    main()
