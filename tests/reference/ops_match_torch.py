"""The model ops, forward and gradient, against PyTorch (Debian's python3-torch), which
nobody here wrote: random shapes and attribute combinations (odd sizes, padding, stride > 1,
dilation, groups, NHWC), fp32 and fp64.

Each case is one op on inputs of its own. Per dtype, all cases go into one program; every
output a case differentiates is multiplied by a random tensor G and summed into the loss
(so an input's gradient is G pulled back through the op), `rill backward` appends the
gradient ops as it would for training, and one `rill run` fetches the outputs and the
gradients. PyTorch computes the same with autograd, in fp64 for the fp32 program too. Ops PyTorch lacks, or whose randomness
cannot match (dropout), keep their numpy tests (*_match_numpy.py).

usage: /usr/bin/python3 ops_match_torch.py RILL WORK_DIR      (needs numpy and torch)
RILL_REFERENCE_SEED=N draws other random cases (the test suite's are seed 45's).
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
torch.set_num_threads(1)


class Case:
    """op(inputs) -> outputs, and `ref`, the same in PyTorch: a function of a dict slot ->
    tensor (a list for a list slot) returning slot -> tensor for the outputs to compare.
    `grads`: the input slots whose gradients are checked; `through`: the outputs they are
    taken through (default: every compared output that is floating point)."""

    def __init__(self, label, op, attrs, inputs, outputs, ref, grads=(), through=None):
        self.label, self.op, self.attrs, self.inputs, self.outputs = label, op, attrs, inputs, outputs
        self.ref, self.grads, self.through = ref, list(grads), through


def f32(v):
    """A FLOAT attribute's value as the op reads it: rounded to fp32."""
    return float(np.float32(v))


def nchw(x, nhwc):
    return x.permute(0, 3, 1, 2) if nhwc else x


def back(y, nhwc):
    return y.permute(0, 2, 3, 1) if nhwc else y


