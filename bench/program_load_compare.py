#!/usr/bin/env python3
"""Loading a large program: `rill check` (read, decode into Rill's compact form, validate)
against protobuf's bare ParseFromString of the same bytes into its generated messages
(bench/proto_parse_bench.cc, plain and on an arena), in the same run, alternating, ROUNDS
rounds each. Reports medians: rill check's whole process wall time against the parse
alone (the process's file read, start-up and exit not counted for protobuf), and each
process's peak RSS against the file's size.

usage: python3 bench/program_load_compare.py BUILD_DIR PROGRAM.pb [ROUNDS]
  PROGRAM.pb, e.g.: python3 bench/unrolled_daisy_chain.py 100000 u.pbtxt &&
                    BUILD_DIR/bin/rill convert u.pbtxt -o u.pb
"""
import os
import statistics
import subprocess
import sys
import time

build, program = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
rill = os.path.join(build, "bin", "rill")
parse = os.path.join(build, "bin", "rill_bench_proto_parse")


def run(argv):
    """(wall seconds, peak RSS MB, stdout) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit("%s failed (status %d): %s" % (" ".join(argv), status, proc.stderr.read().decode()))
    return wall, usage.ru_maxrss / 1024.0, out.decode()


results = {"check": [], "plain": [], "arena": []}
for _ in range(rounds):
    wall, rss, _ = run([rill, "--plugins", "math,csp", "check", program])
    results["check"].append((wall, rss))
    for mode in ("plain", "arena"):
        _, rss, out = run([parse, mode, program])
        results[mode].append((float(out), rss))

size_mb = os.path.getsize(program) / 1e6
med = {k: (statistics.median(w for w, _ in v), statistics.median(r for _, r in v)) for k, v in results.items()}
print("%s: %.1f MB, medians of %d rounds" % (program, size_mb, rounds))
print("  rill check (whole process)      %6.3f s  %7.0f MB peak RSS (%.1fx the file)"
      % (med["check"][0], med["check"][1], med["check"][1] / size_mb))
for mode in ("plain", "arena"):
    print("  protobuf ParseFromString %-6s %6.3f s  %7.0f MB peak RSS (%.1fx the file)"
          % (mode, med[mode][0], med[mode][1], med[mode][1] / size_mb))
print("  rill check / plain parse: time %.2f, RSS %.2f"
      % (med["check"][0] / med["plain"][0], med["check"][1] / med["plain"][1]))
