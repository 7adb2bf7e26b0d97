"""`rill launch` names the waits that last, from the pservers' own reports (`rill status`):
trainer 1 is held before it starts (its data is a FIFO nobody writes yet), so trainer 0
waits at the barrier of iteration 1 and each pserver waits for trainer 1. Once both are
shown, the data is written and the cluster finishes.

    /usr/bin/python3 launch_waits.py RILL SOURCE_DIR OUT_DIR
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fit_a_line_cluster import make_cluster  # noqa: E402

rill, source, out = sys.argv[1:4]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
data, cluster = make_cluster(rill, source, out)
held = os.path.join(out, "held")
os.makedirs(held)
shutil.copy(os.path.join(data, "x_0.npy"), held)
os.mkfifo(os.path.join(held, "x_1.npy"))

args = [rill, "launch", cluster, "--deadline-ms", "60000", "--", "--feed", "x=%s/x_{trainer}.npy" % held,
        "--feed", "y=%s/y_{trainer}.npy" % data, "--iterations", "5", "--fetch", "w"]
launch = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
lines = []
seen = threading.Event()
WANTED = ("launch: trainer 0: running, waiting at the barrier of iteration 1",
          "launch: pserver 0: serving, waiting for trainer 1 (",
          "launch: pserver 1: serving, waiting for trainer 1 (")


def read():
    for line in launch.stderr:
        lines.append(line.rstrip("\n"))
        if all(any(l.startswith(w) for l in lines) for w in WANTED):
            seen.set()
    seen.set()  # launch ended: the check below says what was missing


reader = threading.Thread(target=read, daemon=True)
reader.start()
try:
    assert seen.wait(120), ("launch showed no lasting wait within 120 s", lines)
    for w in WANTED:
        assert any(l.startswith(w) for l in lines), (w, lines)
    with open(os.path.join(data, "x_1.npy"), "rb") as src, open(os.path.join(held, "x_1.npy"), "wb") as fifo:
        fifo.write(src.read())
    stdout = launch.stdout.read()
    assert launch.wait(120) == 0, lines
    reader.join(10)
finally:
    if launch.poll() is None:
        os.killpg(launch.pid, signal.SIGKILL)
for name in ("pserver 0", "pserver 1", "trainer 0", "trainer 1"):
    assert "launch: %s: done" % name in lines, (name, lines)
assert "[trainer 1] w fp32 [13,1]" in stdout, stdout
print("PASS: launch showed the lasting waits:\n" + "\n".join(l for l in lines if "waiting" in l))
