"""The activations' forward passes against numpy (issue 45's independent reference): each
op, with its default attributes and with others, on odd-sized random inputs in fp32 and
fp64, run by `rill run` and compared with numpy's evaluation of Fluid's formula.

usage: /usr/bin/python3 activations_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import math
import os
import shutil
import subprocess
import sys

import numpy as np

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

erf = np.vectorize(math.erf)


def clip(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


def f32(v):
    """An attribute's value as the op reads it: Fluid's FLOAT attributes are fp32."""
    return float(np.float32(v))


# (op, attributes as text-format attrs, input domain, numpy reference)
CASES = [
    ("exp", "", "any", np.exp),
    ("log", "", "positive", np.log),
    ("sqrt", "", "positive", np.sqrt),
    ("abs", "", "any", np.abs),
    ("relu6", "", "any", lambda x: clip(x, 0, 6)),
    ("relu6", 'attrs { name: "threshold" type: FLOAT f: 3 }', "any", lambda x: clip(x, 0, 3)),
    ("leaky_relu", "", "any", lambda x: np.where(x > 0, x, f32(0.02) * x)),
    ("leaky_relu", 'attrs { name: "alpha" type: FLOAT f: 0.25 }', "any", lambda x: np.where(x > 0, x, 0.25 * x)),
    ("gelu", "", "any", lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    ("gelu", 'attrs { name: "approximate" type: BOOLEAN b: true }', "any",
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    ("swish", "", "any", lambda x: x / (1 + np.exp(-x))),
    ("swish", 'attrs { name: "beta" type: FLOAT f: 2.5 }', "any", lambda x: x / (1 + np.exp(-2.5 * x))),
    ("hard_swish", "", "any", lambda x: x * clip(x + 3, 0, 6) / 6),
    ("hard_swish", 'attrs { name: "threshold" type: FLOAT f: 4 } attrs { name: "scale" type: FLOAT f: 5 } '
                   'attrs { name: "offset" type: FLOAT f: 1 }', "any", lambda x: x * clip(x + 1, 0, 4) / 5),
    ("hard_sigmoid", "", "any", lambda x: clip(f32(0.2) * x + 0.5, 0, 1)),
    ("hard_sigmoid", 'attrs { name: "slope" type: FLOAT f: 0.5 } attrs { name: "offset" type: FLOAT f: 0.25 }', "any",
     lambda x: clip(0.5 * x + 0.25, 0, 1)),
    ("clip", 'attrs { name: "min" type: FLOAT f: -1.5 } attrs { name: "max" type: FLOAT f: 2 }', "any",
     lambda x: clip(x, -1.5, 2)),
]

rng = np.random.default_rng(45)
failed = False
for dtype, fluid, tol in ((np.float32, "FP32", 2e-6), (np.float64, "FP64", 1e-12)):
    inputs = {"any": (rng.standard_normal((7, 13)) * 4).astype(dtype),
              "positive": (np.abs(rng.standard_normal((7, 13))) * 4 + 0.05).astype(dtype)}
    decl = "".join('vars { name: "%s" type { type: LOD_TENSOR lod_tensor { tensor { data_type: %s dims: 7 dims: 13 } } } }\n'
                   % (name, fluid) for name in inputs)
    ops = "".join('ops { type: "%s" inputs { parameter: "X" arguments: "%s" } outputs { parameter: "Out" arguments: "out%d" } %s }\n'
                  % (op, domain, k, attrs) for k, (op, attrs, domain, _) in enumerate(CASES))
    program = os.path.join(work, "activations_%s.pbtxt" % fluid)
    with open(program, "w") as f:
        f.write("blocks { idx: 0 parent_idx: -1\n" + decl + ops + "}\n")
    argv = [rill, "run", program, "--save", os.path.join(work, fluid)]
    for name, value in inputs.items():
        path = os.path.join(work, "%s_%s.npy" % (name, fluid))
        np.save(path, value)
        argv += ["--feed", "%s=%s" % (name, path)]
    for k in range(len(CASES)):
        argv += ["--fetch", "out%d" % k]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: rill run (%s) exited %d: %s" % (fluid, r.returncode, r.stderr))
        failed = True
        continue
    for k, (op, attrs, domain, reference) in enumerate(CASES):
        x = inputs[domain]
        want = reference(x.astype(np.float64))
        got = np.load(os.path.join(work, fluid, "out%d.npy" % k))
        err = float(np.max(np.abs(got.astype(np.float64) - want) / np.maximum(1, np.abs(want))))
        label = "%s %s%s" % (fluid, op, " (" + attrs + ")" if attrs else "")
        if got.dtype != dtype or got.shape != x.shape or not err <= tol:
            print("FAIL: %s: dtype %s shape %s, max relative error %g (tolerance %g)" % (label, got.dtype, got.shape, err, tol))
            failed = True
        else:
            print("ok: %s: max relative error %.1e" % (label, err))
sys.exit(1 if failed else 0)
