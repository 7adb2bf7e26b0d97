"""The activations' forward passes against numpy, an independent reference: each
op, with its default attributes and with others, on odd-sized random inputs in fp32 and
fp64, run by `rill run` and compared with numpy's evaluation of Fluid's formula.

usage: /usr/bin/python3 activations_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

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
for dtype, tol in ((np.float32, 2e-6), (np.float64, 1e-12)):
    inputs = {"any": (rng.standard_normal((7, 13)) * 4).astype(dtype),
              "positive": (np.abs(rng.standard_normal((7, 13))) * 4 + 0.05).astype(dtype)}
    tag = np.dtype(dtype).name
    outs = op_reference.run_cases(rill, work, tag, inputs, [(op, attrs, domain) for op, attrs, domain, _ in CASES])
    if outs is None:
        failed = True
        continue
    for got, (op, attrs, domain, reference) in zip(outs, CASES):
        want = reference(inputs[domain].astype(np.float64)).astype(dtype)
        label = "%s %s%s" % (tag, op, " (" + attrs + ")" if attrs else "")
        failed |= not op_reference.matches(label, got, want, tol)
sys.exit(1 if failed else 0)
