"""`rill run --iterations N` shows its progress: on a terminal (a pseudo-terminal here) one
line rewritten in place, with the --print-every values in it; off a terminal a log line at
each tenth of the run, and the --print-every values as lines of their own.

    /usr/bin/python3 progress_line.py RILL OUT_DIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pty_run import run_on_pty  # noqa: E402

rill, out = sys.argv[1:3]
os.makedirs(out, exist_ok=True)
program = os.path.join(out, "fill.pbtxt")
with open(program, "w") as f:
    f.write('''blocks { idx: 0 parent_idx: -1
  ops { type: "fill_constant" outputs { parameter: "Out" arguments: "x" }
        attrs { name: "shape" type: INTS ints: 1 } attrs { name: "value" type: FLOAT f: 2 } } }
''')
N = 300000
args = [rill, "run", program, "--iterations", str(N), "--print-every", str(N // 3), "--fetch", "x"]

# On a terminal: stderr is a pty's slave side; read everything from the master.
returncode, tty, stdout = run_on_pty(args)
assert returncode == 0, tty
redraws = tty.rstrip("\r\n").split("\r")  # the pty writes the final newline as \r\n
assert redraws[-1].startswith("iteration %d/%d  " % (N, N)) and "it/s  ETA 0:00:00" in redraws[-1], redraws[-1:]
assert tty.endswith("\n"), repr(tty[-40:])
assert re.search(r"iteration \d+/%d  [\d.]+ it/s  ETA \d+:\d\d:\d\d  x=2" % N, tty), tty[-200:]
# The values of the --print-every iterations went into the line; the last is printed.
assert stdout.splitlines() == ["[iteration %d] x fp32 [1] 2" % N], stdout

# Off a terminal: a log line at each tenth, the values as lines on stdout.
run = subprocess.run(args, capture_output=True, text=True, timeout=120)
assert run.returncode == 0, run.stderr
logs = [line for line in run.stderr.splitlines() if line.startswith("rill: iteration")]
assert [int(re.match(r"rill: iteration (\d+)/", line).group(1)) for line in logs] == \
    [N * k // 10 for k in range(1, 11)], logs
assert all(re.search(r"\(\d+%\), [\d.]+ it/s, ETA \d+:\d\d:\d\d$", line) for line in logs), logs
assert "\r" not in run.stderr
assert run.stdout.count("[iteration %d] x fp32 [1] 2" % (N // 3)) == 1, run.stdout
print("PASS: a progress line on a terminal (%d redraws), %d log lines off one" % (len(redraws) - 1, len(logs)))
