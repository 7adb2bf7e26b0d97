"""layer_norm and dropout against numpy (issue 45's independent reference).

layer_norm: Y, Mean and Variance at begin_norm_axis 1 and 2, with and without Scale and
Bias, fp32 and fp64. dropout: at inference (is_test) both implementations exactly; in
training, that Out is X times Mask times the implementation's scale, that the kept
fraction is 1 - dropout_prob within 4 standard deviations, and that a fixed seed repeats.

usage: /usr/bin/python3 norm_and_dropout_match_numpy.py RILL WORK_DIR      (needs numpy)
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


def layer_norm(x, axis, scale=None, bias=None, eps=1e-5):
    rows = int(np.prod(x.shape[:axis]))
    flat = x.reshape(rows, -1).astype(np.float64)
    mean = flat.mean(1)
    var = flat.var(1)
    y = (flat - mean[:, None]) / np.sqrt(var[:, None] + eps)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y.reshape(x.shape), mean, var


def attr(name, kind, value):
    field = {"INT": "i", "FLOAT": "f", "BOOLEAN": "b", "STRING": "s", "LONG": "l"}[kind]
    if kind == "BOOLEAN":
        value = "true" if value else "false"
    elif kind == "STRING":
        value = '"%s"' % value
    return 'attrs { name: "%s" type: %s %s: %s }' % (name, kind, field, value)


rng = np.random.default_rng(11)
failed = False
for dtype, tol in ((np.float32, 5e-6), (np.float64, 1e-12)):
    tag = np.dtype(dtype).name
    x = (rng.standard_normal((4, 3, 5)) * 2 + 1).astype(dtype)
    scale15 = rng.standard_normal(15).astype(dtype)
    bias15 = rng.standard_normal(15).astype(dtype)
    scale5 = rng.standard_normal(5).astype(dtype)
    inputs = {"x": x, "s15": scale15, "b15": bias15, "s5": scale5, "big": np.ones((200, 50), dtype)}
    ln = ["Y", "Mean", "Variance"]
    cases = [
        ("layer_norm", "", {"X": "x", "Scale": "s15", "Bias": "b15"}, ln, layer_norm(x, 1, scale15, bias15)),
        ("layer_norm", attr("begin_norm_axis", "INT", 2), {"X": "x", "Scale": "s5"}, ln, layer_norm(x, 2, scale5)),
        ("layer_norm", attr("epsilon", "FLOAT", 0.5), {"X": "x"}, ln, layer_norm(x, 1, eps=0.5)),
        ("dropout", attr("is_test", "BOOLEAN", True) + " " + attr("dropout_prob", "FLOAT", 0.25), "x", ["Out"],
         [x * np.float32(0.75).astype(dtype)]),
        ("dropout", attr("is_test", "BOOLEAN", True) + " " + attr("dropout_implementation", "STRING", "upscale_in_train"),
         "x", ["Out"], [x]),
    ]
    training = []
    for how in ("downgrade_in_infer", "upscale_in_train"):
        for repeat in range(2):
            training.append(how)
            cases.append(("dropout", " ".join([attr("dropout_prob", "FLOAT", 0.3), attr("fix_seed", "BOOLEAN", True),
                                               attr("seed", "INT", 5), attr("dropout_implementation", "STRING", how)]),
                          "big", ["Out", "Mask"], None))
    try:
        outs = op_reference.run_ops(rill, work, tag, inputs, [c[:4] for c in cases])
    except RuntimeError as e:
        print("FAIL: %s" % e)
        failed = True
        continue
    for got, (op, attrs, slots, names, want) in zip(outs, cases):
        if want is None:
            continue
        for g, w, name in zip(got, want, names):
            failed |= not op_reference.matches("%s %s %s %s" % (tag, op, attrs, name), g, np.asarray(w).astype(dtype), tol)
    runs = outs[len(cases) - len(training):]
    p = 0.3
    for k, ((out, mask), how) in enumerate(zip(runs, training)):
        label = "%s dropout training %s run %d" % (tag, how, k % 2)
        scale = 1 / (1 - np.float32(p)) if how == "upscale_in_train" else 1
        kept = mask.mean()
        sigma = math.sqrt(p * (1 - p) / mask.size)
        ok = op_reference.matches(label + " Out = X * Mask * scale", out, (inputs["big"] * mask * scale).astype(dtype), tol)
        if not abs(kept - (1 - p)) <= 4 * sigma:
            print("FAIL: %s: kept %.4f of the elements, want %.2f +- %.4f" % (label, kept, 1 - p, 4 * sigma))
            ok = False
        failed |= not ok
    for a, b in ((0, 1), (2, 3)):
        if not np.array_equal(runs[a][1], runs[b][1]):
            print("FAIL: %s dropout %s: the same fixed seed gave different masks" % (tag, training[a]))
            failed = True
sys.exit(1 if failed else 0)
