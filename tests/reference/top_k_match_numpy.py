"""top_k, top_k_v2, arg_max and accuracy against numpy, an independent reference:
values without ties (so the order is numpy's), every axis for top_k_v2, largest and
smallest, K as an input; fp32, fp64 and int64.

usage: /usr/bin/python3 top_k_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


def top(x, k, axis, largest=True):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, idx, axis), idx.astype(np.int64)]


rng = np.random.default_rng(13)
failed = False
for dtype in (np.float32, np.float64, np.int64):
    tag = np.dtype(dtype).name
    x = rng.permutation(3 * 7 * 5).reshape(3, 7, 5).astype(dtype)  # distinct values: no ties
    indices = rng.integers(0, 9, size=(8, 3)).astype(np.int64)
    label = rng.integers(0, 9, size=(8, 1)).astype(np.int64)
    inputs = {"x": x, "k": np.array([4], np.int32), "indices": indices, "label": label, "vals": indices.astype(np.float32)}
    both = ["Out", "Indices"]
    cases = [
        ("top_k", op_reference.attrs(k=2), "x", both, top(x, 2, -1)),
        ("top_k", "", {"X": "x", "K": "k"}, both, top(x, 4, -1)),
        ("top_k_v2", op_reference.attrs(k=3, axis=1), "x", both, top(x, 3, 1)),
        ("top_k_v2", op_reference.attrs(k=2, axis=0, largest=False), "x", both, top(x, 2, 0, False)),
        ("arg_max", "", "x", ["Out"], [np.argmax(x, -1)]),
        ("arg_max", op_reference.attrs(axis=1, keepdims=True), "x", ["Out"], [np.argmax(x, 1)[:, None, :]]),
        ("arg_max", op_reference.attrs(axis=0, flatten=True), "x", ["Out"], [np.array([np.argmax(x)])]),
    ]
    correct = int(sum(label[i, 0] in indices[i] for i in range(8)))
    cases.append(("accuracy", "", {"Out": "vals", "Indices": "indices", "Label": "label"}, ["Accuracy", "Correct", "Total"],
                  [np.array([correct / 8], np.float32), np.array([correct], np.int32), np.array([8], np.int32)]))
    outs = op_reference.run_cases(rill, work, tag, inputs, [c[:4] for c in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, attr_text, slots, names, want) in zip(outs, cases):
        for g, w, name in zip(got, want, names):
            w = np.asarray(w)
            if name == "Out" and op != "arg_max":
                w = w.astype(dtype)
            elif op == "arg_max":
                w = w.astype(np.int64)
            failed |= not op_reference.matches("%s %s %s %s" % (tag, op, attr_text, name), g, w)
sys.exit(1 if failed else 0)
