"""softmax_with_cross_entropy against numpy, an independent reference: hard labels
with ignore_index, soft labels, the class axis first and last, use_softmax false; fp32 and
fp64. Both outputs, Softmax and Loss, are compared.

usage: /usr/bin/python3 softmax_with_cross_entropy_match_numpy.py RILL WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


rng = np.random.default_rng(7)
failed = False
for dtype, tol in ((np.float32, 2e-6), (np.float64, 1e-12)):
    logits = (rng.standard_normal((6, 5)) * 3).astype(dtype)
    hard = rng.integers(0, 5, size=(6, 1)).astype(np.int64)
    hard[2, 0] = -100  # ignore_index's default
    soft = softmax(rng.standard_normal((6, 5)), 1).astype(dtype)
    probs = softmax(logits.astype(np.float64), 1).astype(dtype)
    hard0 = rng.integers(0, 6, size=(1, 5)).astype(np.int64)
    p64 = softmax(logits.astype(np.float64), 1)
    loss_hard = np.where(hard == -100, 0, -np.log(np.take_along_axis(p64, np.maximum(hard, 0), 1)))
    p0 = softmax(logits.astype(np.float64), 0)
    cases = [  # (attrs, label, want softmax, want loss)
        ("", "hard", p64, loss_hard),
        ('attrs { name: "soft_label" type: BOOLEAN b: true }', "soft", p64,
         -(soft.astype(np.float64) * np.log(p64)).sum(1, keepdims=True)),
        ('attrs { name: "axis" type: LONG l: 0 }', "hard0", p0, -np.log(np.take_along_axis(p0, hard0, 0))),
        ('attrs { name: "use_softmax" type: BOOLEAN b: false }', "hard_p", probs.astype(np.float64),
         np.where(hard == -100, 0, -np.log(np.take_along_axis(probs.astype(np.float64), np.maximum(hard, 0), 1)))),
    ]
    inputs = {"logits": logits, "probs": probs, "hard": hard, "soft": soft, "hard0": hard0}
    tag = np.dtype(dtype).name
    decl = "".join('vars { name: "%s" type { type: LOD_TENSOR lod_tensor { tensor { data_type: %s%s } } } }\n'
                   % (n, op_reference.FLUID_DTYPES[v.dtype], "".join(" dims: %d" % d for d in v.shape))
                   for n, v in inputs.items())
    ops = ""
    for k, (attrs, label, _, _) in enumerate(cases):
        x = "probs" if label == "hard_p" else "logits"
        ops += ('ops { type: "softmax_with_cross_entropy" inputs { parameter: "Logits" arguments: "%s" } '
                'inputs { parameter: "Label" arguments: "%s" } outputs { parameter: "Softmax" arguments: "p%d" } '
                'outputs { parameter: "Loss" arguments: "l%d" } %s }\n' % (x, "hard" if label == "hard_p" else label, k, k, attrs))
    program = os.path.join(work, tag + ".pbtxt")
    with open(program, "w") as f:
        f.write("blocks { idx: 0 parent_idx: -1\n" + decl + ops + "}\n")
    argv = [rill, "run", program, "--save", os.path.join(work, tag)]
    for n, v in inputs.items():
        np.save(os.path.join(work, "%s_%s.npy" % (tag, n)), v)
        argv += ["--feed", "%s=%s" % (n, os.path.join(work, "%s_%s.npy" % (tag, n)))]
    for k in range(len(cases)):
        argv += ["--fetch", "p%d" % k, "--fetch", "l%d" % k]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: %s: %s" % (tag, r.stderr))
        failed = True
        continue
    for k, (attrs, label, want_p, want_l) in enumerate(cases):
        got_p = np.load(os.path.join(work, tag, "p%d.npy" % k))
        got_l = np.load(os.path.join(work, tag, "l%d.npy" % k))
        label_text = "%s %s label %s" % (tag, attrs, label)
        failed |= not op_reference.matches(label_text + " Softmax", got_p, want_p.astype(dtype), tol)
        failed |= not op_reference.matches(label_text + " Loss", got_l, want_l.astype(dtype), tol)
sys.exit(1 if failed else 0)
