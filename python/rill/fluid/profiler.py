"""fluid.profiler: Fluid's profiler context, on the runtime's profiler (`rill run --profile`).

    with fluid.profiler.profiler("CPU", "total", "/tmp/profile"):
        for batch in ...:
            exe.run(...)

records every op every run inside the block runs (on the runtime's worker lanes, with
go blocks' spawns and tasks' waits), prints a report of the ops sorted by ``sorted_key``
when it ends, and writes a Chrome trace to ``profile_path`` (open it in Perfetto or
chrome://tracing). One recording at a time in a process.
"""
import contextlib
import sys

from rill import _rill

__all__ = ["profiler", "start_profiler", "stop_profiler", "reset_profiler"]

_SORT_KEYS = {None: None, "calls": 1, "total": 2, "max": 4, "min": 3, "ave": 5}
_recording = None


def _check_sorted_key(sorted_key):
    if sorted_key not in _SORT_KEYS:
        raise ValueError("sorted_key must be one of %s, got %r" % (sorted(k for k in _SORT_KEYS if k), sorted_key))


def start_profiler(state="CPU"):
    global _recording
    if state not in ("CPU", "GPU", "All"):
        raise ValueError("state must be 'CPU', 'GPU' or 'All', got %r" % (state,))
    if _recording is not None:
        raise RuntimeError("the profiler is already recording")
    _recording = _rill.Profiler()


def stop_profiler(sorted_key=None, profile_path="/tmp/profile"):
    """Ends the recording, writes the trace to ``profile_path`` (None: no trace) and prints
    the report; returns its rows: (op, calls, total ms, min ms, max ms, mean ms)."""
    global _recording
    _check_sorted_key(sorted_key)
    if _recording is None:
        raise RuntimeError("the profiler is not recording")
    recording, _recording = _recording, None
    rows = [(t, calls, total / 1e6, low / 1e6, high / 1e6, total / 1e6 / calls)
            for t, calls, total, low, high in recording.stop(profile_path or "")]
    key = _SORT_KEYS[sorted_key]
    if key is not None:
        rows.sort(key=lambda r: r[key], reverse=True)
    out = sys.stdout
    out.write("------------------------->     Profiling Report     <-------------------------\n\n")
    out.write("Time unit: ms\nSorted by %s\n" % (sorted_key or "total time, in descending order"))
    out.write("%-28s %8s %12s %10s %10s %10s\n" % ("Event", "Calls", "Total", "Min.", "Max.", "Ave."))
    for t, calls, total, low, high, mean in rows:
        out.write("%-28s %8d %12.4f %10.4f %10.4f %10.4f\n" % (t, calls, total, low, high, mean))
    out.flush()
    return rows


def reset_profiler():
    """Drops what the recording in progress has recorded so far, and records on."""
    global _recording
    if _recording is not None:
        _recording.stop("")
        _recording = _rill.Profiler()


@contextlib.contextmanager
def profiler(state="CPU", sorted_key=None, profile_path="/tmp/profile"):
    _check_sorted_key(sorted_key)
    start_profiler(state)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)
