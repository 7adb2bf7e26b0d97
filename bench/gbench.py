"""Runs one of this build's Google Benchmark binaries and reads its results back, for the
side-by-side comparison scripts (csp_compare.py, dist_compare.py, dist_mpi_compare.py)."""
import json
import os
import subprocess
import tempfile


def iterations(build_dir, binary, reps, launcher=(), benchmark_filter=None):
    """{benchmark name without "/real_time": [each repetition's result entry]}; `launcher`
    (e.g. mpirun and its options) runs the binary; `benchmark_filter` (a regex) runs only
    the benchmarks it matches."""
    only = [f"--benchmark_filter={benchmark_filter}"] if benchmark_filter else []
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [*launcher, os.path.join(build_dir, "bin", binary), f"--benchmark_repetitions={reps}",
             f"--benchmark_out={out.name}", "--benchmark_out_format=json", *only],
            check=True, stdout=subprocess.DEVNULL)
        results = json.load(open(out.name))
    runs = {}
    for b in results["benchmarks"]:
        if b.get("run_type") == "iteration":
            runs.setdefault(b["run_name"].replace("/real_time", ""), []).append(b)
    return runs
