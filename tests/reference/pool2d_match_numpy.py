"""pool2d against a numpy evaluation of Fluid's definition: max and avg, strides,
2- and 4-value paddings, SAME and VALID, ceil_mode, exclusive or not, global, adaptive,
NCHW and NHWC; fp32 and fp64.

usage: /usr/bin/python3 pool2d_match_numpy.py RILL WORK_DIR      (needs numpy)
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


def windows(size, k, s, before, after, ceil_mode):
    span = size + before + after - k
    out = (math.ceil(span / s) if ceil_mode else span // s) + 1
    return [(max(o * s - before, 0), min(o * s - before + k, size)) for o in range(out)]


def pool(x, kind, k, s=(1, 1), pad=(0, 0, 0, 0), ceil_mode=False, exclusive=True, adaptive=False, nhwc=False):
    if nhwc:
        return pool(x.transpose(0, 3, 1, 2), kind, k, s, pad, ceil_mode, exclusive, adaptive).transpose(0, 2, 3, 1)
    h, w = x.shape[2:]
    if adaptive:
        rows = [(o * h // k[0], -(-(o + 1) * h // k[0])) for o in range(k[0])]
        cols = [(o * w // k[1], -(-(o + 1) * w // k[1])) for o in range(k[1])]
    else:
        rows = windows(h, k[0], s[0], pad[0], pad[1], ceil_mode)
        cols = windows(w, k[1], s[1], pad[2], pad[3], ceil_mode)
    out = np.zeros(x.shape[:2] + (len(rows), len(cols)))
    for a, (y0, y1) in enumerate(rows):
        for b, (x0, x1) in enumerate(cols):
            win = x[:, :, y0:y1, x0:x1].astype(np.float64)
            if kind == "max":
                out[:, :, a, b] = win.max(axis=(2, 3))
            else:
                out[:, :, a, b] = win.sum(axis=(2, 3)) / ((y1 - y0) * (x1 - x0) if exclusive or adaptive else k[0] * k[1])
    return out


rng = np.random.default_rng(19)
failed = False
for dtype, tol in ((np.float32, 2e-6), (np.float64, 1e-12)):
    tag = np.dtype(dtype).name
    x = rng.standard_normal((2, 3, 7, 9)).astype(dtype)
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    cases = [
        (op_reference.attrs(pooling_type="max", ksize=[3, 3], strides=[2, 2]), "x", pool(x, "max", (3, 3), (2, 2))),
        (op_reference.attrs(pooling_type="avg", ksize=[3, 2], strides=[2, 1], paddings=[1, 1]), "x",
         pool(x, "avg", (3, 2), (2, 1), (1, 1, 1, 1))),
        (op_reference.attrs(pooling_type="avg", ksize=[3, 3], strides=[2, 2], paddings=[1, 1], exclusive=False), "x",
         pool(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1), exclusive=False)),
        (op_reference.attrs(pooling_type="max", ksize=[2, 2], strides=[2, 2], paddings=[0, 1, 1, 0]), "x",
         pool(x, "max", (2, 2), (2, 2), (0, 1, 1, 0))),
        (op_reference.attrs(pooling_type="max", ksize=[2, 4], strides=[2, 3], ceil_mode=True), "x", pool(x, "max", (2, 4), (2, 3), ceil_mode=True)),
        (op_reference.attrs(pooling_type="avg", ksize=[3, 3], strides=[2, 2], padding_algorithm="SAME"), "x",
         pool(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1))),  # SAME on 7 and 9 with stride 2: one each side
        (op_reference.attrs(pooling_type="max", ksize=[3, 3], strides=[2, 2], paddings=[5, 5], padding_algorithm="VALID"), "x",
         pool(x, "max", (3, 3), (2, 2))),
        (op_reference.attrs(pooling_type="avg", global_pooling=True), "x", pool(x, "avg", (7, 9))),
        (op_reference.attrs(pooling_type="avg", ksize=[3, 4], adaptive=True), "x", pool(x, "avg", (3, 4), adaptive=True)),
        (op_reference.attrs(pooling_type="max", ksize=[2, 5], adaptive=True), "x", pool(x, "max", (2, 5), adaptive=True)),
        (op_reference.attrs(pooling_type="max", ksize=[3, 3], strides=[2, 2], data_format="NHWC"), "xt",
         pool(xt, "max", (3, 3), (2, 2), nhwc=True)),
        (op_reference.attrs(pooling_type="avg", ksize=[2, 2], strides=[1, 2], paddings=[1, 0], data_format="NHWC"), "xt",
         pool(xt, "avg", (2, 2), (1, 2), (1, 1, 0, 0), nhwc=True)),
    ]
    outs = op_reference.run_cases(rill, work, tag, {"x": x, "xt": xt}, [("pool2d", a, i) for a, i, _ in cases])
    if outs is None:
        failed = True
        continue
    for got, (a, i, want) in zip(outs, cases):
        failed |= not op_reference.matches("%s pool2d %s" % (tag, a), got, want.astype(dtype), tol)
sys.exit(1 if failed else 0)
