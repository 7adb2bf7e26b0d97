"""What the Python benchmarks share: timing one call, and a malloc that keeps memory."""
import os
import sys
import time

# glibc's tunables: every block from the heap (none mapped on its own), the heap never
# trimmed, as jemalloc's or tcmalloc's caches keep memory for the PyTorch users who set them.
# By default a block above the mmap threshold (128 KiB, rising to at most 32 MiB as such
# blocks are freed) is mapped on its own and unmapped when freed, so that the next is faulted
# in and zeroed page by page, which on these virtual machines costs more than most kernels:
# PyTorch allocates its outputs and temporaries anew on each call.
KEPT_MEMORY_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 34), "MALLOC_TRIM_THRESHOLD_": str(1 << 34)}


def keep_freed_memory():
    """Re-executes this script with KEPT_MEMORY_ENV (malloc reads its tunables at start)
    unless it has them; processes it starts inherit them."""
    if any(os.environ.get(k) != v for k, v in KEPT_MEMORY_ENV.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, **KEPT_MEMORY_ENV))


def per_call(fn, min_seconds=0.2, min_calls=1):
    """Mean seconds per call of fn over at least min_seconds and min_calls (after one
    warm-up call)."""
    fn()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and n >= min_calls:
            return elapsed / n
