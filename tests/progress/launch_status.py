"""`rill launch` shows each process's state while the cluster runs: on a terminal (a
pseudo-terminal here) a block of lines redrawn in place, off one a line per change.

    /usr/bin/python3 launch_status.py RILL SOURCE_DIR OUT_DIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fit_a_line_cluster import make_cluster  # noqa: E402
from pty_run import run_on_pty  # noqa: E402

rill, source, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
data, cluster = make_cluster(rill, source, out)
ITERATIONS = 200
args = [rill, "launch", cluster, "--deadline-ms", "60000", "--", "--feed", "x=%s/x_{trainer}.npy" % data,
        "--feed", "y=%s/y_{trainer}.npy" % data, "--iterations", str(ITERATIONS), "--fetch", "w"]

# Off a terminal: a line per change of state, ending with every process done.
off = subprocess.run(args, capture_output=True, text=True, timeout=240)
assert off.returncode == 0, off.stderr
lines = [line for line in off.stderr.splitlines() if line.startswith("launch: ")]
for name in ("pserver 0", "pserver 1", "trainer 0", "trainer 1"):
    mine = [line[len("launch: " + name + ": "):] for line in lines if line.startswith("launch: " + name + ": ")]
    assert mine and mine[-1] == "done", (name, lines)
    assert len(mine) == len(set(mine)), ("a state repeated", name, mine)  # a line per change only
trainer0 = [line for line in lines if line.startswith("launch: trainer 0: running iteration ")]
assert trainer0 and trainer0[-1].endswith("%d/%d" % (ITERATIONS, ITERATIONS)), lines
assert "serving" in off.stderr
assert "rill: iteration" not in off.stdout and "[trainer 0] w fp32 [13,1]" in off.stdout, off.stdout

# On a terminal: the block of four lines redrawn in place (cursor up, line cleared).
returncode, tty, stdout = run_on_pty(args)
assert returncode == 0, tty
assert "\x1b[4A" in tty, repr(tty[:300])  # a redraw over the last block
last = tty[tty.rfind("\x1b[4A") + len("\x1b[4A"):]
states = re.findall(r"\r(\w+ \d) +([^\x1b\r\n]*)\x1b\[K", last)
assert states == [("pserver 0", "done"), ("pserver 1", "done"), ("trainer 0", "done"), ("trainer 1", "done")], \
    (states, repr(last))
assert "launch: " not in tty  # no log lines on a terminal
assert "[trainer 1] w fp32 [13,1]" in stdout
print("PASS: the cluster's states, %d lines off a terminal and redrawn in place on one" % len(lines))
