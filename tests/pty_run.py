"""Running a command with its stderr on a pseudo-terminal, for the tests of what rill
shows on a terminal (progress lines, launch's status)."""
import os
import pty
import subprocess


def run_on_pty(args, timeout=240):
    """Runs `args` with stderr on a pty's slave side; returns (exit status, what it wrote
    to the terminal, its stdout), both decoded."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    tty = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the slave side closed with the process
            break
        if not chunk:
            break
        tty += chunk
    stdout = proc.communicate(timeout=timeout)[0]
    os.close(master)
    return proc.returncode, tty.decode(), stdout.decode()