def same_pads(size, k, s):
    """Paddle's SAME: Out = ceil(in / stride), the padding split with the extra at the end."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def conv_cases(rng, dt, count):
    cases = []
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        c = groups * int(rng.integers(1, 4))
        m = groups * int(rng.integers(1, 4))
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(5, 12)), int(rng.integers(5, 12))
        kh, kw = int(rng.choice([1, 2, 3, 5])), int(rng.choice([1, 3, 4]))
        s = [int(rng.integers(1, 4)), int(rng.integers(1, 3))]
        d = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        nhwc = bool(rng.integers(0, 2))
        algorithm = str(rng.choice(["EXPLICIT", "EXPLICIT", "SAME", "VALID"]))
        pads = [int(v) for v in rng.integers(0, 3, size=4)]
        if algorithm == "SAME":  # Paddle's SAME: the undilated filter's padding, dilation 1
            d = [1, 1]
            pads = list(same_pads(h, kh, s[0]) + same_pads(w, kw, s[1]))
        elif algorithm == "VALID":
            pads = [0, 0, 0, 0]
        dk = [d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1]
        if h + pads[0] + pads[1] < dk[0] or w + pads[2] + pads[3] < dk[1]:
            continue
        x = rng.standard_normal((n, h, w, c) if nhwc else (n, c, h, w)).astype(dt)
        f = rng.standard_normal((m, c // groups, kh, kw)).astype(dt)
        attrs = dict(strides=s, paddings=pads if algorithm == "EXPLICIT" else [9, 9], padding_algorithm=algorithm,
                     dilations=d, groups=groups, data_format="NHWC" if nhwc else "NCHW")

        def ref(t, s=s, d=d, pads=pads, groups=groups, nhwc=nhwc):
            xp = F.pad(nchw(t["Input"], nhwc), (pads[2], pads[3], pads[0], pads[1]))
            return {"Output": back(F.conv2d(xp, t["Filter"], stride=s, dilation=d, groups=groups), nhwc)}
        op = "depthwise_conv2d" if groups == c == m and groups > 1 and rng.integers(0, 2) else "conv2d"
        cases.append(Case("%s %s x%s f%s" % (op, attrs, x.shape, f.shape), op, attrs, {"Input": x, "Filter": f},
                          ["Output"], ref, grads=["Input", "Filter"]))
    return cases


def conv_transpose_cases(rng, dt, count):
    cases = []
    for _ in range(count):
        groups = int(rng.choice([1, 2]))
        c, mg = groups * int(rng.integers(1, 3)), int(rng.integers(1, 3))
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(3, 7)), int(rng.integers(3, 7))
        kh, kw = int(rng.choice([1, 2, 3])), int(rng.choice([2, 3]))
        s = [int(rng.integers(1, 4)), int(rng.integers(1, 3))]
        d = [int(rng.integers(1, 3)), 1]
        p = [int(rng.integers(0, 2)), int(rng.integers(0, 2))]
        extra = [int(rng.integers(0, max(s[0], d[0]))), int(rng.integers(0, max(s[1], d[1])))]
        nhwc = bool(rng.integers(0, 2))
        x = rng.standard_normal((n, h, w, c) if nhwc else (n, c, h, w)).astype(dt)
        f = rng.standard_normal((c, mg, kh, kw)).astype(dt)
        attrs = dict(strides=s, paddings=p, dilations=d, groups=groups, output_padding=extra,
                     data_format="NHWC" if nhwc else "NCHW")

        def ref(t, s=s, d=d, p=p, groups=groups, extra=extra, nhwc=nhwc):
            y = F.conv_transpose2d(nchw(t["Input"], nhwc), t["Filter"], stride=s, padding=p, output_padding=extra,
                                   groups=groups, dilation=d)
            return {"Output": back(y, nhwc)}
        cases.append(Case("conv2d_transpose %s x%s f%s" % (attrs, x.shape, f.shape), "conv2d_transpose", attrs,
                          {"Input": x, "Filter": f}, ["Output"], ref, grads=["Input", "Filter"]))
    # output_padding past a stride (dilation 2 > stride 1), in both layouts.
    for nhwc in (False, True):
        x = rng.standard_normal((2, 4, 3, 4) if nhwc else (2, 4, 4, 3)).astype(dt)
        f = rng.standard_normal((4, 2, 2, 3)).astype(dt)
        attrs = dict(strides=[1, 2], paddings=[0, 1], dilations=[2, 1], groups=2, output_padding=[1, 0],
                     data_format="NHWC" if nhwc else "NCHW")

        def ref(t, nhwc=nhwc):
            y = F.conv_transpose2d(nchw(t["Input"], nhwc), t["Filter"], stride=[1, 2], padding=[0, 1],
                                   output_padding=[1, 0], groups=2, dilation=[2, 1])
            return {"Output": back(y, nhwc)}
        cases.append(Case("conv2d_transpose %s" % attrs, "conv2d_transpose", attrs, {"Input": x, "Filter": f},
                          ["Output"], ref, grads=["Input", "Filter"]))
    return cases


def pool_cases(rng, dt, count):
    cases = []
    while len(cases) < count:
        n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(4, 10)), int(rng.integers(4, 10))
        kind = str(rng.choice(["max", "avg"]))
        nhwc = bool(rng.integers(0, 2))
        mode = str(rng.choice(["plain", "plain", "ceil", "adaptive", "global"]))
        k = [int(rng.integers(1, 4)), int(rng.integers(2, 4))]
        s = [int(rng.integers(1, k[0] + 1)), int(rng.integers(1, k[1] + 1))]
        p = [int(rng.integers(0, k[0] // 2 + 1)), int(rng.integers(0, k[1] // 2 + 1))]
        exclusive = bool(rng.integers(0, 2))
        attrs = dict(pooling_type=kind, ksize=k, strides=s, paddings=p, exclusive=exclusive,
                     data_format="NHWC" if nhwc else "NCHW")
        if mode == "ceil":  # where Paddle's and PyTorch's ceil_mode agree: no padding, exclusive
            p, exclusive = [0, 0], True
            attrs.update(ceil_mode=True, paddings=p, exclusive=True)
        elif mode == "adaptive":
            k = [int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))]
            attrs.update(adaptive=True, ksize=k)
        elif mode == "global":
            attrs.update(global_pooling=True)
        if h + 2 * p[0] < k[0] or w + 2 * p[1] < k[1]:
            continue
        x = rng.standard_normal((n, h, w, c) if nhwc else (n, c, h, w)).astype(dt)

        def ref(t, kind=kind, k=k, s=s, p=p, mode=mode, exclusive=exclusive, nhwc=nhwc):
            xt = nchw(t["X"], nhwc)
            if mode == "adaptive":
                y = (F.adaptive_max_pool2d if kind == "max" else F.adaptive_avg_pool2d)(xt, k)
            elif mode == "global":
                y = (F.max_pool2d if kind == "max" else F.avg_pool2d)(xt, xt.shape[2:])
            elif kind == "max":
                y = F.max_pool2d(xt, k, s, p, ceil_mode=mode == "ceil")
            else:
                y = F.avg_pool2d(xt, k, s, p, ceil_mode=mode == "ceil", count_include_pad=not exclusive)
            return {"Out": back(y, nhwc)}
        cases.append(Case("pool2d %s %s x%s" % (mode, attrs, x.shape), "pool2d", attrs, {"X": x}, ["Out"], ref,
                          grads=["X"]))
    # Ties, as after relu: each window's gradient goes to its first largest element.
    x = np.maximum(rng.standard_normal((2, 3, 6, 6)), 0).astype(dt)
    x[0, 0, :2, :2] = 0
    cases.append(Case("pool2d max with ties", "pool2d", dict(pooling_type="max", ksize=[2, 2], strides=[2, 2]), {"X": x},
                      ["Out"], lambda t: {"Out": F.max_pool2d(t["X"], 2, 2)}, grads=["X"]))
    return cases


def norm_cases(rng, dt):
    cases = []
    for nhwc, is_test, shape in ((False, False, (3, 4, 5, 3)), (True, False, (2, 3, 5, 4)), (False, True, (2, 3, 4, 5)),
                                 (False, False, (5, 3))):
        c = shape[-1] if nhwc else shape[1]
        x = rng.standard_normal(shape).astype(dt) * 2 + 0.5
        ins = {"X": x, "Scale": rng.standard_normal(c).astype(dt), "Bias": rng.standard_normal(c).astype(dt),
               "Mean": rng.standard_normal(c).astype(dt), "Variance": rng.uniform(0.5, 2, c).astype(dt)}
        attrs = dict(is_test=is_test, momentum=0.8, epsilon=1e-4, data_layout="NHWC" if nhwc else "NCHW")

        def ref(t, nhwc=nhwc, is_test=is_test):
            xt = t["X"].movedim(-1, 1) if nhwc else t["X"]
            rm, rv = t["Mean"].detach().clone(), t["Variance"].detach().clone()
            y = F.batch_norm(xt, rm, rv, t["Scale"], t["Bias"], training=not is_test, momentum=1 - f32(0.8), eps=f32(1e-4))
            out = {"Y": y.movedim(1, -1) if nhwc else y}
            if not is_test:
                out["MeanOut"] = rm  # PyTorch's running variance uses the unbiased estimate; Fluid's the biased
            return out
        cases.append(Case("batch_norm %s x%s" % (attrs, shape), "batch_norm", attrs, ins,
                          ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"], ref,
                          grads=["X", "Scale", "Bias"], through=["Y"]))
    for shape, axis in (((3, 7), 1), ((2, 3, 5), 1), ((2, 3, 5), 2), ((4, 2, 3, 3), 2)):
        row = int(np.prod(shape[axis:]))
        ins = {"X": rng.standard_normal(shape).astype(dt), "Scale": rng.standard_normal(row).astype(dt),
               "Bias": rng.standard_normal(row).astype(dt)}

        def ref(t, shape=shape, axis=axis):
            return {"Y": F.layer_norm(t["X"], shape[axis:], t["Scale"].reshape(shape[axis:]),
                                      t["Bias"].reshape(shape[axis:]), eps=f32(1e-5))}
        cases.append(Case("layer_norm axis %d x%s" % (axis, shape), "layer_norm", dict(begin_norm_axis=axis), ins,
                          ["Y", "Mean", "Variance"], ref, grads=["X", "Scale", "Bias"]))
    cases.append(Case("layer_norm without Scale and Bias", "layer_norm", dict(begin_norm_axis=1),
                      {"X": rng.standard_normal((4, 6)).astype(dt)}, ["Y", "Mean", "Variance"],
                      lambda t: {"Y": F.layer_norm(t["X"], (6,), eps=f32(1e-5))}, grads=["X"]))
    return cases


def loss_cases(rng, dt):
    cases = []
    for n, k, ignore in ((5, 4, -100), (7, 3, 1), (1, 6, -100)):
        logits = (rng.standard_normal((n, k)) * 3).astype(dt)
        label = rng.integers(0, k, (n, 1)).astype(np.int64)

        def ref(t, ignore=ignore):
            loss = F.cross_entropy(t["Logits"], t["Label"][:, 0], reduction="none", ignore_index=ignore)
            return {"Softmax": F.softmax(t["Logits"], -1), "Loss": loss[:, None]}
        cases.append(Case("softmax_with_cross_entropy hard ignore %d [%d,%d]" % (ignore, n, k),
                          "softmax_with_cross_entropy", dict(ignore_index=ignore), {"Logits": logits, "Label": label},
                          ["Softmax", "Loss"], ref, grads=["Logits"], through=["Loss"]))
    logits = rng.standard_normal((4, 5)).astype(dt)
    soft = rng.uniform(0, 1, (4, 5)).astype(dt)
    soft /= soft.sum(1, keepdims=True)
    cases.append(Case("softmax_with_cross_entropy soft", "softmax_with_cross_entropy", dict(soft_label=True),
                      {"Logits": logits, "Label": soft}, ["Softmax", "Loss"],
                      lambda t: {"Softmax": F.softmax(t["Logits"], -1),
                                 "Loss": -(t["Label"] * F.log_softmax(t["Logits"], -1)).sum(-1, keepdim=True)},
                      grads=["Logits"], through=["Loss"]))
    return cases


def activation_cases(rng, dt):
    x = (rng.standard_normal((3, 7, 5)) * 4).astype(dt)
    x[np.abs(x) < 1e-3] = 0.5  # away from the kinks, where a derivative is a convention
    pos = rng.uniform(0.1, 4, (4, 9)).astype(dt)
    off_kinks = x + dt(0.0123)  # the 0.5s above moved off the shrinks' default kinks at +-0.5
    cases = []
    for op, attrs, fn, v in (
            ("relu6", {}, lambda x: torch.clamp(x, 0, 6), x),
            ("tan", {}, torch.tan, x / dt(4)),
            ("asin", {}, torch.asin, x / dt(20)),
            ("acos", {}, torch.acos, x / dt(20)),
            ("atan", {}, torch.atan, x),
            ("sinh", {}, torch.sinh, x / dt(2)),
            ("cosh", {}, torch.cosh, x / dt(2)),
            ("relu6", dict(threshold=2.5), lambda x: torch.clamp(x, 0, 2.5), x),
            ("leaky_relu", dict(alpha=0.1), lambda x: F.leaky_relu(x, f32(0.1)), x),
            ("erf", {}, torch.erf, x),
            ("gelu", {}, lambda x: F.gelu(x), x),
            ("gelu", dict(approximate=True), lambda x: F.gelu(x, approximate="tanh"), x),
            ("swish", dict(beta=1.5), lambda x: x * torch.sigmoid(1.5 * x), x),
            ("hard_swish", {}, F.hardswish, x),
            ("hard_swish", dict(threshold=5.0, scale=4.0, offset=2.0), lambda x: x * torch.clamp(x + 2, 0, 5) / 4, x),
            ("hard_sigmoid", {}, lambda x: torch.clamp(f32(0.2) * x + 0.5, 0, 1), x),
            ("hard_sigmoid", dict(slope=0.3, offset=0.4), lambda x: torch.clamp(f32(0.3) * x + f32(0.4), 0, 1), x),
            ("exp", {}, torch.exp, x / 4),
            ("log", {}, torch.log, pos),
            ("sqrt", {}, torch.sqrt, pos),
            ("abs", {}, torch.abs, x),
            ("clip", dict(min=-1.5, max=2.0), lambda x: torch.clamp(x, -1.5, 2.0), x),
            ("silu", {}, F.silu, x),
            ("logsigmoid", {}, F.logsigmoid, x),
            ("tanh_shrink", {}, F.tanhshrink, x),
            ("softshrink", {}, lambda x: F.softshrink(x, 0.5), off_kinks),
            ("softshrink", {"lambda": 1.5}, lambda x: F.softshrink(x, 1.5), x),
            ("hard_shrink", {}, lambda x: F.hardshrink(x, 0.5), off_kinks),
            ("hard_shrink", dict(threshold=2.0), lambda x: F.hardshrink(x, 2.0), x),
            ("thresholded_relu", {}, lambda x: F.threshold(x, 1.0, 0.0), x),
            ("thresholded_relu", dict(threshold=-0.75), lambda x: F.threshold(x, -0.75, 0.0), x),
            ("brelu", {}, lambda x: torch.clamp(x, 0, 24), x),
            ("brelu", dict(t_min=-1.0, t_max=2.0), lambda x: torch.clamp(x, -1, 2), x),
            ("soft_relu", {}, lambda x: torch.log1p(torch.exp(torch.clamp(x, -40, 40))), x),
            ("soft_relu", dict(threshold=2.0), lambda x: torch.log1p(torch.exp(torch.clamp(x, -2, 2))), x),
            ("elu", {}, F.elu, x),
            ("elu", dict(alpha=0.5), lambda x: F.elu(x, 0.5), x),
            ("softplus", {}, F.softplus, x),
            ("softplus", dict(beta=2.0, threshold=3.0), lambda x: F.softplus(x, 2.0, 3.0), x),
            ("softsign", {}, F.softsign, x),
            ("mish", {}, F.mish, x),
            # Paddle's softplus inside mish: x above the threshold, exp(x) below its negative.
            ("mish", dict(threshold=2.0), lambda x: x * torch.tanh(
                torch.where(x > 2, x, torch.where(x < -2, torch.exp(x), torch.log1p(torch.exp(x))))), x),
            # F.selu's constants, as the FLOAT attributes hold them.
            ("selu", {}, lambda x: f32(1.0507009873554804934193349852946) * torch.where(
                x > 0, x, f32(1.6732632423543772848170429916717) * torch.expm1(x)), x),
            ("stanh", {}, lambda x: f32(1.7159) * torch.tanh(f32(2 / 3) * x), x),
            ("stanh", dict(scale_a=0.5, scale_b=2.0), lambda x: 2 * torch.tanh(0.5 * x), x),
            ("pow", dict(factor=2.5), lambda x: torch.pow(x, 2.5), pos),
            ("reciprocal", {}, torch.reciprocal, pos),
            ("rsqrt", {}, torch.rsqrt, pos),
            ("expm1", {}, torch.expm1, x / 4),
            ("log1p", {}, torch.log1p, pos - 0.5),
            ("log2", {}, torch.log2, pos),
            ("log10", {}, torch.log10, pos),
            ("sin", {}, torch.sin, x),
            ("cos", {}, torch.cos, x),
            ("floor", {}, torch.floor, x),
            ("ceil", {}, torch.ceil, x),
            ("round", {}, torch.round, off_kinks),  # torch rounds halves to even, Fluid away from 0
            ("sign", {}, torch.sign, x)):
        cases.append(Case("%s %s" % (op, attrs), op, attrs, {"X": v.copy()}, ["Out"],
                          lambda t, fn=fn: {"Out": fn(t["X"])}, grads=["X"]))
    # pow's factor from FactorTensor (one fp32 value), which takes precedence over the attribute.
    cases.append(Case("pow FactorTensor", "pow", dict(factor=7.0), {"X": pos.copy(), "FactorTensor": np.float32([1.5])},
                      ["Out"], lambda t: {"Out": torch.pow(t["X"], 1.5)}, grads=["X"]))
    return cases


def matmul_cases(rng, dt):
    cases = []
    for xs, ys, tx, ty in (((3, 4), (4, 5), False, False), ((4, 3), (4, 5), True, False), ((3, 4), (5, 4), False, True),
                           ((2, 3, 4), (2, 4, 5), False, False), ((2, 4, 3), (2, 5, 4), True, True),
                           ((2, 3, 4), (4, 5), False, False), ((4,), (2, 4, 3), False, False), ((3, 4), (4,), False, False),
                           ((65, 33), (33, 17), False, False), ((3, 1, 2, 4), (1, 2, 4, 3), False, False),
                           ((2, 1, 3, 4), (5, 3, 2), True, False)):
        def ref(t, tx=tx, ty=ty):
            a, b = t["X"], t["Y"]
            a = a.transpose(-1, -2) if tx and a.dim() > 1 else a
            b = b.transpose(-1, -2) if ty and b.dim() > 1 else b
            return {"Out": torch.matmul(a, b)}
        cases.append(Case("matmul_v2 %s %s tx=%s ty=%s" % (xs, ys, tx, ty), "matmul_v2", dict(trans_x=tx, trans_y=ty),
                          {"X": rng.standard_normal(xs).astype(dt), "Y": rng.standard_normal(ys).astype(dt)}, ["Out"],
                          ref, grads=["X", "Y"]))
    ins = {"Input": rng.standard_normal((2, 3, 4)).astype(dt), "W": rng.standard_normal((12, 5)).astype(dt),
           "Bias": rng.standard_normal(5).astype(dt)}
    cases.append(Case("fc relu", "fc", dict(in_num_col_dims=1, activation_type="relu"), ins, ["Out"],
                      lambda t: {"Out": F.relu(t["Input"].reshape(2, 12) @ t["W"] + t["Bias"])}))
    return cases


def embedding_cases(rng, dt):
    cases = []
    for op, ids_shape, pad in (("lookup_table_v2", (3, 4), -1), ("lookup_table_v2", (5,), 2), ("lookup_table", (6, 1), 3)):
        w = rng.standard_normal((7, 5)).astype(dt)
        ids = rng.integers(0, 7, ids_shape).astype(np.int64)
        ids.flat[0] = max(pad, 0)

        def ref(t, op=op, pad=pad):
            ids = t["Ids"][..., 0] if op == "lookup_table" else t["Ids"]
            out = F.embedding(ids, t["W"], padding_idx=pad if pad >= 0 else None)
            return {"Out": out * (ids != pad).unsqueeze(-1) if pad >= 0 else out}
        cases.append(Case("%s ids%s padding_idx %d" % (op, ids_shape, pad), op, dict(padding_idx=pad),
                          {"W": w, "Ids": ids}, ["Out"], ref, grads=["W"]))
    return cases


def shape_cases(rng, dt):
    x = rng.standard_normal((2, 3, 4, 5)).astype(dt)
    cases = []
    for op, attrs, fn in (
            ("transpose2", dict(axis=[2, 0, 3, 1]), lambda x: x.permute(2, 0, 3, 1)),
            ("reshape2", dict(shape=[0, -1, 10]), lambda x: x.reshape(2, -1, 10)),
            ("flatten2", dict(axis=2), lambda x: x.reshape(6, 20)),
            ("flatten_contiguous_range", dict(start_axis=1, stop_axis=2), lambda x: torch.flatten(x, 1, 2)),
            ("unsqueeze2", dict(axes=[0, -1]), lambda x: x.unsqueeze(0).unsqueeze(-1)),
            ("slice", dict(axes=[1, 3], starts=[1, -4], ends=[10, -1]), lambda x: x[:, 1:, :, -4:-1]),
            ("slice", dict(axes=[2], starts=[2], ends=[3], decrease_axis=[2]), lambda x: x[:, :, 2]),
            ("expand", dict(expand_times=[1, 2, 1, 3]), lambda x: x.repeat(1, 2, 1, 3))):
        outs = ["Out", "XShape"] if op.endswith("2") or op == "flatten_contiguous_range" else ["Out"]
        slot = "Input" if op == "slice" else "X"
        cases.append(Case("%s %s" % (op, attrs), op, attrs, {slot: x.copy()}, outs,
                          lambda t, fn=fn, slot=slot: {"Out": fn(t[slot])}, grads=[slot], through=["Out"]))
    y = rng.standard_normal((3, 1, 4, 1)).astype(dt)
    cases.append(Case("squeeze2", "squeeze2", dict(axes=[1, -1]), {"X": y}, ["Out", "XShape"],
                      lambda t: {"Out": t["X"][:, 0, :, 0]}, grads=["X"], through=["Out"]))
    parts = [rng.standard_normal((3, 4)).astype(dt) for _ in range(3)]
    for axis in (0, 1, -1):
        cases.append(Case("stack axis %d" % axis, "stack", dict(axis=axis), {"X": parts}, ["Y"],
                          lambda t, axis=axis: {"Y": torch.stack(t["X"], axis)}, grads=["X"]))
    return cases


def reduce_and_tensor_attr_cases(rng, dt):
    """reduce_min and reduce_prod (with gradients), reduce_all and reduce_any; attributes
    given as tensors (Paddle 2.x's AxisTensor, AxesTensor, ShapeTensorList, Min/Max, ...)."""
    x = rng.uniform(0.5, 2, (3, 4, 5)).astype(dt) * np.where(rng.integers(0, 2, (3, 4, 5)) > 0, 1, -1).astype(dt)
    b = rng.integers(0, 2, (3, 4)).astype(np.bool_)
    y = rng.standard_normal((3, 2, 5)).astype(dt)
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    return [
        Case("reduce_min dim 1", "reduce_min", dict(dim=[1]), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"].amin(1)}, grads=["X"]),
        Case("reduce_prod dims 0, 2 keep", "reduce_prod", dict(dim=[0, 2], keep_dim=True), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"].prod(2, keepdim=True).prod(0, keepdim=True)}, grads=["X"]),
        Case("reduce_all dim 1", "reduce_all", dict(dim=[1]), {"X": b}, ["Out"], lambda t: {"Out": t["X"].all(1)}),
        Case("reduce_any all", "reduce_any", dict(reduce_all=True), {"X": b}, ["Out"],
             lambda t: {"Out": t["X"].any().reshape(1)}),
        Case("concat AxisTensor", "concat", dict(axis=0), {"X": [x, y], "AxisTensor": i32(1)}, ["Out"],
             lambda t: {"Out": torch.cat(t["X"], 1)},
             grads=["X"]),
        Case("unsqueeze2 AxesTensor", "unsqueeze2", {}, {"X": y, "AxesTensor": i32(0, 3)}, ["Out"],
             lambda t: {"Out": t["X"].reshape(1, 3, 2, 1, 5)}, grads=["X"]),
        Case("fill_constant ShapeTensorList ValueTensor", "fill_constant", dict(dtype=5 if dt == np.float32 else 6),
             {"ShapeTensorList": [i32(2), i32(3)], "ValueTensor": np.array([2.5], dt)}, ["Out"],
             lambda t: {"Out": torch.full((2, 3), 2.5, dtype=t["ValueTensor"].dtype)}),
        Case("clip Min Max", "clip", dict(min=-9.0, max=9.0), {"X": x, "Min": np.array([-1], dt), "Max": np.array([1.5], dt)},
             ["Out"], lambda t: {"Out": torch.clamp(t["X"], -1, 1.5)}, grads=["X"]),
        Case("scale ScaleTensor", "scale", dict(scale=9.0, bias=1.0), {"X": x, "ScaleTensor": np.array([-2], dt)},
             ["Out"], lambda t: {"Out": -2 * t["X"] + 1}, grads=["X"]),
    ]


def ranking_cases(rng, dt):
    x = rng.standard_normal((4, 9)).astype(dt)
    x3 = rng.standard_normal((3, 5, 4)).astype(dt)
    label = rng.integers(0, 9, (4, 1)).astype(np.int64)
    idx = np.argsort(-x, axis=1)[:, :3].astype(np.int64)
    idx[0, 0] = label[0, 0]  # at least one hit
    return [
        Case("top_k k=3", "top_k", dict(k=3), {"X": x}, ["Out", "Indices"],
             lambda t: dict(zip(("Out", "Indices"), torch.topk(t["X"], 3))), grads=["X"], through=["Out"]),
        Case("top_k_v2 axis=1 smallest", "top_k_v2", dict(k=2, axis=1, largest=False), {"X": x3}, ["Out", "Indices"],
             lambda t: dict(zip(("Out", "Indices"), torch.topk(t["X"], 2, dim=1, largest=False))), grads=["X"],
             through=["Out"]),
        Case("arg_max axis=1 keepdims", "arg_max", dict(axis=1, keepdims=True), {"X": x3}, ["Out"],
             lambda t: {"Out": torch.argmax(t["X"], 1, keepdim=True)}),
        Case("arg_max axis=-1", "arg_max", dict(axis=-1), {"X": x3}, ["Out"], lambda t: {"Out": torch.argmax(t["X"], -1)}),
        Case("accuracy", "accuracy", {}, {"Out": x[:, :3].copy(), "Indices": idx, "Label": label},
             ["Accuracy", "Correct", "Total"],
             lambda t: {"Accuracy": (t["Indices"] == t["Label"]).any(1).to(torch.float32).mean().reshape(1)}),
    ]


def index_cases(rng, dt):
    """Indexing, choosing, running sums, the losses over logits, and made tensors."""
    x = rng.standard_normal((5, 4, 3)).astype(dt)
    y = rng.standard_normal((5, 4, 3)).astype(dt)
    cond = rng.integers(0, 2, (5, 4, 3)).astype(bool)
    rows = np.int64([3, 0, 3, 4])
    cases = [
        Case("gather axis 0, a repeated index", "gather", {}, {"X": x, "Index": rows}, ["Out"],
             lambda t: {"Out": t["X"].index_select(0, t["Index"])}, grads=["X"]),
        Case("gather axis 1 (attribute), Index [N, 1]", "gather", dict(axis=1),
             {"X": x, "Index": np.int32([[2], [0], [2]])}, ["Out"],
             lambda t: {"Out": t["X"].index_select(1, t["Index"].reshape(-1).long())}, grads=["X"]),
        Case("gather axis 2 (Axis input)", "gather", {}, {"X": x, "Index": np.int64([1, 1, 0]), "Axis": np.int32([2])},
             ["Out"], lambda t: {"Out": t["X"].index_select(2, t["Index"])}, grads=["X"]),
        Case("where", "where", {}, {"Condition": cond, "X": x, "Y": y}, ["Out"],
             lambda t: {"Out": torch.where(t["Condition"], t["X"], t["Y"])}, grads=["X", "Y"]),
        Case("cumsum axis 1", "cumsum", dict(axis=1), {"X": x}, ["Out"], lambda t: {"Out": t["X"].cumsum(1)},
             grads=["X"]),
        Case("cumsum exclusive reverse", "cumsum", dict(exclusive=True, reverse=True), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"].flip(-1).cumsum(-1).flip(-1) - t["X"]}, grads=["X"]),
        Case("cumsum flatten", "cumsum", dict(flatten=True), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"].reshape(-1).cumsum(0)}, grads=["X"]),
        Case("log_softmax", "log_softmax", {}, {"X": x * 3}, ["Out"], lambda t: {"Out": F.log_softmax(t["X"], -1)},
             grads=["X"]),
        Case("log_softmax axis 0", "log_softmax", dict(axis=0), {"X": x}, ["Out"],
             lambda t: {"Out": F.log_softmax(t["X"], 0)}, grads=["X"]),
        Case("arg_min axis 1", "arg_min", dict(axis=1), {"X": x}, ["Out"], lambda t: {"Out": torch.argmin(t["X"], 1)}),
        Case("one_hot [N, 1]", "one_hot", dict(depth=6), {"X": np.int64([[5], [0], [2], [5]])}, ["Out"],
             lambda t: {"Out": F.one_hot(t["X"].reshape(-1), 6).to(torch.float32)}),
        Case("one_hot_v2 [2, 3], out of range allowed, int64", "one_hot_v2",
             dict(depth=4, dtype=3, allow_out_of_range=True), {"X": np.int32([[3, 0, 7], [1, 1, 2]])}, ["Out"],
             lambda t: {"Out": F.one_hot(t["X"].long().clamp(max=4), 5)[..., :4]}),
        Case("shape", "shape", {}, {"Input": x}, ["Out"],
             lambda t: {"Out": torch.tensor(list(t["Input"].shape), dtype=torch.int32)}),
        Case("range", "range", {}, {"Start": np.array([-1.5], dt), "End": np.array([4.3], dt),
                                    "Step": np.array([0.7], dt)}, ["Out"],
             lambda t: {"Out": torch.arange(t["Start"].item(), t["End"].item(), t["Step"].item(), dtype=torch.float64)}),
        Case("range int64 downwards", "range", {}, {"Start": np.int64([3]), "End": np.int64([-8]),
                                                    "Step": np.int64([-2])}, ["Out"],
             lambda t: {"Out": torch.arange(3, -8, -2)}),
        Case("fill_constant_batch_size_like", "fill_constant_batch_size_like",
             dict(shape=[7, -1, 2], value=2.5, input_dim_idx=1, output_dim_idx=1), {"Input": x}, ["Out"],
             lambda t: {"Out": torch.full((7, 4, 2), 2.5, dtype=torch.float32)}),
        Case("assign_value fp32", "assign_value", dict(shape=[2, 3], dtype=5, fp32_values=[0.5, -1, 2, 3.25, 0, 7]),
             {}, ["Out"], lambda t: {"Out": torch.tensor([[0.5, -1, 2], [3.25, 0, 7]], dtype=torch.float32)}),
        Case("assign_value int64", "assign_value", dict(shape=[3], dtype=3, int64_values=[-4, 0, 2 ** 40]),
             {}, ["Out"], lambda t: {"Out": torch.tensor([-4, 0, 2 ** 40])}),
    ]
    # The expand family: tiles and broadcasts, their gradients summing the copies.
    small = rng.standard_normal((3, 1, 2)).astype(dt)
    cases += [
        Case("tile, repeat_times longer than X's rank", "tile", dict(repeat_times=[2, 1, 3, 2]), {"X": small}, ["Out"],
             lambda t: {"Out": torch.tile(t["X"], (2, 1, 3, 2))}, grads=["X"]),
        Case("tile, repeat_times shorter (RepeatTimes input)", "tile", {},
             {"X": small, "RepeatTimes": np.int32([2, 2])}, ["Out"], lambda t: {"Out": torch.tile(t["X"], (2, 2))},
             grads=["X"]),
        Case("expand_v2 with -1 and a new leading dim", "expand_v2", dict(shape=[2, -1, 4, -1]), {"X": small}, ["Out"],
             lambda t: {"Out": t["X"].expand(2, 3, 4, 2)}, grads=["X"]),
        Case("expand_as_v2 (target_shape)", "expand_as_v2", dict(target_shape=[3, 5, 2]), {"X": small}, ["Out"],
             lambda t: {"Out": t["X"].expand(3, 5, 2)}, grads=["X"]),
        Case("expand_as_v2 (Y)", "expand_as_v2", {}, {"X": small[:, :, :1].copy(), "Y": x[:3, :1]}, ["Out"],
             lambda t: {"Out": t["X"].expand(3, 1, 3)}, grads=["X"]),
    ]
    # Padding: every dim (pad), H and W (pad2d), D, H and W (pad3d), in every mode.
    img = rng.standard_normal((2, 3, 4, 5)).astype(dt)
    vol = rng.standard_normal((1, 2, 3, 4, 5)).astype(dt)
    cases.append(Case("pad every dim", "pad", dict(paddings=[1, 0, 0, 2, 2, 1], pad_value=-1.5), {"X": x}, ["Out"],
                      lambda t: {"Out": F.pad(t["X"], (2, 1, 0, 2, 1, 0), value=-1.5)}, grads=["X"]))
    for mode, torch_mode in (("constant", "constant"), ("reflect", "reflect"), ("edge", "replicate")):
        for nhwc in (False, True):
            def ref(t, torch_mode=torch_mode, nhwc=nhwc):
                y = F.pad(nchw(t["X"], nhwc), (3, 0, 1, 2), mode=torch_mode,
                          **({"value": f32(0.5)} if torch_mode == "constant" else {}))
                return {"Out": back(y, nhwc)}
            cases.append(Case("pad2d %s%s" % (mode, " NHWC" if nhwc else ""), "pad2d",
                              dict(paddings=[1, 2, 3, 0], mode=mode, pad_value=0.5,
                                   data_format="NHWC" if nhwc else "NCHW"),
                              {"X": img.transpose(0, 2, 3, 1).copy() if nhwc else img}, ["Out"], ref, grads=["X"]))
    for mode, torch_mode in (("constant", "constant"), ("reflect", "reflect"), ("replicate", "replicate"),
                             ("circular", "circular")):
        cases.append(Case("pad3d %s" % mode, "pad3d", dict(paddings=[1, 3, 2, 0, 1, 2], mode=mode, value=2.0),
                          {"X": vol}, ["Out"],
                          lambda t, m=torch_mode: {"Out": F.pad(t["X"], (1, 3, 2, 0, 1, 2), mode=m,
                                                                **({"value": 2.0} if m == "constant" else {}))},
                          grads=["X"]))
    cases.append(Case("pad2d Paddings input", "pad2d", dict(mode="reflect"),
                      {"X": img, "Paddings": np.int32([0, 3, 1, 1])}, ["Out"],
                      lambda t: {"Out": F.pad(t["X"], (1, 1, 0, 3), mode="reflect")}, grads=["X"]))
    # prelu: one slope, one per channel (NCHW and NHWC), one per element of a sample.
    for mode, alpha_shape, fmt in (("all", (1,), "NCHW"), ("channel", (3,), "NCHW"), ("channel", (5,), "NHWC"),
                                   ("element", (3, 4, 5), "NCHW")):
        def ref(t, mode=mode, fmt=fmt):
            a = t["Alpha"]
            if mode == "channel":
                a = a.reshape(1, 1, 1, -1) if fmt == "NHWC" else a.reshape(1, -1, 1, 1)
            return {"Out": torch.where(t["X"] > 0, t["X"], a * t["X"])}
        cases.append(Case("prelu %s %s" % (mode, fmt), "prelu", dict(mode=mode, data_format=fmt),
                          {"X": img, "Alpha": rng.uniform(0.05, 0.5, alpha_shape).astype(dt)}, ["Out"], ref,
                          grads=["X", "Alpha"]))
    # Resizing: torch's modes where they are Paddle's (bilinear with align_corners or half-pixel
    # centres, nearest rounding down); Fluid's defaults (bilinear at k * in / out, nearest
    # with align_corners rounding to nearest) by index_select and weights in torch.
    def asymmetric(v, out, ratio, nearest_round=False):
        """Per axis: positions read and their weights, as Fluid's align_mode 1 computes them."""
        src = torch.arange(out, dtype=torch.float32 if dt == np.float32 else torch.float64) * ratio
        if nearest_round:
            return (src + 0.5).long().clamp(max=v - 1), None
        lo = src.long().clamp(max=v - 1)
        return lo, (lo + 1).clamp(max=v - 1), (src - lo).to(torch.float64)

    def resize_asymmetric(xt, oh, ow):
        ih, iw = xt.shape[2], xt.shape[3]
        r0, r1, fr = asymmetric(ih, oh, dt(ih) / dt(oh))
        c0, c1, fc = asymmetric(iw, ow, dt(iw) / dt(ow))
        rows = (xt.index_select(2, r0) * (1 - fr).reshape(-1, 1) + xt.index_select(2, r1) * fr.reshape(-1, 1))
        return rows.index_select(3, c0) * (1 - fc) + rows.index_select(3, c1) * fc

    cases += [
        Case("bilinear_interp_v2 align_corners, out_h/out_w", "bilinear_interp_v2",
             dict(out_h=7, out_w=9, interp_method="bilinear", align_corners=True), {"X": img}, ["Out"],
             lambda t: {"Out": F.interpolate(t["X"], size=(7, 9), mode="bilinear", align_corners=True)}, grads=["X"]),
        Case("bilinear_interp_v2 half-pixel, scale", "bilinear_interp_v2",
             dict(scale=[1.5, 2.0], interp_method="bilinear", align_corners=False, align_mode=0), {"X": img}, ["Out"],
             lambda t: {"Out": F.interpolate(t["X"], scale_factor=(1.5, 2.0), mode="bilinear", align_corners=False)},
             grads=["X"]),
        Case("bilinear_interp_v2 half-pixel NHWC, downsizing", "bilinear_interp_v2",
             dict(out_h=3, out_w=2, interp_method="bilinear", align_corners=False, align_mode=0, data_layout="NHWC"),
             {"X": img.transpose(0, 2, 3, 1).copy()}, ["Out"],
             lambda t: {"Out": back(F.interpolate(nchw(t["X"], True), size=(3, 2), mode="bilinear",
                                                  align_corners=False), True)}, grads=["X"]),
        Case("nearest_interp_v2, OutSize", "nearest_interp_v2", dict(interp_method="nearest", align_corners=False),
             {"X": img, "OutSize": np.int32([6, 3])}, ["Out"],
             lambda t: {"Out": F.interpolate(t["X"], size=(6, 3), mode="nearest")}, grads=["X"]),
        Case("bilinear_interp (Fluid's default: align_mode 1)", "bilinear_interp",
             dict(out_h=6, out_w=8, interp_method="bilinear", align_corners=False), {"X": img}, ["Out"],
             lambda t: {"Out": resize_asymmetric(t["X"], 6, 8)}, grads=["X"]),
        Case("nearest_interp align_corners, SizeTensor", "nearest_interp",
             dict(interp_method="nearest", align_corners=True),
             {"X": img, "SizeTensor": [np.int32([7]), np.int32([3])]}, ["Out"],
             lambda t: {"Out": t["X"].index_select(2, asymmetric(4, 7, dt(3) / dt(6), True)[0])
                        .index_select(3, asymmetric(5, 3, dt(4) / dt(2), True)[0])}, grads=["X"]),
    ]
    # group_norm (NCHW and NHWC) and instance_norm, with and without Scale and Bias.
    wide = rng.standard_normal((2, 6, 3, 4)).astype(dt) * 2 + 1
    c_scale, c_bias = rng.standard_normal(6).astype(dt), rng.standard_normal(6).astype(dt)
    cases += [
        Case("group_norm 3 groups", "group_norm", dict(groups=3, epsilon=1e-4),
             {"X": wide, "Scale": c_scale, "Bias": c_bias}, ["Y", "Mean", "Variance"],
             lambda t: {"Y": F.group_norm(t["X"], 3, t["Scale"], t["Bias"], eps=f32(1e-4)),
                        "Mean": t["X"].reshape(2, 3, -1).mean(-1),
                        "Variance": t["X"].reshape(2, 3, -1).var(-1, unbiased=False)},
             grads=["X", "Scale", "Bias"], through=["Y"]),
        Case("group_norm NHWC, no Scale or Bias", "group_norm", dict(groups=2, data_layout="NHWC"),
             {"X": wide.transpose(0, 2, 3, 1).copy()}, ["Y"],
             lambda t: {"Y": back(F.group_norm(nchw(t["X"], True), 2, eps=f32(1e-5)), True)}, grads=["X"]),
        Case("instance_norm", "instance_norm", {}, {"X": wide, "Scale": c_scale, "Bias": c_bias}, ["Y"],
             lambda t: {"Y": F.instance_norm(t["X"], weight=t["Scale"], bias=t["Bias"], eps=f32(1e-5))},
             grads=["X", "Scale", "Bias"]),
        Case("instance_norm with its saved statistics", "instance_norm", {}, {"X": wide},
             ["Y", "SavedMean", "SavedVariance"],
             lambda t: {"Y": F.instance_norm(t["X"], eps=f32(1e-5)), "SavedMean": t["X"].reshape(12, -1).mean(-1),
                        "SavedVariance": 1 / torch.sqrt(t["X"].reshape(12, -1).var(-1, unbiased=False) + f32(1e-5))},
             grads=["X"], through=["Y"]),
    ]
    # Python's % and // (the divisor's sign; rounded down), floats and ints, broadcast.
    a = (rng.standard_normal((3, 4)) * 7).astype(dt)
    b = np.where(rng.integers(0, 2, 4) > 0, 1, -1) * rng.uniform(0.5, 3, 4).astype(dt)
    ia, ib = rng.integers(-20, 20, (3, 4)).astype(np.int64), np.int64([3, -4, 5, -7])
    for name, fn in (("elementwise_mod", torch.remainder),
                     ("elementwise_floordiv", lambda p, q: torch.div(p, q, rounding_mode="floor"))):
        cases.append(Case(name, name, {}, {"X": a, "Y": b.astype(dt)}, ["Out"], lambda t, fn=fn: {"Out": fn(t["X"], t["Y"])}))
        cases.append(Case(name + " int64", name, {}, {"X": ia, "Y": ib}, ["Out"], lambda t, fn=fn: {"Out": fn(t["X"], t["Y"])}))
    # index_select; flip and roll.
    cases += [
        Case("index_select dim 2", "index_select", dict(dim=2), {"X": x, "Index": np.int64([2, 0, 2, 1])}, ["Out"],
             lambda t: {"Out": t["X"].index_select(2, t["Index"])}, grads=["X"]),
        Case("flip axes 0 and -1", "flip", dict(axis=[0, -1]), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"].flip([0, 2])}, grads=["X"]),
        Case("roll two axes", "roll", dict(shifts=[2, -5], axis=[1, 2]), {"X": x}, ["Out"],
             lambda t: {"Out": torch.roll(t["X"], (2, -5), (1, 2))}, grads=["X"]),
        Case("roll flattened, ShiftsTensor", "roll", {}, {"X": x, "ShiftsTensor": np.int64([7])}, ["Out"],
             lambda t: {"Out": torch.roll(t["X"], 7)}, grads=["X"]),
    ]
    # Gradient clipping, label smoothing, finiteness.
    odd = x.copy()
    odd[0, 0, 0], odd[1, 2, 1], odd[3, 1, 2] = np.inf, -np.inf, np.nan
    one_hot = np.eye(4, dtype=dt)[rng.integers(0, 4, 6)]
    prior = np.array([0.1, 0.2, 0.3, 0.4], dt)
    cases += [
        Case("squared_l2_norm", "squared_l2_norm", {}, {"X": x}, ["Out"], lambda t: {"Out": (t["X"] ** 2).sum().reshape(1)},
             grads=["X"]),
        Case("clip_by_norm, clipped", "clip_by_norm", dict(max_norm=1.5), {"X": x}, ["Out"],
             lambda t: {"Out": t["X"] * (f32(1.5) / t["X"].norm())}),
        Case("clip_by_norm, kept", "clip_by_norm", dict(max_norm=1e4), {"X": x}, ["Out"], lambda t: {"Out": t["X"]}),
        Case("label_smooth", "label_smooth", dict(epsilon=0.1), {"X": one_hot}, ["Out"],
             lambda t: {"Out": (1 - f32(0.1)) * t["X"] + f32(0.1) / 4}, grads=["X"]),
        Case("label_smooth PriorDist", "label_smooth", dict(epsilon=0.2), {"X": one_hot, "PriorDist": prior}, ["Out"],
             lambda t: {"Out": (1 - f32(0.2)) * t["X"] + f32(0.2) * t["PriorDist"]}, grads=["X"]),
    ]
    for name, fn in (("isfinite", torch.isfinite), ("isinf", torch.isinf), ("isnan", torch.isnan)):
        whole = (lambda v, fn=fn: fn(v).all()) if name == "isfinite" else (lambda v, fn=fn: fn(v).any())
        cases.append(Case(name, name, {}, {"X": odd}, ["Out"], lambda t, whole=whole: {"Out": whole(t["X"]).reshape(1)}))
        cases.append(Case(name + " of finite values", name, {}, {"X": x}, ["Out"],
                          lambda t, whole=whole: {"Out": whole(t["X"]).reshape(1)}))
        cases.append(Case(name + "_v2", name + "_v2", {}, {"X": odd}, ["Out"], lambda t, fn=fn: {"Out": fn(t["X"])}))
    # Binary cross entropy over logits, with ignored labels and normalized by the others.
    logits = (rng.standard_normal((6, 5)) * 4).astype(dt)
    label = rng.uniform(0, 1, (6, 5)).astype(dt)
    label[rng.uniform(0, 1, (6, 5)) < 0.2] = -100
    for normalize in (False, True):
        def ref(t, normalize=normalize):
            keep = t["Label"] != -100
            loss = torch.where(keep, F.binary_cross_entropy_with_logits(t["X"], t["Label"].clamp(0, 1), reduction="none"),
                               torch.zeros_like(t["X"]))
            return {"Out": loss / keep.sum() if normalize else loss}
        cases.append(Case("sigmoid_cross_entropy_with_logits normalize=%s" % normalize,
                          "sigmoid_cross_entropy_with_logits", dict(normalize=normalize),
                          {"X": logits, "Label": label}, ["Out"], ref, grads=["X"]))
    return cases


def exact(v):
    """An input as PyTorch takes it for the reference: fp32 widened to fp64, so that the
    reference's own rounding (a large reduction's) is not counted against Rill's."""
    return v.astype(np.float64) if v.dtype == np.float32 else v


def rounded(v, dt):
    """A reference result back in the program's dtype."""
    return v.astype(dt) if v.dtype == np.float64 else v


def broadcast_cases(rng, dt):
    """Paddle 2.x's elementwise broadcasting (plugins/math/broadcast.h): numpy's rule with axis
    -1 (X smaller than Y, both operands broadcast, size-1 dims anywhere), Y placed at an
    explicit axis and padded with 1s, forward and both gradients; comparisons too."""
    pairs = [((10, 3, 12), (10, 1, 12), -1), ((3, 4), (2, 3, 4), -1), ((4, 1), (1, 5), -1),
             ((2, 8, 5, 6), (2, 8, 1, 1), -1), ((2, 3, 1, 5), (3, 4, 1), -1), ((5,), (2, 3, 5), -1),
             ((2, 3, 4, 5), (3, 1), 1), ((2, 3, 4, 5), (1, 4), 1), ((1, 1, 20, 5), (20, 5, 20, 5), -1)]
    fns = {"elementwise_add": torch.add, "elementwise_sub": torch.sub, "elementwise_mul": torch.mul,
           "elementwise_div": torch.div, "elementwise_max": torch.maximum, "elementwise_min": torch.minimum,
           "elementwise_pow": torch.pow}
    cases = []
    for k, (xs, ys, axis) in enumerate(pairs):
        name = list(fns)[k % len(fns)]
        x = rng.standard_normal(xs).astype(dt)
        y = rng.standard_normal(ys).astype(dt)
        if name in ("elementwise_div", "elementwise_pow"):
            x, y = np.abs(x) + 0.5, np.abs(y) + 0.5

        def ref(t, fn=fns[name], xs=xs, ys=ys, axis=axis):
            y = t["Y"]
            if axis != -1:  # Y's dims start at `axis` of X's
                y = y.reshape((1,) * axis + ys + (1,) * (len(xs) - axis - len(ys)))
            return {"Out": fn(t["X"], y)}
        cases.append(Case("%s %s and %s axis %d" % (name, xs, ys, axis), name, dict(axis=axis), {"X": x, "Y": y},
                          ["Out"], ref, grads=["X", "Y"]))
    a, b = rng.standard_normal((3, 1)).astype(dt), rng.standard_normal((1, 4)).astype(dt)
    cases.append(Case("less_than [3, 1] and [1, 4]", "less_than", {}, {"X": a, "Y": b}, ["Out"],
                      lambda t: {"Out": t["X"] < t["Y"]}))
    return cases


def check_fluid1_rule_claim(rng):
    """The rule's claim (broadcast.h): every pair Fluid 1.x's rule accepts gets the same Out
    from Paddle 2.x's. Fluid 1.x: X's rank at least Y's; axis -1 is rank(X) - rank(Y) of the
    untrimmed Y; Y's trailing 1s are trimmed; Y's dims must equal X's from axis on; Out is
    X[i, j, k] op Y[j] over X viewed as [pre, n, post]. Paddle 2.x: Y placed at axis, padded
    with 1s, numpy broadcasting. Checked on random pairs in numpy alone."""
    accepted = 0
    for _ in range(3000):
        xs = tuple(int(d) for d in rng.integers(1, 4, rng.integers(1, 5)))
        start = int(rng.integers(0, len(xs) + 1))
        end = int(rng.integers(start, len(xs) + 1))
        ys = xs[start:end] + (1,) * int(rng.integers(0, 3))
        if not ys:
            ys = (1,)
        if rng.integers(0, 4) == 0:  # sometimes a pair 1.x refuses
            ys = tuple(int(d) for d in rng.integers(1, 4, len(ys)))
        axis = -1 if rng.integers(0, 2) else start
        if len(ys) > len(xs):
            continue
        at = len(xs) - len(ys) if axis == -1 else axis
        trimmed = list(ys)
        while len(trimmed) > 1 and trimmed[-1] == 1:
            trimmed.pop()
        if trimmed == [1]:
            trimmed = []
        if at + len(trimmed) > len(xs) or list(xs[at:at + len(trimmed)]) != trimmed:
            continue  # 1.x refuses the pair
        if at + len(ys) > len(xs):
            continue  # Y's trailing 1s reach past X: 2.x's padding has no room (1.x trimmed them)
        accepted += 1
        x = rng.standard_normal(xs)
        y = rng.standard_normal(ys)
        pre = int(np.prod(xs[:at])) if trimmed else int(np.prod(xs))
        n = int(np.prod(trimmed)) if trimmed else 1
        fluid1 = (x.reshape(pre, n, -1) + y.reshape(-1)[:n].reshape(1, n, 1)).reshape(xs)
        padded = y.reshape((1,) * at + ys + (1,) * (len(xs) - at - len(ys)))
        paddle2 = x + padded
        assert paddle2.shape == xs and np.array_equal(fluid1, paddle2), (xs, ys, axis)
    assert accepted > 500, accepted


def parallel_pass_cases(rng, dt):
    """Tensors large enough (over intra_op.h's kParallelBytes) that the memory-bound passes
    run in parts on the intra-op threads; CMake runs this test with RILL_INTRA_OP_THREADS=3,
    so the parts are uneven whatever the machine's cores."""
    cases = []
    shape = (9, 16, 33, 31)
    for nhwc in (False, True):
        s = (9, 31, 33, 16) if nhwc else shape
        ins = {"X": rng.standard_normal(s).astype(dt) + 0.5, "Scale": rng.standard_normal(16).astype(dt),
               "Bias": rng.standard_normal(16).astype(dt), "Mean": np.zeros(16, dt), "Variance": np.ones(16, dt)}

        def ref(t, nhwc=nhwc):
            xt = t["X"].movedim(-1, 1) if nhwc else t["X"]
            y = F.batch_norm(xt, None, None, t["Scale"], t["Bias"], training=True, eps=f32(1e-5))
            return {"Y": y.movedim(1, -1) if nhwc else y}
        cases.append(Case("batch_norm in parts x%s" % (s,), "batch_norm", dict(data_layout="NHWC" if nhwc else "NCHW"),
                          ins, ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"], ref,
                          grads=["X", "Scale", "Bias"]))
    x, y, z = (rng.standard_normal(shape).astype(dt) for _ in range(3))
    cases.append(Case("relu in parts", "relu", {}, {"X": x.copy()}, ["Out"], lambda t: {"Out": F.relu(t["X"])},
                      grads=["X"]))
    cases.append(Case("elementwise_add in parts", "elementwise_add", {}, {"X": x.copy(), "Y": y},
                      ["Out"], lambda t: {"Out": t["X"] + t["Y"]}, grads=["X", "Y"]))
    bias = rng.standard_normal(16).astype(dt)
    cases.append(Case("elementwise_mul of a channel's value in parts", "elementwise_mul", dict(axis=1),
                      {"X": x.copy(), "Y": bias}, ["Out"], lambda t: {"Out": t["X"] * t["Y"].reshape(1, 16, 1, 1)},
                      grads=["X", "Y"]))
    rows, row_bias = rng.standard_normal((512, 300)).astype(dt), rng.standard_normal(300).astype(dt)
    cases.append(Case("elementwise_add of a row's bias in parts", "elementwise_add", dict(axis=1),
                      {"X": rows, "Y": row_bias}, ["Out"], lambda t: {"Out": t["X"] + t["Y"]}, grads=["X", "Y"]))
    cases.append(Case("sum in parts", "sum", {}, {"X": [x.copy(), y.copy(), z]}, ["Out"],
                      lambda t: {"Out": t["X"][0] + t["X"][1] + t["X"][2]}, grads=["X"]))
    return cases


def program(tag, cases):
    """Writes the forward program of every case (each output in case.through multiplied by
    its case.g and summed into "loss"); returns its path, the feeds (name -> array), the
    variables to fetch, the inputs to differentiate, and per case the names of its inputs
    (slot -> list) and outputs (slot -> name)."""
    decl, ops, feeds, fetch, params, losses = "", "", {}, [], [], []
    names = []
    for k, case in enumerate(cases):
        ins = {}
        for slot, value in case.inputs.items():
            values = value if isinstance(value, list) else [value]
            ins[slot] = ["c%d_%s%d" % (k, slot, i) for i in range(len(values))]
            for n, v in zip(ins[slot], values):
                feeds[n] = v
                decl += op_reference.declare(n, v)
        outs = {slot: "c%d_out_%s" % (k, slot) for slot in case.outputs}
        names.append((ins, outs))
        ops += 'ops { type: "%s" %s %s %s }\n' % (
            case.op, " ".join('inputs { parameter: "%s" %s }' % (s, " ".join('arguments: "%s"' % a for a in args))
                              for s, args in ins.items()),
            " ".join('outputs { parameter: "%s" arguments: "%s" }' % (s, a) for s, a in outs.items()),
            op_reference.attrs(**case.attrs))
        fetch += list(outs.values())
        for slot in case.grads:
            params += ins[slot]
            fetch += [n + "@GRAD" for n in ins[slot]]
        for slot in case.through:
            g = "c%d_g_%s" % (k, slot)
            feeds[g] = case.g[slot]
            decl += op_reference.declare(g, case.g[slot])
            ops += ('ops { type: "elementwise_mul" inputs { parameter: "X" arguments: "%s" } inputs { parameter: "Y" '
                    'arguments: "%s" } outputs { parameter: "Out" arguments: "%s_g" } }\n' % (outs[slot], g, outs[slot]))
            ops += ('ops { type: "reduce_sum" inputs { parameter: "X" arguments: "%s_g" } outputs { parameter: "Out" '
                    'arguments: "%s_l" } attrs { name: "reduce_all" type: BOOLEAN b: true } }\n' % (outs[slot], outs[slot]))
            losses.append(outs[slot] + "_l")
    ops += 'ops { type: "sum" inputs { parameter: "X" %s } outputs { parameter: "Out" arguments: "loss" } }\n' % (
        " ".join('arguments: "%s"' % l for l in losses))
    forward = os.path.join(work, tag + ".pbtxt")
    with open(forward, "w") as f:
        f.write("blocks { idx: 0 parent_idx: -1\n" + decl + ops + "}\n")
    return forward, feeds, fetch, params, names


def main():
    rng = np.random.default_rng(int(os.environ.get("RILL_REFERENCE_SEED", "45")))
    check_fluid1_rule_claim(np.random.default_rng(61))
    failed = False
    for dt, tol in ((np.float32, 2e-4), (np.float64, 1e-9)):
        tag = np.dtype(dt).name
        cases = (conv_cases(rng, dt, 12) + conv_transpose_cases(rng, dt, 6) + pool_cases(rng, dt, 12) +
                 norm_cases(rng, dt) + loss_cases(rng, dt) + activation_cases(rng, dt) + matmul_cases(rng, dt) +
                 embedding_cases(rng, dt) + shape_cases(rng, dt) + ranking_cases(rng, dt) + index_cases(rng, dt) +
                 broadcast_cases(rng, dt) + reduce_and_tensor_attr_cases(rng, dt) + parallel_pass_cases(np.random.default_rng(46), dt))
        # Torch first: its outputs give the shapes of the G tensors the loss multiplies by.
        want = []
        for case in cases:
            t = {}
            for slot, value in case.inputs.items():
                values = value if isinstance(value, list) else [value]
                ts = [torch.tensor(exact(v), requires_grad=slot in case.grads) for v in values]
                t[slot] = ts if isinstance(value, list) else ts[0]
            out = case.ref(t)
            if case.through is None:
                case.through = [s for s, v in out.items() if v.is_floating_point()] if case.grads else []
            case.g = {s: rng.standard_normal(tuple(out[s].shape)).astype(dt) for s in case.through}
            grads = {}
            if case.grads:
                loss = sum((out[s] * torch.tensor(exact(case.g[s]))).sum() for s in case.through)
                loss.backward()
                for slot in case.grads:
                    ts = t[slot] if isinstance(t[slot], list) else [t[slot]]
                    grads[slot] = [x.grad.numpy() if x.grad is not None else np.zeros_like(x.detach().numpy())
                                   for x in ts]
            want.append(({s: rounded(v.detach().numpy(), dt) for s, v in out.items()},
                         {slot: [rounded(g, dt) for g in gs] for slot, gs in grads.items()}))
        forward, feeds, fetch, params, names = program(tag, cases)
        trained = os.path.join(work, tag + "_backward.pbtxt")
        r = subprocess.run([rill, "backward", forward, "--loss", "loss", "--parameters", ",".join(params), "-o", trained],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: %s: rill backward: %s" % (tag, r.stderr))
            failed = True
            continue
        try:
            got = op_reference.run_program(rill, work, tag, trained, feeds, fetch)
        except RuntimeError as e:
            print("FAIL: %s: %s" % (tag, e))
            failed = True
            continue
        for case, (ins, outs), (want_out, want_grad) in zip(cases, names, want):
            for slot, value in want_out.items():
                failed |= not op_reference.matches("%s %s %s" % (tag, case.label, slot), got[outs[slot]], value,
                                                   tol if value.dtype.kind == "f" else 0)
            for slot, values in want_grad.items():
                for n, value in zip(ins[slot], values):
                    failed |= not op_reference.matches("%s %s d%s" % (tag, case.label, slot), got[n + "@GRAD"], value,
                                                       tol)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
