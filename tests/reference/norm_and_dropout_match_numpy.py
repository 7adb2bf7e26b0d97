"""layer_norm, batch_norm and dropout against numpy, an independent reference.

layer_norm: Y, Mean and Variance at begin_norm_axis 1 and 2, with and without Scale and
Bias, fp32 and fp64. batch_norm: in training (Y, MeanOut, VarianceOut, SavedMean,
SavedVariance) and with is_test, NCHW and NHWC. dropout: at inference (is_test) both implementations exactly; in
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


def batch_norm(x, scale, bias, mean, var, nhwc=False, test=False, momentum=float(np.float32(0.9)), eps=float(np.float32(1e-5))):
    axes = (0, 1, 2) if nhwc else (0, 2, 3)
    shape = (1, 1, 1, -1) if nhwc else (1, -1, 1, 1)
    x64 = x.astype(np.float64)
    bm, bv = (mean, var) if test else (x64.mean(axes), x64.var(axes))
    y = (x64 - bm.reshape(shape)) / np.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
    if test:
        return [y, mean, var]
    return [y, momentum * mean + (1 - momentum) * bm, momentum * var + (1 - momentum) * bv, bm, 1 / np.sqrt(bv + eps)]


A = op_reference.attrs


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
    c = 3
    bn_in = {"Scale": "bn_scale", "Bias": "bn_bias", "Mean": "bn_mean", "Variance": "bn_var"}
    inputs.update({"nchw": (rng.standard_normal((2, c, 4, 5)) * 3 + 1).astype(dtype),
                   "nhwc": (rng.standard_normal((2, 4, 5, c)) * 3 - 1).astype(dtype),
                   "bn_scale": rng.standard_normal(c).astype(dtype), "bn_bias": rng.standard_normal(c).astype(dtype),
                   "bn_mean": rng.standard_normal(c).astype(dtype), "bn_var": (rng.random(c) + 0.5).astype(dtype)})
    bn_args = [inputs[k].astype(np.float64) for k in ("bn_scale", "bn_bias", "bn_mean", "bn_var")]
    bn_train = ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"]
    cases = [
        ("layer_norm", "", {"X": "x", "Scale": "s15", "Bias": "b15"}, ln, layer_norm(x, 1, scale15, bias15)),
        ("layer_norm", A(begin_norm_axis=2), {"X": "x", "Scale": "s5"}, ln, layer_norm(x, 2, scale5)),
        ("layer_norm", A(epsilon=0.5), {"X": "x"}, ln, layer_norm(x, 1, eps=0.5)),
        ("batch_norm", "", dict(X="nchw", **bn_in), bn_train, batch_norm(inputs["nchw"], *bn_args)),
        ("batch_norm", A(data_layout="NHWC"), dict(X="nhwc", **bn_in), bn_train,
         batch_norm(inputs["nhwc"], *bn_args, nhwc=True)),
        ("batch_norm", A(is_test=True), dict(X="nchw", **bn_in), ["Y", "MeanOut", "VarianceOut"],
         batch_norm(inputs["nchw"], *bn_args, test=True)),
        ("dropout", A(is_test=True, dropout_prob=0.25), "x", ["Out"],
         [x * np.float32(0.75).astype(dtype)]),
        ("dropout", A(is_test=True, dropout_implementation="upscale_in_train"),
         "x", ["Out"], [x]),
    ]
    training = []
    for how in ("downgrade_in_infer", "upscale_in_train"):
        for repeat in range(2):
            training.append(how)
            cases.append(("dropout", A(dropout_prob=0.3, fix_seed=True, seed=5, dropout_implementation=how),
                          "big", ["Out", "Mask"], None))
    outs = op_reference.run_cases(rill, work, tag, inputs, [c[:4] for c in cases])
    if outs is None:
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
