"""`rill run --profile` of Fluid's select Fibonacci (examples/csp/fibonacci.pbtxt) on two
workers: the trace parses as Chrome's trace-event format and holds what the program did.

    /usr/bin/python3 trace_matches_program.py RILL SOURCE_DIR OUT_DIR
"""
import collections
import json
import os
import subprocess
import sys

rill, source, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
program = os.path.join(source, "examples", "csp", "fibonacci.pbtxt")
trace_path = os.path.join(out, "fib.json")
run = subprocess.run([rill, "run", program, "--fetch", "result", "--workers", "2", "--profile", trace_path,
                      "--profile-summary"], capture_output=True, text=True, timeout=120)
assert run.returncode == 0, run.stderr
assert "result int32 [1] 34" in run.stdout, run.stdout

with open(trace_path) as f:
    events = json.load(f)["traceEvents"]
lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
assert sorted(lanes.values()) == ["worker 0", "worker 1"], lanes

ops = [e for e in events if e["ph"] == "X"]
assert all(e["tid"] in lanes for e in ops), "an op span on an unnamed lane"
count = collections.Counter(e["name"] for e in ops)
# The while loop runs the select 11 times: 10 sends of the next number, then the
# receive from quit_ch. The go block receives 10 times and sends once.
assert count["while"] == 1 and count["go"] == 1 and count["select"] == 11, count
recvs = [e for e in ops if e["name"] == "channel_recv"]
assert len(recvs) == 10 and all(e["args"]["block"] == 1 for e in recvs), recvs[:2]
assert count["channel_send"] == 1 and count["elementwise_add"] == 10, count
assert all(e["args"]["inputs"].startswith("Channel=") for e in recvs)
adds = [e for e in ops if e["name"] == "elementwise_add"]
assert all("X=int32[1]" in e["args"]["inputs"] for e in adds), adds[0]
for e in ops:
    assert e["dur"] >= 0 and e["ts"] >= 0

spawns = [e for e in events if e["ph"] == "i"]
go_op = next(e for e in ops if e["name"] == "go")
assert len(spawns) == 1 and spawns[0]["args"] == {"block": 0, "op": go_op["args"]["op"]}, spawns
assert spawns[0]["name"] == "spawn by go", spawns

# Waits: per task (id), begins and ends alternate, each end no earlier than its begin, all
# on channel ops.
waits = [e for e in events if e["ph"] in "be" and e.get("cat") == "wait"]
assert waits, "no task waited: the go block and the loop hand every number over an unbuffered channel"
open_waits = {}
for e in sorted(waits, key=lambda e: e["ts"]):
    if e["ph"] == "b":
        assert e["id"] not in open_waits, e
        open_waits[e["id"]] = e
    else:
        begin = open_waits.pop(e["id"])
        assert begin["ts"] <= e["ts"] and begin["name"] == e["name"], (begin, e)
assert not open_waits, open_waits
for e in waits:
    assert e["args"]["op_type"] in ("channel_recv", "channel_send", "select"), e
    assert e["name"].startswith("wait: ")

summary = run.stdout.splitlines()
assert summary[0].split() == ["op", "calls", "total", "ms", "mean", "ms", "min", "ms", "max", "ms", "share"]
rows = {line.split()[0]: line.split() for line in summary[1:] if line and not line.startswith("result")}
assert rows["select"][1] == "11" and rows["channel_recv"][1] == "10", rows

# A trace that cannot be written fails before the program runs.
bad = subprocess.run([rill, "run", program, "--fetch", "result", "--profile", "/nonexistent/dir/t.json"],
                     capture_output=True, text=True, timeout=60)
assert bad.returncode == 1 and "--profile: cannot write '/nonexistent/dir/t.json'" in bad.stderr, bad.stderr
assert "result" not in bad.stdout, bad.stdout
print("PASS: the trace holds the program's %d op spans on %d lanes, %d waits and its spawn" %
      (len(ops), len(lanes), len(waits) // 2))
