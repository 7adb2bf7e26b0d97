"""What the Python benchmarks share: timing one call."""
import time


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
