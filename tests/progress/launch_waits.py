"""`rill launch` names the waits that last, from the pservers' own reports (`rill status`):
trainer 1 is held, so trainer 0 waits at a barrier and each pserver waits for trainer 1.
  grpc (a process each): trainer 1 is held before it starts (its data is a FIFO nobody
       writes yet); once the waits are shown, the data is written and the cluster finishes.
  mpi (one mpirun): trainer 1 must start with the others (MPI_Init waits for every rank),
       so it is stopped (SIGSTOP) mid-training; once the waits are shown the cluster is
       killed. The stop may land between trainer 1's barrier calls to the two pservers: the
       pserver it already reached is then past that barrier and waits for nobody, so one
       pserver waiting for trainer 1 is what is sure to be shown.

    /usr/bin/python3 launch_waits.py RILL SOURCE_DIR OUT_DIR TRANSPORT...
"""
import os
import shutil
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fit_a_line_cluster import make_cluster  # noqa: E402

rill, source, out_root = sys.argv[1:4]


def rank_pid(rank, cluster):
    """The pid of MPI rank `rank` running a program of `cluster`, or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=%d" % rank in env and cluster.encode() in cmdline and b"run" in cmdline:
            return int(pid)
    return None


def launch_held(transport):
    out = os.path.join(out_root, transport)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    data, cluster = make_cluster(rill, source, out, transport)
    held = os.path.join(out, "held")
    os.makedirs(held)
    shutil.copy(os.path.join(data, "x_0.npy"), held)
    if transport == "grpc":
        os.mkfifo(os.path.join(held, "x_1.npy"))
        iterations = 5
        wanted = (("launch: trainer 0: running, waiting at the barrier of iteration 1",),
                  ("launch: pserver 0: serving, waiting for trainer 1 (not connected)",),
                  ("launch: pserver 1: serving, waiting for trainer 1 (not connected)",))
    else:
        shutil.copy(os.path.join(data, "x_1.npy"), held)
        iterations = 10000000
        wanted = (("launch: trainer 0: running",),
                  ("launch: pserver 0: serving, waiting for trainer 1 (training)",
                   "launch: pserver 1: serving, waiting for trainer 1 (training)"))
    args = [rill, "launch", cluster, "--deadline-ms", "60000", "--", "--feed", "x=%s/x_{trainer}.npy" % held,
            "--feed", "y=%s/y_{trainer}.npy" % data, "--iterations", str(iterations), "--fetch", "w"]
    launch = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    lines = []
    running = threading.Event()
    seen = threading.Event()

    def shown(alternatives):
        # The trainer's line must name its barrier too (under MPI its iteration is not known).
        return any(l.startswith(w) and (" waiting at the barrier of iteration " in l or "pserver" in w)
                   for l in lines for w in alternatives)

    def read():
        for line in launch.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("launch: trainer 1: running"):
                running.set()
            if all(shown(w) for w in wanted):
                seen.set()
        running.set()
        seen.set()  # launch ended: the checks below say what was missing

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if transport == "mpi":
            assert running.wait(120), ("trainer 1 never ran", lines)
            # Past MPI_Init: the pservers heard from trainer 1 (a bounded wait).
            for _ in range(240):
                report = subprocess.run([rill, "status", cluster, "--json", "--deadline-ms", "500"],
                                        capture_output=True, text=True).stdout
                if report.count('{"trainer_id":1,"state":"TRAINING"') + \
                        report.count('{"trainer_id":1,"state":"AT_BARRIER"') == 2:
                    break
            else:
                raise AssertionError(("the pservers never heard from trainer 1", report, lines))
            pid = rank_pid(3, cluster)  # ranks: the 2 pservers, then the trainers
            assert pid is not None, "no process of rank 3"
            os.kill(pid, signal.SIGSTOP)
        assert seen.wait(120), ("launch showed no lasting wait within 120 s", transport, lines)
        for w in wanted:
            assert shown(w), (transport, w, lines)
        if transport == "mpi":
            print("PASS (mpi): launch showed the lasting waits:\n" + "\n".join(l for l in lines if "waiting" in l))
            return
        with open(os.path.join(data, "x_1.npy"), "rb") as src, open(os.path.join(held, "x_1.npy"), "wb") as fifo:
            fifo.write(src.read())
        stdout = launch.stdout.read()
        assert launch.wait(120) == 0, (transport, lines)
        reader.join(10)
    finally:
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait()
    for name in ("pserver 0", "pserver 1", "trainer 0", "trainer 1"):
        assert "launch: %s: done" % name in lines, (transport, name, lines)
    assert "[trainer 1] w fp32 [13,1]" in stdout, stdout
    print("PASS (grpc): launch showed the lasting waits:\n" + "\n".join(l for l in lines if "waiting" in l))


for transport in sys.argv[4:]:
    launch_held(transport)
